#include "sgdc/reference/certified_step.hpp"

#include <atomic>
#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <vector>

#include "certify_rounding.hpp"
#include "double_word.hpp"

namespace sgdc::reference {

namespace {
using double_word::Approx;
using double_word::Pair;
using double_word::Tracking;

// The two O(N D K) loops are compiled twice on x86-64, for AVX2 and for the baseline,
// and the loader picks one for the CPU: the arithmetic is the same IEEE operations
// either way (no FMA contraction in this file), only wider.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define SGDC_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SGDC_VECTOR_CLONES
#endif

std::atomic<std::uint64_t> total_cases{0}, total_refined_cases{0}, total_exact_cases{0},
    total_elements{0}, total_fallbacks{0};

// Section 11's counts (gamma of at most 2^22 terms, integer scale below 2^27) hold
// within these sizes; larger cases go to the exact path whole.
bool within_analysed_sizes(const Case& c) {
  const double nk = static_cast<double>(c.n) * c.k;
  return nk <= 0x1p20 && c.d <= (1 << 20) && c.n <= (1 << 18);
}

// Rounds enclosures, counting those that cannot be certified (left as zeros until
// fill_from_exact replaces them).
class Rounder {
 public:
  RoundedValue value(const Approx& a) {
    const std::optional<float> f = certified_float32(a);
    const std::optional<double> v = certified_double(a);
    if (!f || !v) {
      ++missing_;
      return {};
    }
    return {*f, *v};
  }
  double residual(const Approx& a) {
    const std::optional<double> v = certified_double(a);
    if (!v) {
      ++missing_;
      return 0.0;
    }
    return *v;
  }
  std::size_t missing() const { return missing_; }

 private:
  std::size_t missing_ = 0;
};

// Every output of the table (loss one value) and the residuals, enclosed.
struct Enclosures : PerOutput<std::vector<Approx>> {
  std::vector<Approx> residual;
};

// (R) r_nk = b_k - y_nk + sum_d x_nd W_dk: every term is an exact double (a product of
// two float32 values has at most 48 significant bits), summed by TwoSum into hi, the
// TwoSum errors by TwoSum into lo, whose own errors are added up as the bound: zero
// when hi + lo is the exact residual, as it often is (residuals are often exactly
// halfway between two doubles, where only an exact enclosure certifies the rounding).
// Arrays over k, one row at a time, so that the compiler vectorises the inner loop.
SGDC_VECTOR_CLONES std::vector<Approx> residuals(const Case& c) {
  const int n = c.n, d = c.d, k = c.k;
  std::vector<Approx> out(static_cast<std::size_t>(n) * k);
  std::vector<double> hi(k), lo(k), err(k);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      const Pair s = double_word::two_sum(c.bias[j], -static_cast<double>(c.y[i * k + j]));
      hi[j] = s.hi;
      lo[j] = s.lo;
      err[j] = 0.0;
    }
    for (int l = 0; l < d; ++l) {
      const double x = c.x[i * d + l];
      const float* w = &c.kernel[static_cast<std::size_t>(l) * k];
      for (int j = 0; j < k; ++j) {
        const Pair s = double_word::two_sum(hi[j], x * static_cast<double>(w[j]));
        const Pair t = double_word::two_sum(lo[j], s.lo);
        hi[j] = s.hi;
        lo[j] = t.hi;
        err[j] += std::abs(t.lo);
      }
    }
    for (int j = 0; j < k; ++j) {
      const Pair s = double_word::two_sum(hi[j], lo[j]);
      out[static_cast<std::size_t>(i) * k + j] = {s.hi, s.lo, err[j] * double_word::bound_slack};
    }
  }
  return out;
}

// (G) S_dk = sum_n x_nd r_nk, the fast way: Accumulator<a_priori>::add_product on
// arrays over k (same terms, same bound), so that the inner loop vectorises.
SGDC_VECTOR_CLONES std::vector<Approx> gradient_sums(const Case& c, const std::vector<Approx>& r) {
  const int n = c.n, d = c.d, k = c.k;
  const std::size_t nk = r.size(), dk = static_cast<std::size_t>(d) * k;
  // Per residual: the halves of hi, lo, and the bound x multiplies: the residual's own
  // plus the rounding of x * lo (|fl(x lo) - x lo| <= u |x lo| <= 2u |x| |lo|).
  std::vector<double> h1(nk), h2(nk), rlo(nk), rerr(nk);
  for (std::size_t i = 0; i < nk; ++i) {
    const Pair h = double_word::split(r[i].hi);
    h1[i] = h.hi;
    h2[i] = h.lo;
    rlo[i] = r[i].lo;
    rerr[i] = r[i].err + 2.0 * double_word::u * std::abs(r[i].lo);
  }
  std::vector<double> hi(dk, 0.0), lo(dk, 0.0), small(dk, 0.0), err(dk, 0.0);
  for (int i = 0; i < n; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * k;
    for (int l = 0; l < d; ++l) {
      const double x = c.x[i * d + l], ax = std::abs(x);
      const std::size_t at = static_cast<std::size_t>(l) * k;
      for (int j = 0; j < k; ++j) {
        const Pair s1 = double_word::two_sum(hi[at + j], x * h1[row + j]);
        const Pair s2 = double_word::two_sum(s1.hi, x * h2[row + j]);
        const double p = x * rlo[row + j];
        hi[at + j] = s2.hi;
        lo[at + j] += (s1.lo + s2.lo) + p;
        small[at + j] += (std::abs(s1.lo) + std::abs(s2.lo)) + std::abs(p);
        err[at + j] += ax * rerr[row + j];
      }
    }
  }
  // The low sums: 3N terms in some tree, each rounding within gamma_3N of their total.
  const double g = double_word::gamma(3.0 * n);
  std::vector<Approx> out(dk);
  for (std::size_t e = 0; e < dk; ++e) {
    const Pair s = double_word::two_sum(hi[e], lo[e]);
    out[e] = {s.hi, s.lo, (g * small[e] + err[e]) * double_word::bound_slack};
  }
  return out;
}

// x a for any double x: x split into two halves of at most 26 bits, each times a by
// Accumulator::add_product (exact products of the halves of a.hi, a.lo rounded or split).
template <Tracking T>
void add_scaled(double_word::Accumulator<T>& acc, double x, const Approx& a) {
  const Pair xs = double_word::split(x);
  const Pair hi = double_word::split(a.hi);
  acc.add_product(xs.hi, hi, a);
  if (xs.lo != 0.0) acc.add_product(xs.lo, hi, a);
}

// (O) SGD with momentum, elementwise from the enclosed gradient g (docs/error-model.md,
// section 12), every term exact or enclosed: ge = g + wd p (wd p is an exact double);
// buf' = ge, or mu buf + (1 - damp) ge (mu buf exact; 1 - damp a TwoSum pair);
// d = buf', or ge + mu buf' (Nesterov); p' = p - lr d, or p - lr d - (lr wd) p
// (decoupled; lr wd exact, times p by Dekker's product).
template <Tracking T>
void enclose_optimizer(const Case& c, const std::vector<float>& params,
                       const std::vector<float>& buffer, const std::vector<Approx>& g,
                       std::vector<Approx>& p_out, std::vector<Approx>& buffer_out) {
  using Accumulator = double_word::Accumulator<T>;
  const Optimizer& o = c.optimizer;
  const double wd = o.weight_decay, mu = o.momentum, lr = c.lr;
  const bool decoupled = o.decay == Optimizer::Decay::decoupled;
  const Pair keep = double_word::two_sum(1.0, -static_cast<double>(o.dampening));
  const double lr_wd = lr * wd;  // two float32 values: exact
  p_out.resize(params.size());
  buffer_out.resize(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double p = params[i];
    Approx ge = g[i];
    if (!decoupled && wd != 0.0) {
      Accumulator a;
      a.add(g[i]);
      a.add_exact(wd * p);
      ge = a.result();
    }
    Approx b = ge;
    if (!c.fresh_state()) {
      Accumulator a;
      a.add_exact(mu * static_cast<double>(buffer[i]));
      add_scaled(a, keep.hi, ge);
      if (keep.lo != 0.0) add_scaled(a, keep.lo, ge);
      b = a.result();
    }
    buffer_out[i] = b;
    Approx d = b;
    if (o.nesterov) {
      Accumulator a;
      a.add(ge);
      add_scaled(a, mu, b);
      d = a.result();
    }
    Accumulator a;
    a.add_exact(p);
    add_scaled(a, -lr, d);
    if (decoupled && wd != 0.0) {
      const Pair q = double_word::two_prod(-lr_wd, p);
      a.add_exact(q.hi);
      a.add_small(q.lo);
    }
    p_out[i] = a.result();
  }
}

template <Tracking T>
Enclosures enclose(const Case& c) {
  using Accumulator = double_word::Accumulator<T>;
  const int n = c.n, d = c.d, k = c.k;
  const double count = static_cast<double>(n) * k;
  Enclosures e;
  e.residual = residuals(c);

  // (L) sum r^2, (G) sum_n r_nk and S_dk = sum_n x_nd r_nk.
  Accumulator squares;
  for (const Approx& r : e.residual) squares.add_square(r);
  e.loss = {double_word::divide(squares.result(), count)};

  std::vector<Accumulator> s_bias(static_cast<std::size_t>(k));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) s_bias[j].add(e.residual[static_cast<std::size_t>(i) * k + j]);
  }
  std::vector<Approx> s_kernel;
  if constexpr (T == Tracking::a_priori) {
    s_kernel = gradient_sums(c, e.residual);
  } else {
    std::vector<Pair> halves(e.residual.size());
    for (std::size_t i = 0; i < halves.size(); ++i)
      halves[i] = double_word::split(e.residual[i].hi);
    std::vector<Accumulator> acc(static_cast<std::size_t>(d) * k);
    for (int i = 0; i < n; ++i) {
      const std::size_t row = static_cast<std::size_t>(i) * k;
      for (int l = 0; l < d; ++l) {
        const double x = c.x[i * d + l];
        Accumulator* s = &acc[static_cast<std::size_t>(l) * k];
        for (int j = 0; j < k; ++j) s[j].add_product(x, halves[row + j], e.residual[row + j]);
      }
    }
    s_kernel.reserve(acc.size());
    for (const Accumulator& a : acc) s_kernel.push_back(a.result());
  }

  e.grad_kernel.resize(s_kernel.size());
  for (std::size_t i = 0; i < s_kernel.size(); ++i)
    e.grad_kernel[i] = double_word::divide(double_word::twice(s_kernel[i]), count);
  e.grad_bias.resize(static_cast<std::size_t>(k));
  std::vector<Approx> s_bias_sums(static_cast<std::size_t>(k));
  for (int j = 0; j < k; ++j) {
    s_bias_sums[j] = s_bias[j].result();
    e.grad_bias[j] = double_word::divide(double_word::twice(s_bias_sums[j]), count);
  }
  if (c.optimizer.kind == Optimizer::Kind::sgd) {
    // g = 2 S / (N K); p' = p - lr g = (N K p - 2 lr S) / (N K), one division at the end.
    const double minus_two_lr = -2.0 * static_cast<double>(c.lr);
    auto update = [&](float p, const Approx& sum) {
      Accumulator t;
      t.add_exact(count * static_cast<double>(p));  // count < 2^27: exact
      t.add_product(minus_two_lr, double_word::split(sum.hi), sum);
      return double_word::divide(t.result(), count);
    };
    e.kernel.resize(s_kernel.size());
    for (std::size_t i = 0; i < s_kernel.size(); ++i)
      e.kernel[i] = update(c.kernel[i], s_kernel[i]);
    e.bias.resize(static_cast<std::size_t>(k));
    for (int j = 0; j < k; ++j) e.bias[j] = update(c.bias[j], s_bias_sums[j]);
  } else {
    enclose_optimizer<T>(c, c.kernel, c.momentum_kernel, e.grad_kernel, e.kernel,
                         e.momentum_kernel);
    enclose_optimizer<T>(c, c.bias, c.momentum_bias, e.grad_bias, e.bias, e.momentum_bias);
  }
  return e;
}

// Replaces the values the enclosures could not certify by the exact step's.
void fill_from_exact(const Enclosures& e, const RoundedStep& exact, RoundedStep& s) {
  for (std::size_t i = 0; i < e.residual.size(); ++i) {
    if (!certified_double(e.residual[i])) s.residual[i] = exact.residual[i];
  }
  for (Output o : all_outputs) {
    const std::vector<Approx>& from = e[o];
    for (std::size_t i = 0; i < from.size(); ++i) {
      if (!certified_float32(from[i]) || !certified_double(from[i])) s[o][i] = exact[o][i];
    }
  }
}

// Rounds every enclosure into `s`; returns how many could not be certified.
std::size_t round_enclosures(const Enclosures& e, RoundedStep& s) {
  Rounder round;
  s.residual.clear();
  s.residual.reserve(e.residual.size());
  for (const Approx& r : e.residual) s.residual.push_back(round.residual(r));
  for (Output o : all_outputs) {
    s[o].clear();
    s[o].reserve(e[o].size());
    for (const Approx& a : e[o]) s[o].push_back(round.value(a));
  }
  return round.missing();
}
}  // namespace

RoundedStep certified_step(const Case& c) {
  c.validate();
  if (has_nonfinite_input(c)) throw std::invalid_argument("certified_step: non-finite input");

  RoundedStep s;
  bool refined = false;
  if (!within_analysed_sizes(c)) {
    s = round_exact_step(c);
  } else {
    // Ziv's strategy: the fast enclosures first; where one cannot be certified, the
    // tighter ones (often exact where the first were not); then the exact step.
    Enclosures e = enclose<Tracking::a_priori>(c);
    std::size_t missing = round_enclosures(e, s);
    if (missing > 0) {
      refined = true;
      e = enclose<Tracking::exact_errors>(c);
      missing = round_enclosures(e, s);
    }
    if (missing > 0) {
      fill_from_exact(e, round_exact_step(c), s);
      s.fallback_elements = missing;
      s.exact_evaluated = true;
    }
  }
  total_cases.fetch_add(1, std::memory_order_relaxed);
  total_elements.fetch_add(s.elements(), std::memory_order_relaxed);
  total_fallbacks.fetch_add(s.fallback_elements, std::memory_order_relaxed);
  if (refined) total_refined_cases.fetch_add(1, std::memory_order_relaxed);
  if (s.exact_evaluated) total_exact_cases.fetch_add(1, std::memory_order_relaxed);
  return s;
}

CertificationCounters certification_counters() {
  return {total_cases.load(), total_refined_cases.load(), total_exact_cases.load(),
          total_elements.load(), total_fallbacks.load()};
}

}  // namespace sgdc::reference