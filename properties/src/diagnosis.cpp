#include "sgdc/properties/diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace sgdc::properties {

namespace {

using reference::Case;

// Matching within a relative 10^-3: far above float32 rounding, far below every factor
// the hypotheses predict.
constexpr double tolerance = 1e-3;

double norm(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// ||a - b|| / ||b||, or infinity when b is zero and a is not.
double distance(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  const double nb = norm(b), nd = norm(d);
  if (nb == 0.0) return nd == 0.0 ? 0.0 : INFINITY;
  return nd / nb;
}

std::vector<double> scaled(const std::vector<double>& v, double a) {
  std::vector<double> out(v);
  for (double& x : out) x *= a;
  return out;
}

// Loss and gradients in double, over the rows [begin, end) and the first `cols` input
// columns, normalised by `count` (N*K for the step itself).
struct Step64 {
  double loss = 0.0;
  std::vector<double> grads;  // grad_kernel then grad_bias
};
Step64 step64(const Case& c, int begin, int end, int cols, double count) {
  Step64 s;
  s.grads.assign(static_cast<std::size_t>(c.d + 1) * c.k, 0.0);
  for (int i = begin; i < end; ++i) {
    for (int j = 0; j < c.k; ++j) {
      double r = double(c.bias[j]) - double(c.y[i * c.k + j]);
      for (int l = 0; l < cols; ++l) r += double(c.x[i * c.d + l]) * double(c.kernel[l * c.k + j]);
      s.loss += r * r / count;
      for (int l = 0; l < cols; ++l)
        s.grads[l * c.k + j] += 2.0 * double(c.x[i * c.d + l]) * r / count;
      s.grads[static_cast<std::size_t>(c.d) * c.k + j] += 2.0 * r / count;
    }
  }
  return s;
}

// The gradient with x.reshape(D, N) in place of x^T.
std::vector<double> reshaped_gradient(const Case& c) {
  const double count = double(c.n) * c.k;
  std::vector<double> r(static_cast<std::size_t>(c.n) * c.k);
  for (int i = 0; i < c.n; ++i)
    for (int j = 0; j < c.k; ++j) {
      double v = double(c.bias[j]) - double(c.y[i * c.k + j]);
      for (int l = 0; l < c.d; ++l) v += double(c.x[i * c.d + l]) * double(c.kernel[l * c.k + j]);
      r[i * c.k + j] = v;
    }
  std::vector<double> g(static_cast<std::size_t>(c.d + 1) * c.k, 0.0);
  for (int l = 0; l < c.d; ++l)
    for (int j = 0; j < c.k; ++j)
      for (int i = 0; i < c.n; ++i)
        g[l * c.k + j] += 2.0 * double(c.x[l * c.n + i]) * r[i * c.k + j] / count;
  for (int j = 0; j < c.k; ++j)
    for (int i = 0; i < c.n; ++i)
      g[static_cast<std::size_t>(c.d) * c.k + j] += 2.0 * r[i * c.k + j] / count;
  return g;
}

// The mean of equal-weight means over consecutive parts of the rows, of the given sizes.
Step64 mean_of_means(const Case& c, const std::vector<int>& sizes) {
  Step64 out;
  out.grads.assign(static_cast<std::size_t>(c.d + 1) * c.k, 0.0);
  int begin = 0, parts = 0;
  for (int size : sizes) {
    if (size == 0) continue;
    const Step64 part = step64(c, begin, begin + size, c.d, double(size) * c.k);
    out.loss += part.loss;
    for (std::size_t i = 0; i < out.grads.size(); ++i) out.grads[i] += part.grads[i];
    begin += size;
    ++parts;
  }
  out.loss /= parts;
  for (double& g : out.grads) g /= parts;
  return out;
}

struct Group {
  const char* name;
  std::vector<double> reported, exact;
};

struct Hypothesis {
  std::string description;
  std::function<std::vector<double>()> predict;
};

}  // namespace

// NaN from finite inputs that cannot overflow: a 0/0, which the known bugs make where
// their divisor is 0 on this case.
std::optional<std::string> zero_division(const Case& c, const reference::StepResult& r,
                                         const reference::Expectation& e) {
  bool nan = false;
  for (reference::Output o : reference::all_outputs)
    for (std::size_t i = 0; i < r[o].size() && i < e[o].size(); ++i)
      nan = nan || (std::isnan(r[o][i]) && !e[o][i].may_overflow && !e[o][i].must_be_nonfinite);
  if (!nan) return std::nullopt;
  std::vector<std::string> found;
  if (std::int64_t{c.n} * c.k == 1)
    found.push_back("NaN where the mean divides by N*K - 1, which is 0 here");
  if (c.num_shards > c.n)
    found.push_back(
        fmt::format("NaN where a mean runs over no rows: num_shards={} > N={} leaves "
                    "some shards none, and dropping the N % num_shards remainder "
                    "rows leaves {} in all",
                    c.num_shards, c.n, c.n / c.num_shards * c.num_shards));
  if (found.empty()) return "NaN from finite inputs: a 0/0 or inf - inf on the way";
  std::string out = found[0];
  for (std::size_t i = 1; i < found.size(); ++i) out += "; or " + found[i];
  return out;
}

std::optional<std::string> suspected_bug(const Case& c, const reference::StepResult& r,
                                         const reference::Expectation& e) {
  if (reference::has_nonfinite_input(c)) return std::nullopt;
  if (auto nan = zero_division(c, r, e)) return nan;
  std::vector<std::string> found;
  auto test = [&](const Group& g, const std::vector<Hypothesis>& hypotheses) {
    if (g.reported.empty() || g.reported.size() != g.exact.size()) return;
    for (double v : g.reported)
      if (!std::isfinite(v)) return;
    if (distance(g.reported, g.exact) <= tolerance) return;  // this group is right
    for (const Hypothesis& h : hypotheses) {
      const std::vector<double> predicted = h.predict();
      // A hypothesis this case cannot tell from the correct step says nothing.
      if (distance(predicted, g.exact) <= 10 * tolerance) continue;
      if (distance(g.reported, predicted) <= tolerance)
        found.push_back(fmt::format("{} {}", g.name, h.description));
    }
  };
  auto values = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  auto exact = [](const std::vector<reference::Expected>& v) {
    std::vector<double> out;
    for (const reference::Expected& x : v) out.push_back(x.value);
    return out;
  };

  const int n = c.n, k = c.k, s = c.num_shards;
  const double count = double(n) * k;
  // Scale factors the known bugs multiply a gradient or the loss by.
  std::vector<std::pair<double, std::string>> factors = {
      {0.5, "are half the exact ones: a factor of 2 missing (the derivative of r^2 taken as r)"},
      {2.0, "are twice the exact ones: a factor of 2 too many"},
      {0.0, "are zero"},
      {-1.0, "have the wrong sign"}};
  if (k > 1)
    factors.push_back({double(k), fmt::format("are K={} times the exact ones: divided by N, not "
                                              "N*K (a mean over the batch only)",
                                              k)});
  if (n > 1)
    factors.push_back(
        {double(n), fmt::format("are N={} times the exact ones: divided by K, not N*K", n)});
  if (s > 1) {
    factors.push_back({double(s), fmt::format("are num_shards={} times the exact ones: per-shard "
                                              "means summed, not averaged",
                                              s)});
    factors.push_back(
        {1.0 / s,
         fmt::format("are 1/num_shards={} of the exact ones: averaged once too often", s)});
  }
  if (count > 1)
    factors.push_back({count / (count - 1),
                       "are N*K/(N*K-1) times the exact ones: divided by "
                       "N*K - 1"});

  // Rows or columns left out past a boundary, and equal-weight means of unequal parts.
  std::vector<std::pair<std::string, std::function<Step64()>>> variants;
  for (int m : {8, 16, 32, 64, 128, 256}) {
    if (m < n)
      variants.push_back({fmt::format("match a step that ignores the batch rows past the {}th", m),
                          [&c, m, count] { return step64(c, 0, m, c.d, count); }});
    if (m < c.d)
      variants.push_back(
          {fmt::format("match a step that ignores the input columns past the {}th", m),
           [&c, m, count] { return step64(c, 0, c.n, m, count); }});
    if (m < n && n % m != 0) {
      std::vector<int> chunks(n / m, m);
      chunks.push_back(n % m);
      variants.push_back({fmt::format("match equal-weight means of chunks of {} rows (wrong when "
                                      "the last chunk is short: {} rows here)",
                                      m, n % m),
                          [&c, chunks] { return mean_of_means(c, chunks); }});
    }
  }
  if (s > 1 && n % s != 0) {
    const int kept = n / s * s;
    variants.push_back({fmt::format("match a step over the first {} rows: the N % num_shards = {} "
                                    "remainder rows dropped",
                                    kept, n % s),
                        [&c, kept, count] { return step64(c, 0, kept, c.d, count); }});
    std::vector<int> parts;
    for (int p = 0; p < s; ++p) parts.push_back(n / s + (p < n % s ? 1 : 0));
    variants.push_back(
        {"match the mean of per-shard means (wrong when the shards' rows are "
         "uneven)",
         [&c, parts] { return mean_of_means(c, parts); }});
  }

  // Gradients.
  Group grads{"gradients", {}, {}};
  if (!r.grad_kernel.empty() && !r.grad_bias.empty()) {
    grads.reported = values(r.grad_kernel);
    for (float v : r.grad_bias) grads.reported.push_back(v);
    grads.exact = exact(e.grad_kernel);
    for (double v : exact(e.grad_bias)) grads.exact.push_back(v);
  }
  std::vector<Hypothesis> gradient_hypotheses;
  for (const auto& [a, text] : factors)
    gradient_hypotheses.push_back({text, [&grads, a = a] { return scaled(grads.exact, a); }});
  gradient_hypotheses.push_back(
      {"match x.reshape(D, N) where x^T belongs", [&c] { return reshaped_gradient(c); }});
  for (const auto& [text, step] : variants)
    gradient_hypotheses.push_back({text, [step = step] { return step().grads; }});
  test(grads, gradient_hypotheses);

  // The loss.
  const Group loss{"the loss and its scale", {double(r.loss.at(0))}, {e.loss.at(0).value}};
  std::vector<Hypothesis> loss_hypotheses;
  for (const auto& [a, text] : factors)
    if (a > 0.0 && a != 2.0 && a != 0.5)
      loss_hypotheses.push_back({text, [&loss, a = a] { return scaled(loss.exact, a); }});
  test(loss, loss_hypotheses);

  // The update, as a change of the parameters.
  auto change = [&](const std::vector<float>& after, const std::vector<float>& before) {
    std::vector<double> d;
    for (std::size_t i = 0; i < after.size(); ++i) d.push_back(double(after[i]) - before[i]);
    return d;
  };
  auto exact_change = [&](const std::vector<reference::Expected>& after,
                          const std::vector<float>& before) {
    std::vector<double> d;
    for (std::size_t i = 0; i < after.size(); ++i) d.push_back(after[i].value - before[i]);
    return d;
  };
  for (auto [name, after, expected, before] :
       {std::tuple{"the kernel's update", &r.kernel, &e.kernel, &c.kernel},
        std::tuple{"the bias's update", &r.bias, &e.bias, &c.bias}}) {
    const Group update{name, change(*after, *before), exact_change(*expected, *before)};
    const std::vector<Hypothesis> update_hypotheses = {
        {"is missing: the parameters are unchanged",
         [&update] { return scaled(update.exact, 0.0); }},
        {"has the wrong sign: p + lr*g", [&update] { return scaled(update.exact, -1.0); }},
        {"is lr times too small: lr applied twice (p - lr*lr*g)",
         [&update, lr = c.lr] { return scaled(update.exact, lr); }},
    };
    // The gradient's own bug already explains a scaled update.
    if (found.empty()) test(update, update_hypotheses);
  }
  if (found.empty()) return std::nullopt;
  std::string out = found[0];
  for (std::size_t i = 1; i < found.size(); ++i) out += "; or " + found[i];
  return out;
}

}  // namespace sgdc::properties
