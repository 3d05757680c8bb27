#include "sgdc/properties/diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sgdc/reference/check.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/oracle.hpp"

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

// The clip factor min(1, M / (norm + eps)) of gradients `g` (kernel then bias), in double.
double clip_factor(const reference::Clipping& clip, const std::vector<double>& g) {
  return std::min(1.0, double(clip.max_norm) / (norm(g) + double(clip.eps)));
}

// Gradients `g` (kernel [d][k] then bias [k]) as clipping with the case's max_norm and eps
// scales them: all together (the step's), each tensor by its own norm, or each shard's
// part (a chunk of output columns, as torch.chunk splits the weight's rows) by its own.
enum class ClipScope { global, per_parameter, per_shard };
std::vector<double> clipped(const Case& c, const std::vector<double>& g, ClipScope scope) {
  const reference::Clipping& clip = *c.clip;
  if (scope == ClipScope::global) return scaled(g, clip_factor(clip, g));
  std::vector<double> out(g);
  const std::size_t kernel = static_cast<std::size_t>(c.d) * c.k;
  auto scale_where = [&](auto in_part) {
    std::vector<double> part;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (in_part(i)) part.push_back(g[i]);
    const double f = clip_factor(clip, part);
    for (std::size_t i = 0; i < g.size(); ++i)
      if (in_part(i)) out[i] = g[i] * f;
  };
  if (scope == ClipScope::per_parameter) {
    scale_where([&](std::size_t i) { return i < kernel; });
    scale_where([&](std::size_t i) { return i >= kernel; });
    return out;
  }
  const int chunk = (c.k + c.num_shards - 1) / c.num_shards;
  for (int first = 0; first < c.k; first += chunk)
    scale_where([&](std::size_t i) {
      const int column = static_cast<int>(i < kernel ? i % c.k : i - kernel);
      return column >= first && column < first + chunk;
    });
  return out;
}

// `e` with the gradients the optimizer reads, the clipped ones, in place of the loss's.
reference::Expectation stepped_gradients(const Case& c, const reference::Expectation& e) {
  if (!c.clip) return e;
  std::vector<double> g;
  for (const auto* v : {&e.grad_kernel, &e.grad_bias})
    for (const reference::Expected& x : *v) g.push_back(x.value);
  const double f = clip_factor(*c.clip, g);
  reference::Expectation out = e;
  for (auto* v : {&out.grad_kernel, &out.grad_bias})
    for (reference::Expected& x : *v) x.value *= f;
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

// How a step's optimizer may differ from the case's: the known optimizer bugs.
struct Variation {
  bool swap_decay = false;            // the other weight-decay convention
  bool fresh = false;                 // the state given ignored: a fresh buffer or moments
  bool dampen_fresh = false;          // a fresh buffer dampened: (1 - dampening) g
  bool nesterov_old = false;          // Nesterov's direction from the buffer before the step
  bool adam_t_off_by_one = false;     // Adam's bias correction with t = step
  bool adam_eps_inside = false;       // sqrt(vh + eps), eps inside the square root
  bool adam_decay_in_moment = false;  // the first moment reads g + wd p, decoupled decay too
  bool adagrad_zero_initial = false;  // a fresh Adagrad sum started at 0, not its initial value
  bool adagrad_eps_swapped = false;   // Adagrad's eps on the other side of the square root
};

// The change p' - p of every parameter (kernel then bias) that the case's optimizer,
// varied as `var` says, makes from the gradients `g` (kernel then bias), in double
// (docs/spec/step.md, Optimizers and Adam).
std::vector<double> optimizer_change(const Case& c, const std::vector<double>& g,
                                     const Variation& var = {}) {
  const bool decoupled =
      (c.optimizer.decay == reference::Optimizer::Decay::decoupled) != var.swap_decay;
  const bool fresh = c.fresh_state() || var.fresh;
  const reference::Optimizer& o = c.optimizer;
  std::vector<double> p(c.kernel.begin(), c.kernel.end());
  p.insert(p.end(), c.bias.begin(), c.bias.end());
  auto state = [&](const std::vector<float>& kernel, const std::vector<float>& bias) {
    std::vector<double> s(kernel.begin(), kernel.end());
    s.insert(s.end(), bias.begin(), bias.end());
    if (s.empty()) s.assign(p.size(), 0.0);
    return s;
  };
  std::vector<double> m = state(c.momentum_kernel, c.momentum_bias);
  std::vector<double> v = state(c.second_moment_kernel, c.second_moment_bias);
  if (var.fresh) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
  const double mu = o.momentum;
  // The bias's own lr and weight decay where it has a group.
  const reference::Case bias_case = reference::bias_group_case(c);
  const std::size_t kernel_size = c.kernel.size();
  const double keep = 1.0 - double(reference::applied_dampening(o));
  const double t = double(c.step) + (var.adam_t_off_by_one ? 0.0 : 1.0);
  const double eps_root = var.adam_eps_inside ? double(o.eps) : double(o.eps_root);
  const double eps = var.adam_eps_inside ? 0.0 : double(o.eps);
  std::vector<double> out(p.size(), 0.0);
  for (std::size_t i = 0; i < p.size() && i < g.size(); ++i) {
    const reference::Case& group = i < kernel_size ? c : bias_case;
    const double lr = group.lr, wd = group.optimizer.weight_decay;
    const double ge = decoupled ? g[i] : g[i] + wd * p[i];
    double d = ge;
    if (o.kind == reference::Optimizer::Kind::momentum) {
      double b = fresh ? ge : mu * m[i] + keep * ge;
      if (fresh && var.dampen_fresh) b = (1.0 - double(o.dampening)) * ge;
      d = o.nesterov ? ge + mu * (var.nesterov_old ? (fresh ? 0.0 : m[i]) : b) : b;
    } else if (o.kind == reference::Optimizer::Kind::adam) {
      const double gm = var.adam_decay_in_moment && decoupled ? ge + wd * p[i] : ge;
      const double m1 = double(o.b1) * m[i] + (1.0 - double(o.b1)) * gm;
      const double v1 = double(o.b2) * v[i] + (1.0 - double(o.b2)) * ge * ge;
      const double mh = m1 / (1.0 - std::pow(double(o.b1), t));
      const double vh = v1 / (1.0 - std::pow(double(o.b2), t));
      d = mh / (std::sqrt(vh + eps_root) + eps);
    } else if (o.kind == reference::Optimizer::Kind::adagrad) {
      // The sum of squares: the case's, or a fresh one's initial value (Adagrad's state is
      // the second moment).
      const double initial = var.adagrad_zero_initial ? 0.0 : double(o.initial_accumulator_value);
      const double sum = (fresh ? initial : v[i]) + ge * ge;
      const double inner = var.adagrad_eps_swapped ? double(o.eps) : double(o.eps_root);
      const double outer = var.adagrad_eps_swapped ? double(o.eps_root) : double(o.eps);
      d = sum > 0.0 ? ge / (std::sqrt(sum + inner) + outer) : 0.0;
    }
    if (decoupled) d += wd * p[i];
    out[i] = -lr * d;
  }
  return out;
}

// The c for which `reported` is c * `exact`, every element alike (within the tolerance),
// or nothing.
std::optional<double> common_scale(const std::vector<double>& reported,
                                   const std::vector<double>& exact) {
  if (reported.size() != exact.size() || reported.empty()) return std::nullopt;
  double dot = 0.0, ee = 0.0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    dot += reported[i] * exact[i];
    ee += exact[i] * exact[i];
  }
  if (ee == 0.0 || !std::isfinite(dot) || !std::isfinite(ee)) return std::nullopt;
  const double scale = dot / ee;
  if (distance(reported, scaled(exact, scale)) > tolerance) return std::nullopt;
  return scale;
}

std::vector<double> concat(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Whether float32 `v` is a value of the narrower format `f` (exactly, in its range).
bool representable(float v, const reference::Format& f) {
  if (v == 0.0f) return true;
  if (!std::isfinite(v) || std::abs(double(v)) > f.max_finite()) return false;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const double quantum = std::ldexp(1.0, std::max(e - 1, f.min_exponent) - f.fraction_bits);
  return std::fmod(double(v), quantum) == 0.0;
}

// The narrower format every reported gradient is a value of, each within one of its
// units in the last place of the exact value, where at least half of the correctly
// rounded ones are not values of it (kept or reduced in that precision), or nothing.
std::optional<const char*> narrow_gradients(const reference::StepResult& r,
                                            const reference::Expectation& e) {
  const std::pair<const char*, reference::Format> formats[] = {
      {"bfloat16", reference::formats::bfloat16}, {"float16", reference::formats::float16}};
  for (const auto& [name, f] : formats) {
    std::size_t all = 0, exact_outside = 0;
    bool every = true;
    for (auto [reported, expected] :
         {std::pair{&r.grad_kernel, &e.grad_kernel}, std::pair{&r.grad_bias, &e.grad_bias}}) {
      for (std::size_t i = 0; i < reported->size() && i < expected->size(); ++i) {
        ++all;
        const double want = (*expected)[i].value, got = (*reported)[i];
        // One unit in the last place of the format, its subnormal quantum included.
        const double unit = std::max(std::ldexp(std::abs(want), -f.fraction_bits),
                                     std::ldexp(1.0, f.min_exponent - f.fraction_bits));
        every = every && representable((*reported)[i], f) && std::abs(got - want) <= unit;
        if (!representable((*expected)[i].rounded, f)) ++exact_outside;
      }
    }
    if (all > 0 && every && 2 * exact_outside >= all && exact_outside > 0) return name;
  }
  return std::nullopt;
}

// a + b elementwise; b alone where a is empty.
std::vector<double> plus(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty()) return b;
  std::vector<double> out(b);
  for (std::size_t i = 0; i < out.size() && i < a.size(); ++i) out[i] += a[i];
  return out;
}

struct Group {
  const char* name;
  std::vector<double> reported, exact;
  // Some element of the group lies outside the derived bound: only then is the group
  // wrong. (A correct parameter whose update is a few of its ULPs differs from the exact
  // change by far more than the relative tolerance, and any scale would fit that noise.)
  bool out_of_bound = true;
  // The reported values and their expectations, where a prediction within a relative
  // 10^-2 of the exact values may still be told from them element by element (fits).
  std::vector<float> got = {};
  std::vector<reference::Expected> want = {};
  // What `got` adds to the group's values (the parameters before an update), or nothing.
  std::vector<double> base = {};
};

// Whether some value of `got` lies outside its element's derived bound.
bool out_of_bound(const std::vector<float>& got, const std::vector<reference::Expected>& want) {
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (!reference::check_element(got[i], want[i]).ok) return true;
  return false;
}

struct Hypothesis {
  std::string description;
  std::function<std::vector<double>()> predict;
  // Whether an element-by-element fit (fits) counts; not for a prediction fitted to the
  // reported values themselves (a common scale), which fits them by construction.
  bool element_wise = true;
};

// Whether `got` is `predicted`, element by element, within twice each element's bound (as
// a float32 step of the predicted formula would round it), where `predicted` lies outside
// the bound of the exact value at some element that `got` gets wrong: a prediction the
// correct step's own rounding cannot explain.
bool fits(const std::vector<float>& got, const std::vector<double>& predicted,
          const std::vector<reference::Expected>& want) {
  if (got.empty() || got.size() != predicted.size() || got.size() != want.size()) return false;
  bool apart = false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(predicted[i])) return false;
    const double slack = 2.0 * want[i].bound + 0x1p-20 * std::abs(predicted[i]);
    if (std::abs(double(got[i]) - predicted[i]) > slack) return false;
    apart = apart || (!reference::check_element(got[i], want[i]).ok &&
                      std::abs(predicted[i] - want[i].value) > want[i].bound);
  }
  return apart;
}

// The narrower format every value of `got` is a value of, each within one of its units in
// the last place of the exact value, where at least half of the correctly rounded ones are
// not values of it, and some value lies outside its bound; or nothing.
std::optional<const char*> narrow_values(const std::vector<float>& got,
                                         const std::vector<reference::Expected>& want) {
  const std::pair<const char*, reference::Format> formats[] = {
      {"bfloat16", reference::formats::bfloat16}, {"float16", reference::formats::float16}};
  if (got.empty() || got.size() != want.size()) return std::nullopt;
  for (const auto& [name, f] : formats) {
    std::size_t exact_outside = 0;
    bool every = true, wrong = false;
    for (std::size_t i = 0; i < got.size() && every; ++i) {
      const double unit = std::max(std::ldexp(std::abs(want[i].value), -f.fraction_bits),
                                   std::ldexp(1.0, f.min_exponent - f.fraction_bits));
      every = representable(got[i], f) && std::abs(double(got[i]) - want[i].value) <= unit;
      wrong = wrong || !reference::check_element(got[i], want[i]).ok;
      if (!representable(want[i].rounded, f)) ++exact_outside;
    }
    if (every && wrong && exact_outside > 0 && 2 * exact_outside >= got.size()) return name;
  }
  return std::nullopt;
}

template <class T>
std::vector<T> joined(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// What the returned optimizer state (the momentum buffer, Adam's moments) points to, from
// the case's state and the exact gradients: a state not advanced, kept in a narrower
// format, built by a known wrong formula, or one buffer read for two parameters.
std::vector<std::string> state_suspects(const Case& c, const reference::StepResult& r,
                                        const reference::Expectation& e) {
  using Kind = reference::Optimizer::Kind;
  const reference::Optimizer& o = c.optimizer;
  if (o.kind == Kind::sgd) return {};
  std::vector<std::string> found;
  const bool fresh = c.fresh_state();
  const bool decoupled = o.decay == reference::Optimizer::Decay::decoupled;
  std::vector<double> g, p;
  for (const auto* v : {&e.grad_kernel, &e.grad_bias})
    for (const reference::Expected& x : *v) g.push_back(x.value);
  for (const auto* v : {&c.kernel, &c.bias}) p.insert(p.end(), v->begin(), v->end());
  auto input = [&](const std::vector<float>& kernel, const std::vector<float>& bias) {
    std::vector<double> s(kernel.begin(), kernel.end());
    s.insert(s.end(), bias.begin(), bias.end());
    if (fresh) s.assign(p.size(), 0.0);
    return s;
  };
  const std::vector<double> m = input(c.momentum_kernel, c.momentum_bias);
  const double wd = o.weight_decay;
  std::vector<double> ge(g);  // the gradient the state reads: with coupled decay, g + wd p
  for (std::size_t i = 0; i < ge.size() && i < p.size(); ++i)
    if (!decoupled) ge[i] += wd * p[i];

  if (o.kind == Kind::momentum) {
    const double mu = o.momentum, keep = 1.0 - double(reference::applied_dampening(o));
    const std::vector<float> b_got = joined(r.momentum_kernel, r.momentum_bias);
    const std::vector<reference::Expected> b_want = joined(e.momentum_kernel, e.momentum_bias);
    // The buffer as the other weight-decay convention, or a dampened first step, makes it.
    auto buffer = [&](bool swap_decay, bool dampen_fresh) {
      std::vector<double> b;
      for (std::size_t i = 0; i < g.size() && i < p.size(); ++i) {
        const bool coupled = decoupled == swap_decay;
        const double gi = coupled ? g[i] + wd * p[i] : g[i];
        b.push_back(fresh ? (dampen_fresh ? (1.0 - double(o.dampening)) * gi : gi)
                          : mu * m[i] + keep * gi);
      }
      return b;
    };
    if (wd != 0.0 && fits(b_got, buffer(true, false), b_want))
      found.push_back(
          fmt::format("the momentum buffer matches the other weight-decay convention: {} where "
                      "the case's {} belongs",
                      decoupled ? "coupled" : "decoupled", decoupled ? "decoupled" : "coupled"));
    if (fresh && o.dampening != 0.0f && fits(b_got, buffer(false, true), b_want))
      found.push_back(
          "the momentum buffer matches a dampened first buffer, (1 - dampening) g, where the "
          "first step keeps g");
    // A carried buffer ignored: the buffer after the step is the first step's, the
    // (decayed) gradient alone, where mu buf + (1 - dampening) g belongs. Only where the
    // case's buffer moves the result (mu and the buffer not zero), else both are one; and
    // only where the kernel's is wrong too (a bias buffer alone is told below, where a
    // buffer shared with the kernel's explains it as well).
    if (!fresh && mu != 0.0 && out_of_bound(r.momentum_kernel, e.momentum_kernel) &&
        fits(b_got, ge, b_want))
      found.push_back(
          "the momentum buffer matches one started afresh, the given buffer ignored (the "
          "state started afresh: not threaded back from the last step)");
    if (!found.empty()) return found;
    // The bias's buffer continued from the kernel's first K elements, not its own.
    if (fresh || c.momentum_kernel.size() < static_cast<std::size_t>(c.k)) return found;
    const std::size_t first_bias = c.kernel.size();
    std::vector<double> predicted, afresh;
    for (int j = 0; j < c.k; ++j) {
      predicted.push_back(mu * c.momentum_kernel[j] + keep * ge[first_bias + j]);
      afresh.push_back(ge[first_bias + j]);
    }
    // The kernel's own buffer right; where the kernel's buffer is near zero, a bias buffer
    // started afresh is as likely, and both are named.
    bool kernel_right = true;
    for (std::size_t i = 0; i < r.momentum_kernel.size() && i < e.momentum_kernel.size(); ++i)
      kernel_right =
          kernel_right && reference::check_element(r.momentum_kernel[i], e.momentum_kernel[i]).ok;
    if (!kernel_right || !fits(r.momentum_bias, predicted, e.momentum_bias)) return found;
    if (fits(r.momentum_bias, afresh, e.momentum_bias))
      found.push_back(
          "the bias's momentum buffer matches one started afresh, its own ignored (the state "
          "started afresh: not threaded back from the last step)");
    found.push_back(
        "the bias's momentum buffer matches mu * (the kernel's buffer, its first K "
        "elements) + g, not its own buffer continued: one buffer shared between kernel and "
        "bias (give each parameter its own state)");
    return found;
  }

  if (o.kind == Kind::adagrad) {
    // The sum of squares, kept as the second moment: s' = s + g^2 from the case's sum, or
    // from initial_accumulator_value where the state is fresh.
    const std::vector<float> s_got = joined(r.second_moment_kernel, r.second_moment_bias);
    const std::vector<reference::Expected> s_want =
        joined(e.second_moment_kernel, e.second_moment_bias);
    if (s_got.size() != p.size() || s_want.size() != p.size() || !out_of_bound(s_got, s_want))
      return found;
    const double initial = o.initial_accumulator_value;
    auto started_at = [&](double s0) {
      std::vector<double> s;
      for (std::size_t i = 0; i < p.size(); ++i) s.push_back(s0 + ge[i] * ge[i]);
      return s;
    };
    if (fresh && initial != 0.0 && fits(s_got, started_at(0.0), s_want))
      found.push_back(fmt::format(
          "Adagrad's sum of squares matches a fresh sum started at 0, not at "
          "initial_accumulator_value={:.9g}: the declared initial value ignored (torch's "
          "default of 0 where another is declared)",
          initial));
    if (!fresh && fits(s_got, started_at(initial), s_want))
      found.push_back(
          "Adagrad's sum of squares matches one started afresh from initial_accumulator_value, "
          "the given sum ignored (the state started afresh: not threaded back from the last "
          "step)");
    return found;
  }

  // Adam.
  const std::vector<float> m_got = joined(r.momentum_kernel, r.momentum_bias),
                           v_got = joined(r.second_moment_kernel, r.second_moment_bias);
  const std::vector<reference::Expected> m_want = joined(e.momentum_kernel, e.momentum_bias),
                                         v_want =
                                             joined(e.second_moment_kernel, e.second_moment_bias);
  if (m_got.size() != p.size() || v_got.size() != p.size() || m_want.size() != p.size() ||
      v_want.size() != p.size())
    return found;
  const std::vector<double> v = input(c.second_moment_kernel, c.second_moment_bias);
  auto right = [](const std::vector<float>& got, const std::vector<reference::Expected>& want) {
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!reference::check_element(got[i], want[i]).ok) return false;
    return true;
  };
  const bool m_right = right(m_got, m_want), v_right = right(v_got, v_want);
  if (m_right && v_right) return found;
  // Returned as they came in: a moment that does not fit is one the case cannot tell.
  if ((m_right || fits(m_got, m, m_want)) && (v_right || fits(v_got, v, v_want)))
    found.push_back(
        "Adam's moments are returned as they came in (zero for a fresh state): the step's "
        "new moments not written back (state not threaded back?)");
  {
    const auto m_narrow = narrow_values(m_got, m_want), v_narrow = narrow_values(v_got, v_want);
    const char* format = m_narrow ? *m_narrow : v_narrow ? *v_narrow : nullptr;
    if (format && (m_right || m_narrow) && (v_right || v_narrow))
      found.push_back(fmt::format(
          "Adam's moments are all {0} values where the exact ones round to float32 values "
          "outside {0}: moments kept in {0} (a low-precision optimizer state): keep them in "
          "float32",
          format));
  }
  const double b1 = o.b1, b2 = o.b2;
  if (m_right) {
    std::vector<double> linear;
    for (std::size_t i = 0; i < p.size(); ++i) linear.push_back(b2 * v[i] + (1.0 - b2) * ge[i]);
    if (fits(v_got, linear, v_want))
      found.push_back(
          "the second moment matches b2 v + (1 - b2) g, not b2 v + (1 - b2) g^2: b2's average "
          "taken of the gradient, not of its square");
  }
  // Each element's weight decay: the bias's from its group where it has one.
  const double bias_wd = reference::bias_group_case(c).optimizer.weight_decay;
  const std::size_t kernel_size = c.kernel.size();
  auto wd_at = [&](std::size_t i) { return i < kernel_size ? wd : bias_wd; };
  if (wd == 0.0 && bias_wd == 0.0) return found;
  // Both moments from the gradient with its element's wd p where `decayed` says, from g alone
  // elsewhere; each moment right or fitting them.
  auto moments = [&](auto decayed) {
    std::vector<double> m1, v1;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double gi = decayed(i) ? g[i] + wd_at(i) * p[i] : g[i];
      m1.push_back(b1 * m[i] + (1.0 - b1) * gi);
      v1.push_back(b2 * v[i] + (1.0 - b2) * gi * gi);
    }
    return std::pair{m1, v1};
  };
  auto fit = [&](const std::pair<std::vector<double>, std::vector<double>>& mv) {
    return (m_right || fits(m_got, mv.first, m_want)) &&
           (v_right || fits(v_got, mv.second, v_want));
  };
  // The other convention: every moment from g + wd p where the case decays decoupled
  // (torch.optim.Adam's weight_decay where AdamW's belongs), from g alone where it decays
  // coupled.
  const auto other_moments = moments([&](std::size_t) { return decoupled; });
  bool other = fit(other_moments);
  // Where two of these fit the moments, the parameters tell them apart by how they decay
  // (decoupled or not at all); where they cannot, both are named.
  const std::vector<float> p_got = joined(r.kernel, r.bias);
  const std::vector<reference::Expected> p_want = joined(e.kernel, e.bias);
  auto moves = [&](const Case& stepped, const Variation& var) {
    return fits(p_got, plus(p, optimizer_change(stepped, g, var)), p_want);
  };
  auto tell_apart = [&](bool& a, const Case& a_case, const Variation& a_var, bool& b,
                        const Case& b_case, const Variation& b_var) {
    if (!a || !b) return;
    const bool as_a = moves(a_case, a_var), as_b = moves(b_case, b_var);
    if (as_a != as_b) (as_a ? b : a) = false;
  };
  // The bias without its coupled decay, the kernel with it (a parameter group the case does
  // not declare): the same moments where the kernel's decay does not show.
  bool group =
      !decoupled && bias_wd != 0.0 && fit(moments([&](std::size_t i) { return i < kernel_size; }));
  Case no_bias_decay = c;
  no_bias_decay.bias_group = no_bias_decay.bias_group.value_or(reference::ParamGroup{});
  no_bias_decay.bias_group->weight_decay = 0.0f;
  tell_apart(group, no_bias_decay, {}, other, c, {.swap_decay = true});
  // The first moment alone from g + wd p (v right) is also the decay inside the moment as
  // well as the declared decoupled decay, whose parameters decay decoupled too.
  bool in_moment = decoupled && v_right && fits(m_got, other_moments.first, m_want);
  tell_apart(in_moment, c, {.adam_decay_in_moment = true}, other, c, {.swap_decay = true});
  if (in_moment)
    found.push_back(fmt::format(
        "the first moment matches b1 m + (1 - b1)(g + wd p) (wd={:.9g}): weight decay inside "
        "Adam's moment (coupled, as torch.optim.Adam's weight_decay) as well as the declared "
        "decoupled decay (AdamW's alone belongs)",
        wd));
  if (group)
    found.push_back(
        "Adam's moments match the bias stepped without weight decay, the kernel with it (a "
        "parameter group with weight_decay=0 for biases, or optax's mask): declare the bias's "
        "group (recipe bias_group.weight_decay 0) if the step runs one");
  if (other)
    found.push_back(
        decoupled
            ? fmt::format("Adam's moments match the gradient with coupled decay, g + wd p "
                          "(wd={:.9g}): Adam with coupled weight decay (torch.optim.Adam) where "
                          "the case's AdamW (decoupled decay) belongs",
                          wd)
            : fmt::format("Adam's moments match the gradient without its coupled decay wd p "
                          "(wd={:.9g}): AdamW (decoupled weight decay) where the case's Adam "
                          "with coupled decay (torch.optim.Adam) belongs",
                          wd));
  return found;
}

// The kernel's gradient when every product reads its inputs rounded to `f` (x and W in
// the residual, x and the residual in x^T r), in double otherwise.
std::vector<double> reduced_products_gradient(const Case& c, const reference::Format& f) {
  const double count = double(c.n) * c.k;
  std::vector<double> g(static_cast<std::size_t>(c.d) * c.k, 0.0);
  for (int i = 0; i < c.n; ++i)
    for (int j = 0; j < c.k; ++j) {
      double r = double(c.bias[j]) - double(c.y[i * c.k + j]);
      for (int l = 0; l < c.d; ++l)
        r += reference::round_to_format(c.x[i * c.d + l], f) *
             reference::round_to_format(c.kernel[l * c.k + j], f);
      const double rf = reference::round_to_format(double(static_cast<float>(r)), f);
      for (int l = 0; l < c.d; ++l)
        g[l * c.k + j] += 2.0 * reference::round_to_format(c.x[i * c.d + l], f) * rf / count;
    }
  return g;
}

// Every output within the bound of a step whose matrix products read their inputs in a
// narrower format (TF32, then bfloat16), where the loss or a gradient is outside float32's:
// that format's name, or nothing.
std::vector<const char*> matmul_formats(const Case& c, const reference::StepResult& r,
                                        const reference::Expectation& e) {
  // The products feed the loss and the kernel's gradient (the bias's is a sum).
  bool mean_wrong = false;
  for (reference::Output o : {reference::Output::loss, reference::Output::grad_kernel})
    for (std::size_t i = 0; i < r[o].size() && i < e[o].size(); ++i)
      mean_wrong = mean_wrong || !reference::check_element(r[o][i], e[o][i]).ok;
  if (!mean_wrong) return {};
  const std::pair<const char*, reference::Format> formats[] = {
      {"tf32", reference::formats::tf32}, {"bfloat16", reference::formats::bfloat16}};
  // A format's bound holds a narrower one's errors where they are small: of the formats
  // whose bound holds every output, those whose products predict the kernel's gradient
  // best, and no worse than the exact values do.
  const std::vector<double> got(r.grad_kernel.begin(), r.grad_kernel.end());
  std::vector<double> exact;
  for (const reference::Expected& x : e.grad_kernel) exact.push_back(x.value);
  std::vector<const char*> best;
  double nearest = distance(got, exact);
  for (const auto& [name, f] : formats) {
    const reference::Expectation wide = reference::expect(c, {.u = f.unit_roundoff(), .format = f});
    bool within = true;
    for (reference::Output o : reference::all_outputs)
      for (std::size_t i = 0; i < r[o].size() && i < wide[o].size() && within; ++i)
        within = reference::check_element(r[o][i], wide[o][i]).ok;
    if (!within) continue;
    const double d = distance(got, reduced_products_gradient(c, f));
    if (d < nearest) best.clear(), nearest = d;
    if (d == nearest) best.push_back(name);
  }
  return best;
}

}  // namespace

// NaN from finite inputs that cannot overflow: a 0/0, which the known bugs make where
// their divisor is 0 on this case.
std::vector<std::string> zero_division(const Case& c, const reference::StepResult& r,
                                       const reference::Expectation& e) {
  // Where the NaN is: in the mean's results (the loss, the gradients), or only in what the
  // optimizer makes of them.
  bool nan = false, nan_in_mean = false;
  for (reference::Output o : reference::all_outputs)
    for (std::size_t i = 0; i < r[o].size() && i < e[o].size(); ++i) {
      const bool here = std::isnan(r[o][i]) && !e[o][i].may_overflow && !e[o][i].must_be_nonfinite;
      nan = nan || here;
      nan_in_mean = nan_in_mean ||
                    (here && (o == reference::Output::loss || o == reference::Output::grad_kernel ||
                              o == reference::Output::grad_bias));
    }
  if (!nan) return {};
  std::vector<std::string> found;
  // Adam's bias corrections divide by 1 - b^t: 0 at t = 0, the counter before a first
  // step, which makes every new parameter NaN (0/0 or inf/inf) while the moments
  // themselves stay right. (A negative second moment, say, makes NaN only where it is
  // negative, and the moment is wrong.)
  auto every_nan = [&](reference::Output o) {
    return std::all_of(r[o].begin(), r[o].end(), [](float v) { return std::isnan(v); });
  };
  auto right = [&](reference::Output o) {
    for (std::size_t i = 0; i < r[o].size() && i < e[o].size(); ++i)
      if (!reference::check_element(r[o][i], e[o][i]).ok) return false;
    return true;
  };
  using reference::Output;
  if (!nan_in_mean && c.optimizer.kind == reference::Optimizer::Kind::adam && c.step == 0 &&
      every_nan(Output::kernel) && every_nan(Output::bias) && right(Output::momentum_kernel) &&
      right(Output::momentum_bias) && right(Output::second_moment_kernel) &&
      right(Output::second_moment_bias))
    found.push_back(
        "NaN where Adam's bias correction 1 - b^t is 0: t = step, not step + 1 (the counter "
        "incremented after its use), is 0 at the first step");
  if (nan_in_mean && c.num_shards > c.n)
    found.push_back(
        fmt::format("NaN where a mean runs over no rows: num_shards={} > N={} leaves "
                    "some shards none, and dropping the N % num_shards remainder "
                    "rows leaves {} in all",
                    c.num_shards, c.n, c.n / c.num_shards * c.num_shards));
  // After the shard count's: a case shrunk with num_shards > N kept the count because the
  // failure needs it, which N*K - 1 = 0 does not.
  if (nan_in_mean && std::int64_t{c.n} * c.k == 1)
    found.push_back("NaN where the mean divides by N*K - 1, which is 0 here");
  if (found.empty()) return {"NaN from finite inputs: a 0/0 or inf - inf on the way"};
  return found;
}

std::vector<std::string> suspected_bugs(const Case& c, const reference::StepResult& r,
                                        const reference::Expectation& e) {
  // With a NaN or an infinity in the case, only the optimizer state's own formula, from
  // finite gradients, state and parameters, says something.
  if (reference::has_nonfinite_input(c)) return state_suspects(c, r, stepped_gradients(c, e));
  // The optimizer state, judged from the case's own: what a wrong state makes of the
  // update (a NaN from a negative second moment included) follows from it. With
  // clipping, the optimizer reads the clipped gradients.
  const std::vector<std::string> state = state_suspects(c, r, stepped_gradients(c, e));
  if (auto nan = zero_division(c, r, e); !nan.empty()) {
    if (!state.empty() && nan.size() == 1 && nan[0].starts_with("NaN from finite inputs:"))
      return state;
    return nan;
  }
  std::vector<std::string> found;
  auto test = [&](const Group& g, const std::vector<Hypothesis>& hypotheses) {
    if (g.reported.empty() || g.reported.size() != g.exact.size() || !g.out_of_bound) return;
    for (double v : g.reported)
      if (!std::isfinite(v)) return;
    // Right as a whole, or wrong in elements too small to show in the group's norm (a
    // column left out, say), which only a prediction the values fit element by element
    // (fits) names.
    const bool whole = distance(g.reported, g.exact) > tolerance;
    if (!whole && g.want.empty()) return;  // this group is right
    for (const Hypothesis& h : hypotheses) {
      const std::vector<double> predicted = h.predict();
      if (predicted.empty()) continue;
      // A prediction far from the correct step is matched as a whole; one near it (an
      // element of many wrong) element by element; one the case cannot tell from the
      // correct step either way says nothing.
      // A change below the parameters' own ULPs (a large parameter, a small step) shows
      // only as the parameter rounded: there the values fit where the changes cannot.
      const bool fitted = h.element_wise && fits(g.got, plus(g.base, predicted), g.want);
      const bool matches = distance(predicted, g.exact) > 10 * tolerance
                               ? whole && (distance(g.reported, predicted) <= tolerance ||
                                           (!g.base.empty() && fitted))
                               : fitted;
      if (matches) found.push_back(fmt::format("{} {}", g.name, h.description));
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
  const reference::Optimizer& o = c.optimizer;
  const bool plain_sgd = o.kind == reference::Optimizer::Kind::sgd;
  const bool decoupled = o.decay == reference::Optimizer::Decay::decoupled;
  // Scale factors the known bugs multiply a gradient or the loss by.
  // The shard count's first: where num_shards equals a constant factor (2, 1/2), a shrunk
  // case that kept num_shards > 1 kept it because the failure needs it.
  std::vector<std::pair<double, std::string>> factors;
  if (s > 1) {
    factors.push_back({double(s), fmt::format("are num_shards={} times the exact ones: per-shard "
                                              "means summed, not averaged",
                                              s)});
    factors.push_back(
        {1.0 / s,
         fmt::format("are 1/num_shards={} of the exact ones: averaged once too often", s)});
  }
  factors.insert(
      factors.end(),
      {{0.5, "are half the exact ones: a factor of 2 missing (the derivative of r^2 taken as r)"},
       {2.0, "are twice the exact ones: a factor of 2 too many"},
       {0.0, "are zero"},
       {-1.0, "have the wrong sign"}});
  if (k > 1)
    factors.push_back({double(k), fmt::format("are K={} times the exact ones: divided by N, not "
                                              "N*K (a mean over the batch only)",
                                              k)});
  if (n > 1)
    factors.push_back(
        {double(n), fmt::format("are N={} times the exact ones: divided by K, not N*K", n)});
  // Also where N*K equals K or N: a case that cannot tell the sum from those means names
  // both, and shrinking keeps the dimension that tells them apart.
  if (count > 1)
    factors.push_back({count, fmt::format("are N*K={} times the exact ones: a sum where the mean "
                                          "belongs (reduction='sum')",
                                          n * k)});
  if (count > 1)
    factors.push_back({count / (count - 1),
                       "are N*K/(N*K-1) times the exact ones: divided by "
                       "N*K - 1"});
  // A factor that one of the hypotheses above names already (zero stands apart: a tiny
  // scale is no zero).
  auto known_factor = [&](double a) {
    for (const auto& [f, text] : factors)
      if (f != 0.0 && std::abs(a - f) <= 10 * tolerance * std::abs(f)) return true;
    return false;
  };

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
    grads.out_of_bound =
        out_of_bound(r.grad_kernel, e.grad_kernel) || out_of_bound(r.grad_bias, e.grad_bias);
    grads.got = joined(r.grad_kernel, r.grad_bias);
    grads.want = joined(e.grad_kernel, e.grad_bias);
  }
  const std::vector<double> loss_grads =
      concat(exact(e.grad_kernel), exact(e.grad_bias));  // kernel then bias
  // The gradients the optimizer reads: the loss's, clipped where the case clips.
  const std::vector<double> exact_grads =
      c.clip ? clipped(c, loss_grads, ClipScope::global) : loss_grads;
  const std::vector<double> params = concat(values(c.kernel), values(c.bias));
  std::vector<Hypothesis> gradient_hypotheses;
  for (const auto& [a, text] : factors)
    gradient_hypotheses.push_back({text, [&grads, a = a] { return scaled(grads.exact, a); }});
  gradient_hypotheses.push_back(
      {"match x.reshape(D, N) where x^T belongs", [&c] { return reshaped_gradient(c); }});
  for (const auto& [text, step] : variants)
    gradient_hypotheses.push_back({text, [step = step] { return step().grads; }});
  if (!plain_sgd && o.weight_decay != 0.0f) {
    gradient_hypotheses.push_back(
        {fmt::format("include the weight decay wd*p (wd={:.9g}): L2 regularisation in the loss "
                     "as well as the optimizer's weight decay (the decay applied twice)",
                     o.weight_decay),
         [&grads, &params, wd = double(o.weight_decay)] {
           std::vector<double> out(grads.exact);
           for (std::size_t i = 0; i < out.size() && i < params.size(); ++i)
             out[i] += wd * params[i];
           return out;
         }});
  }
  if (c.clip && clip_factor(*c.clip, loss_grads) < 1.0)
    gradient_hypotheses.push_back(
        {"are the clipped gradients, where the loss's belong: read after clip_grad_norm_ "
         "scaled .grad in place (read them before it, as backward leaves them)",
         [&exact_grads] { return exact_grads; }});
  // Scaled alike in every element by a factor no bug above makes: as clipping to a global
  // norm scales them (the norm over every parameter's gradient brought down to max_norm).
  // Values of a narrower format, each within one of its units of the exact value, are
  // scaled by no common factor but rounded.
  const std::optional<const char*> narrow =
      grads.reported.empty() || !grads.out_of_bound ? std::nullopt : narrow_gradients(r, e);
  if (const auto a = common_scale(grads.reported, grads.exact);
      !narrow && a && *a > 0.0 && *a < 1.0 && !known_factor(*a)) {
    gradient_hypotheses.push_back(
        {fmt::format("are {:.4g} times the exact ones, every element alike, a factor none of the "
                     "known constant-factor bugs makes: scaled as clipping to a global norm "
                     "scales them (their norm {:.4g}, the exact gradients' {:.4g}: "
                     "clip_grad_norm_ or optax.clip_by_global_norm in the step?)",
                     *a, norm(grads.reported), norm(grads.exact)),
         [&grads, a = *a] { return scaled(grads.exact, a); }, false});
  }
  test(grads, gradient_hypotheses);
  if (found.empty() && narrow) {
    found.push_back(fmt::format(
        "gradients are all {0} values where the exact ones round to float32 values outside "
        "{0}: kept or reduced in {0} (an undeclared mixed-precision cast or reduce_dtype?)",
        *narrow));
  }

  // The loss.
  const Group loss{"the loss and its scale",
                   {double(r.loss.at(0))},
                   {e.loss.at(0).value},
                   out_of_bound(r.loss, e.loss)};
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
  // The gradient's own bug already explains a scaled update, a wrong state a wrong one.
  if (!found.empty()) return found;
  if (!state.empty()) return state;
  // Both parameters' update together: what moves them alike, and the optimizer's options.
  const Group update{"the update",
                     concat(change(r.kernel, c.kernel), change(r.bias, c.bias)),
                     concat(exact_change(e.kernel, c.kernel), exact_change(e.bias, c.bias)),
                     out_of_bound(r.kernel, e.kernel) || out_of_bound(r.bias, e.bias),
                     joined(r.kernel, r.bias),
                     joined(e.kernel, e.bias),
                     params};
  // Parameter groups first: a bias stepped without its decay leaves it unchanged where
  // its gradient vanishes, which a missing update would explain too, less exactly.
  std::vector<Hypothesis> group_hypotheses;
  // Clipping declared, done otherwise: not at all, per parameter, per shard, or over the
  // gradients with the weight decay already in them.
  if (c.clip) {
    group_hypotheses.push_back(
        {"matches the step without clipping: the declared clipping is not applied "
         "(clip_grad_norm_ missing, called after optimizer.step(), or on other parameters)",
         [&c, &loss_grads] { return optimizer_change(c, loss_grads); }});
    group_hypotheses.push_back(
        {"matches the kernel and the bias each clipped to max_norm by its own norm "
         "(clip_grad_norm_ called per parameter), where one norm over every parameter's "
         "gradient belongs",
         [&c, &loss_grads] {
           return optimizer_change(c, clipped(c, loss_grads, ClipScope::per_parameter));
         }});
    if (c.num_shards > 1 && c.k > 1)
      group_hypotheses.push_back(
          {fmt::format("matches each of the {} shards' part of the gradients clipped by its "
                       "own norm: the norm of each rank's local shards, where the global norm "
                       "over every shard belongs",
                       c.num_shards),
           [&c, &loss_grads] {
             return optimizer_change(c, clipped(c, loss_grads, ClipScope::per_shard));
           }});
    {
      Case other = c;
      other.clip->eps = c.clip->eps == 0.0f ? 1e-6f : 0.0f;
      group_hypotheses.push_back(
          {c.clip->eps == 0.0f
               ? "matches the clip factor max_norm / (norm + 1e-6), torch's clip_grad_norm_, "
                 "where optax's clip_by_global_norm (eps 0) is declared"
               : "matches the clip factor max_norm / norm, optax's clip_by_global_norm, where "
                 "torch's clip_grad_norm_ (eps 1e-6) is declared",
           [&c, &loss_grads, other] {
             return optimizer_change(c, clipped(other, loss_grads, ClipScope::global));
           }});
    }
    if (!plain_sgd && o.weight_decay != 0.0f)
      group_hypotheses.push_back(
          {"matches the weight decay added to the gradients before they are clipped (the "
           "norm and the clip include wd*p), where clipping reads the loss's gradients and "
           "the optimizer decays after it",
           [&c, &loss_grads, &params, wd = double(o.weight_decay)] {
             std::vector<double> g(loss_grads);
             for (std::size_t i = 0; i < g.size() && i < params.size(); ++i) g[i] += wd * params[i];
             Case undecayed = c;
             undecayed.optimizer.weight_decay = 0.0f;
             return optimizer_change(undecayed, clipped(c, g, ClipScope::global));
           }});
  }
  // Parameter groups: the bias without decay where it decays, or with the kernel's
  // hyperparameters where its group gives it its own.
  if (const reference::Case bias = reference::bias_group_case(c);
      !plain_sgd && bias.optimizer.weight_decay != 0.0f)
    group_hypotheses.push_back(
        {"matches the bias stepped without weight decay, the kernel with it (a parameter group "
         "with weight_decay=0 for biases, or optax's mask): declare the bias's group (recipe "
         "bias_group.weight_decay 0) if the step runs one",
         [&c, &exact_grads] {
           reference::Case s = c;
           s.bias_group = s.bias_group.value_or(reference::ParamGroup{});
           s.bias_group->weight_decay = 0.0f;
           return optimizer_change(s, exact_grads);
         }});
  if (c.bias_group)
    group_hypotheses.push_back(
        {"matches the bias stepped with the kernel's lr and weight decay: the bias's declared "
         "parameter group is not applied",
         [&c, &exact_grads] {
           return optimizer_change(reference::kernel_group_case(c), exact_grads);
         }});
  test(update, group_hypotheses);
  if (!found.empty()) return found;
  for (auto [name, after, expected, before] :
       {std::tuple{"the kernel's update", &r.kernel, &e.kernel, &c.kernel},
        std::tuple{"the bias's update", &r.bias, &e.bias, &c.bias}}) {
    const Group update{name, change(*after, *before), exact_change(*expected, *before),
                       out_of_bound(*after, *expected)};
    const std::vector<Hypothesis> update_hypotheses = {
        {"is missing: the parameters are unchanged",
         [&update] { return scaled(update.exact, 0.0); }},
        {"has the wrong sign: p + lr*g", [&update] { return scaled(update.exact, -1.0); }},
        {c.lr < 1 ? "is lr times too small: lr applied twice (p - lr*lr*g)"
                  : "is lr times too large: lr applied twice (p - lr*lr*g)",
         [&update, lr = c.lr] { return scaled(update.exact, lr); }},
    };
    test(update, update_hypotheses);
  }
  if (!found.empty()) return found;

  std::vector<Hypothesis> update_hypotheses;
  const std::optional<double> a = common_scale(update.reported, update.exact);
  // Both compare the update with the reported gradients': only where those are right.
  const bool grads_right = grads.reported.empty() || !grads.out_of_bound;
  if (plain_sgd && grads_right && a && *a > 1.0 && *a <= 2.0 + 10 * tolerance) {
    update_hypotheses.push_back(
        {fmt::format("is {:.4g} times plain SGD's for the same gradient, every element alike: "
                     "the update looks like momentum (Nesterov's first step moves by "
                     "(1 + mu) g, here mu = {:.4g}): declare `momentum=...` if the step runs "
                     "SGD with momentum",
                     *a, *a - 1.0),
         [&update, a = *a] { return scaled(update.exact, a); }, false});
  }
  if (plain_sgd && grads_right && a && *a > 0.0 && *a < 1.0 && !known_factor(*a) &&
      std::abs(*a - double(c.lr)) > 10 * tolerance * double(c.lr)) {
    update_hypotheses.push_back(
        {fmt::format("is {:.4g} times the exact one for every parameter alike, the reported "
                     "gradients unscaled: the gradients clipped to a global norm (of {:.4g}) "
                     "before the update, after they were read",
                     *a, *a * norm(exact_grads)),
         [&update, a = *a] { return scaled(update.exact, a); }, false});
  }
  if (!plain_sgd && o.weight_decay != 0.0f) {
    const bool adam = o.kind == reference::Optimizer::Kind::adam;
    const std::string other =
        adam ? (decoupled ? "matches Adam with coupled weight decay (torch.optim.Adam) where the "
                            "case's AdamW (decoupled decay) belongs"
                          : "matches AdamW (decoupled weight decay) where the case's Adam with "
                            "coupled decay (torch.optim.Adam) belongs")
             : fmt::format(
                   "matches the other weight-decay convention: {} where the case's {} "
                   "belongs",
                   decoupled ? "coupled" : "decoupled", decoupled ? "decoupled" : "coupled");
    update_hypotheses.push_back({other, [&c, &exact_grads] {
                                   return optimizer_change(c, exact_grads, {.swap_decay = true});
                                 }});
    update_hypotheses.push_back(
        {fmt::format("matches the weight decay applied twice (L2 in the loss as well as the "
                     "optimizer's {} decay)",
                     decoupled ? "decoupled" : "coupled"),
         [&c, &exact_grads, &params, wd = double(o.weight_decay)] {
           std::vector<double> g(exact_grads);
           for (std::size_t i = 0; i < g.size() && i < params.size(); ++i) g[i] += wd * params[i];
           return optimizer_change(c, g);
         }});
  }
  // The optimizer's state and options, as the known optimizer bugs get them wrong.
  std::vector<std::pair<std::string, Variation>> variations;
  if (!plain_sgd && !c.fresh_state())
    variations.push_back(
        {"matches a step that ignores the optimizer state it was given (the "
         "state started afresh: not threaded back from the last step)",
         {.fresh = true}});
  if (o.kind == reference::Optimizer::Kind::momentum) {
    if (c.fresh_state() && reference::applied_dampening(o) != 0.0f)
      variations.push_back(
          {"matches a dampened first buffer, (1 - dampening) g, where the first "
           "step keeps g",
           {.dampen_fresh = true}});
    // On a fresh state too: the buffer before the step is then zero, and the step plain
    // SGD's where Nesterov's first moves by (1 + mu) g.
    if (o.nesterov)
      variations.push_back(
          {"matches Nesterov's direction from the buffer before the step, "
           "g + mu buf, not after",
           {.nesterov_old = true}});
  }
  if (o.kind == reference::Optimizer::Kind::adam) {
    variations.push_back(
        {"matches Adam's bias correction with t = step, not step + 1 (the "
         "counter incremented after its use)",
         {.adam_t_off_by_one = true}});
    variations.push_back(
        {"matches eps inside the square root, sqrt(vh + eps), where "
         "sqrt(vh + eps_root) + eps belongs",
         {.adam_eps_inside = true}});
  }
  if (o.kind == reference::Optimizer::Kind::adagrad) {
    if (c.fresh_state() && o.initial_accumulator_value != 0.0f)
      variations.push_back(
          {fmt::format("matches a fresh sum of squares started at 0, not at "
                       "initial_accumulator_value={:.9g}: the declared initial value ignored",
                       o.initial_accumulator_value),
           {.adagrad_zero_initial = true}});
    if (o.eps != o.eps_root)
      variations.push_back(
          {o.eps_root == 0.0f
               ? "matches Adagrad's eps inside the square root, sqrt(sum + eps), where "
                 "sqrt(sum) + eps belongs: eps on the other side of the square root (optax's "
                 "convention where torch's is declared)"
               : "matches Adagrad's eps outside the square root, sqrt(sum) + eps, where "
                 "sqrt(sum + eps) belongs: eps on the other side of the square root (torch's "
                 "convention where optax's is declared)",
           {.adagrad_eps_swapped = true}});
  }
  for (const auto& [text, var] : variations)
    update_hypotheses.push_back(
        {text, [&c, &exact_grads, var = var] { return optimizer_change(c, exact_grads, var); }});
  test(update, update_hypotheses);
  if (found.empty())
    for (const char* format : matmul_formats(c, r, e))
      found.push_back(fmt::format(
          "every output lies within the bound of a step whose matrix products read their "
          "inputs in {0} (unit roundoff 2^-{1}), outside float32's: matrix products in {0} "
          "({2}): declare compute_format {0}",
          format, std::string_view(format) == "tf32" ? 11 : 8,
          std::string_view(format) == "tf32"
              ? "TF32 tensor cores, torch.backends.cuda.matmul.allow_tf32"
              : "an autocast region or bfloat16 inputs"));
  return found;
}

std::vector<std::string> suspected_counter(std::int64_t before, std::optional<std::int64_t> after,
                                           std::int64_t expected) {
  std::vector<std::string> found;
  if (!after || *after == expected) return found;
  // Each candidate's counter after the step, as that storage would keep it. Where two
  // match (a float32 counter at 2^31 also looks unchanged), the storage comes first: a
  // counter that is simply not advanced shrinks to a small one, where only that matches.
  const std::int64_t as_float32 = static_cast<std::int64_t>(static_cast<float>(before) + 1.0f);
  const std::int64_t as_int32 = static_cast<std::int32_t>(static_cast<std::uint32_t>(before) + 1u);
  const std::int64_t as_uint32 =
      static_cast<std::uint32_t>(static_cast<std::uint64_t>(before) + 1u);
  if (as_float32 != expected && *after == as_float32)
    found.push_back(
        "the counter advanced as a float32 does: the increment lost to rounding "
        "past 2^24 (a counter kept in float32)");
  if (as_int32 != expected && *after == as_int32)
    found.push_back(
        "the counter wrapped as a signed 32-bit integer does past 2^31 - 1 (a "
        "counter kept in int32)");
  if (as_uint32 != expected && *after == as_uint32)
    found.push_back(
        "the counter wrapped as an unsigned 32-bit integer does past 2^32 - 1 (a "
        "counter kept in uint32)");
  if (*after == before)
    found.push_back(
        "the counter was not advanced: returned as it came in (state not threaded "
        "back?)");
  return found;
}

std::string join_suspects(const std::vector<std::string>& suspects) {
  std::string out;
  for (const std::string& s : suspects) out += (out.empty() ? "" : "; or ") + s;
  return out;
}

std::optional<std::string> suspected_bug(const Case& c, const reference::StepResult& r,
                                         const reference::Expectation& e) {
  const std::vector<std::string> found = suspected_bugs(c, r, e);
  if (found.empty()) return std::nullopt;
  return join_suspects(found);
}

std::vector<std::string> suspected_between_calls(const Case& c, const reference::StepResult& first,
                                                 const reference::StepResult& second,
                                                 const reference::Expectation& e) {
  auto values = [](const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<double> out(a.begin(), a.end());
    out.insert(out.end(), b.begin(), b.end());
    return out;
  };
  auto finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  const std::vector<double> before = values(c.kernel, c.bias);
  auto change = [&](const reference::StepResult& r) {
    std::vector<double> d = values(r.kernel, r.bias);
    for (std::size_t i = 0; i < d.size() && i < before.size(); ++i) d[i] -= before[i];
    return d;
  };
  const std::vector<double> ga = values(first.grad_kernel, first.grad_bias),
                            gb = values(second.grad_kernel, second.grad_bias), da = change(first),
                            db = change(second);
  if (!finite(ga) || !finite(gb) || !finite(da) || !finite(db)) return {};
  // Two answers each within the bound differ by what the bound allows: rounding, however
  // their ratio looks where the values cancel to nearly nothing.
  auto within = [&](const reference::StepResult& r) {
    for (reference::Output o : reference::all_outputs)
      for (std::size_t i = 0; i < r[o].size() && i < e[o].size(); ++i)
        if (!reference::check_element(r[o][i], e[o][i]).ok) return false;
    return true;
  };
  const std::string rounding =
      "the answers differ by rounding alone: an order of summation that changes from call "
      "to call (atomics, threads, a nondeterministic reduction)";
  if (within(first) && within(second)) return {rounding};
  const std::string accumulate =
      "gradients accumulate across calls: the second answer's gradient is the first's plus "
      "this case's gradient (a missing optimizer.zero_grad() before backward?)";
  std::vector<double> exact;
  for (const auto* v : {&e.grad_kernel, &e.grad_bias})
    for (const reference::Expected& x : *v) exact.push_back(x.value);
  const std::vector<reference::Expected> want = joined(e.grad_kernel, e.grad_bias);
  // Element by element, each difference within the rounding of the two values it is taken
  // of: an accumulated gradient much larger than this case's keeps its sum's norm near the
  // first answer's, which the whole-vector test below cannot tell.
  if (!ga.empty() && ga.size() == gb.size() && gb.size() == want.size() && norm(exact) > 0.0) {
    bool sums = true, differ = false;
    for (std::size_t i = 0; i < ga.size() && sums; ++i) {
      const double slack = 0x1p-23 * (std::abs(ga[i]) + std::abs(gb[i])) + 2.0 * want[i].bound;
      sums = std::abs((gb[i] - ga[i]) - want[i].value) <= slack;
      differ = differ || std::abs(gb[i] - ga[i]) > slack;
    }
    if (sums && differ) return {accumulate};
  }
  const bool grads = !ga.empty() && ga.size() == gb.size() && gb.size() == exact.size();
  if (grads && distance(ga, gb) > tolerance) {
    std::vector<double> added(gb);
    for (std::size_t i = 0; i < added.size(); ++i) added[i] -= ga[i];
    if (norm(exact) > 0.0 && distance(added, exact) <= tolerance) return {accumulate};
    if (const auto a = common_scale(gb, ga); a && std::abs(*a - 1.0) > 10 * tolerance)
      return {
          fmt::format("gradients differ by a constant factor between calls: the second "
                      "call's are {:.4g} times the first's, as when something is applied "
                      "once more on every call (a gradient hook registered in each step?)",
                      *a)};
    return {};
  }
  // The same gradients (or none reported): what differs is the update.
  if (distance(db, da) > tolerance)
    return {
        "state carried across calls: the same case, with the same gradients, moved the "
        "parameters differently on the second call (optimizer state, a step counter or a "
        "learning-rate schedule kept from an earlier call instead of taken from the case?)"};
  return {rounding};
}

}  // namespace sgdc::properties
