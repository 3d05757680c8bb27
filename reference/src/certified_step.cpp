#include "sgdc/reference/certified_step.hpp"

#include <atomic>
#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "adam_update.hpp"
#include "certify_rounding.hpp"
#include "double_word.hpp"
#include "parallel_for.hpp"
#include "vector_clones.hpp"

namespace sgdc::reference {

namespace {
using double_word::add_scaled;
using double_word::Approx;
using double_word::Pair;
using double_word::Tracking;
using parallel::tile_columns;

std::atomic<std::uint64_t> total_cases{0}, total_refined_cases{0}, total_exact_cases{0},
    total_elements{0}, total_fallbacks{0}, total_adam_elements{0}, total_adam_by_mpfr{0};

// Section 11's counts (gamma of at most 2^22 terms, integer scale below 2^27) hold
// within these sizes; larger cases go to the exact path whole.
bool within_analysed_sizes(const Case& c) {
  const double nk = static_cast<double>(c.n) * c.k;
  return nk <= 0x1p20 && c.d <= (1 << 20) && c.n <= (1 << 18);
}

// Where a pass could not certify a value: indices per output (the loss: 0) and into the
// residuals. Those values are left zero until fill_from_exact replaces them.
struct Missing : PerOutput<std::vector<std::size_t>> {
  std::vector<std::size_t> residual;
  // Adam's elements certified (AdamUpdate::certify calls), and of those the ones its
  // double words did not decide.
  std::uint64_t adam_elements = 0, adam_by_mpfr = 0;
  std::size_t count() const {
    std::size_t total = residual.size();
    for (Output o : all_outputs) total += (*this)[o].size();
    return total;
  }
};

// A value decided (`to` set), or listed as missing (`to` zeroed, `at` listed).
void put(const std::optional<RoundedValue>& r, RoundedValue& to, std::vector<std::size_t>& missing,
         std::size_t at) {
  if (r) {
    to = *r;
  } else {
    to = {};
    missing.push_back(at);
  }
}

// Rounds `a` into `to` when its enclosure certifies both roundings; else lists `at`.
void round_value(const Approx& a, RoundedValue& to, std::vector<std::size_t>& missing,
                 std::size_t at) {
  put(certified_roundings(a), to, missing, at);
}

// (R) r_nk = b_k - y_nk + sum_d x_nd W_dk: every term is an exact double (a product of
// two float32 values has at most 48 significant bits), summed by TwoSum into hi, the
// TwoSum errors by TwoSum into lo, whose own errors are added up as the bound: zero
// when hi + lo is the exact residual, as it often is (residuals are often exactly
// halfway between two doubles, where only an exact enclosure certifies the rounding).
// Row i, columns [begin, end): arrays over k, so that the compiler vectorises the inner
// loop.
SGDC_VECTOR_CLONES void residual_tile(const Case& c, int i, int begin, int end, Approx* out) {
  const int d = c.d, m = end - begin;
  const std::size_t row = static_cast<std::size_t>(i) * c.k + begin;
  double hi[tile_columns], lo[tile_columns], err[tile_columns];
  for (int j = 0; j < m; ++j) {
    const Pair s = double_word::two_sum(c.bias[begin + j], -static_cast<double>(c.y[row + j]));
    hi[j] = s.hi;
    lo[j] = s.lo;
    err[j] = 0.0;
  }
  for (int l = 0; l < d; ++l) {
    const double x = c.x[static_cast<std::size_t>(i) * d + l];
    const float* w = &c.kernel[static_cast<std::size_t>(l) * c.k + begin];
    for (int j = 0; j < m; ++j) {
      const Pair s = double_word::two_sum(hi[j], x * static_cast<double>(w[j]));
      const Pair t = double_word::two_sum(lo[j], s.lo);
      hi[j] = s.hi;
      lo[j] = t.hi;
      err[j] += std::abs(t.lo);
    }
  }
  for (int j = 0; j < m; ++j) {
    const Pair s = double_word::two_sum(hi[j], lo[j]);
    out[row + j] = {s.hi, s.lo, err[j] * double_word::bound_slack};
  }
}

std::vector<Approx> residuals(const Case& c, int threads) {
  std::vector<Approx> out(static_cast<std::size_t>(c.n) * c.k);
  parallel::for_tiles(c.n, c.k, threads, [&](int i, int begin, int end, std::size_t) {
    residual_tile(c, i, begin, end, out.data());
  });
  return out;
}

// What the first pass's gradient sums read of each residual: the halves of hi, lo, and
// the bound x multiplies: the residual's own plus the rounding of x * lo
// (|fl(x lo) - x lo| <= u |x lo| <= 2u |x| |lo|).
struct SplitResiduals {
  std::vector<double> h1, h2, lo, err;
  explicit SplitResiduals(const std::vector<Approx>& r)
      : h1(r.size()), h2(r.size()), lo(r.size()), err(r.size()) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      const Pair h = double_word::split(r[i].hi);
      h1[i] = h.hi;
      h2[i] = h.lo;
      lo[i] = r[i].lo;
      err[i] = r[i].err + 2.0 * double_word::u * std::abs(r[i].lo);
    }
  }
};

// A tile's enclosures, one array per part, so that loops over them vectorise.
struct TileEnclosures {
  double hi[tile_columns], lo[tile_columns], err[tile_columns];
  Approx operator[](int j) const { return {hi[j], lo[j], err[j]}; }
  void set(int j, const Approx& a) {
    hi[j] = a.hi;
    lo[j] = a.lo;
    err[j] = a.err;
  }
};

// g = 2 S / (N K); p' = p - lr g = (N K p - 2 lr S) / (N K), one division at the end.
template <Tracking T>
struct FromSums {
  double count, minus_two_lr;
  explicit FromSums(const Case& c)
      : count(static_cast<double>(c.n) * c.k), minus_two_lr(-2.0 * static_cast<double>(c.lr)) {}
  Approx gradient(const Approx& sum) const {
    return double_word::divide(double_word::twice(sum), count);
  }
  Approx update(float p, const Approx& sum) const {
    double_word::Accumulator<T> t;
    t.add_exact(count * static_cast<double>(p));  // count < 2^27: exact
    t.add_product(minus_two_lr, double_word::split(sum.hi), sum);
    return double_word::divide(t.result(), count);
  }
};

// (G) S_dk = sum_n x_nd r_nk for kernel row l, columns [begin, end), the fast way:
// Accumulator<a_priori>::add_product on arrays over k (same terms, same bound), so that
// the inner loop vectorises. Each sum adds its terms in the order of n.
SGDC_VECTOR_CLONES void fast_gradient_sums(const Case& c, const SplitResiduals& r, int l, int begin,
                                           int end, TileEnclosures& sums) {
  const int n = c.n, d = c.d, m = end - begin;
  double hi[tile_columns] = {}, lo[tile_columns] = {}, small[tile_columns] = {},
         err[tile_columns] = {};
  for (int i = 0; i < n; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * c.k + begin;
    const double x = c.x[static_cast<std::size_t>(i) * d + l], ax = std::abs(x);
    for (int j = 0; j < m; ++j) {
      const Pair s1 = double_word::two_sum(hi[j], x * r.h1[row + j]);
      const Pair s2 = double_word::two_sum(s1.hi, x * r.h2[row + j]);
      const double p = x * r.lo[row + j];
      hi[j] = s2.hi;
      lo[j] += (s1.lo + s2.lo) + p;
      small[j] += (std::abs(s1.lo) + std::abs(s2.lo)) + std::abs(p);
      err[j] += ax * r.err[row + j];
    }
  }
  // The low sums: 3N terms in some tree, each rounding within gamma_3N of their total.
  const double g = double_word::gamma(3.0 * n);
  for (int j = 0; j < m; ++j) {
    const Pair s = double_word::two_sum(hi[j], lo[j]);
    sums.set(j, {s.hi, s.lo, (g * small[j] + err[j]) * double_word::bound_slack});
  }
}

// gW and W' of a tile from its sums, the fast way: FromSums element by element, in a
// loop that vectorises.
SGDC_VECTOR_CLONES void fast_outputs(const FromSums<Tracking::a_priori>& from, const float* p,
                                     int m, const TileEnclosures& sums, TileEnclosures& grad,
                                     TileEnclosures& updated) {
  for (int j = 0; j < m; ++j) {
    grad.set(j, from.gradient(sums[j]));
    updated.set(j, from.update(p[j], sums[j]));
  }
}

// The same sums tracking every error (Tracking::exact_errors), from the residuals and
// the splits of their high parts.
void exact_gradient_sums(const Case& c, const std::vector<Pair>& halves,
                         const std::vector<Approx>& r, int l, int begin, int end, Approx* sums) {
  const int n = c.n, d = c.d, m = end - begin;
  double_word::Accumulator<Tracking::exact_errors> acc[tile_columns];
  for (int i = 0; i < n; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * c.k + begin;
    const double x = c.x[static_cast<std::size_t>(i) * d + l];
    for (int j = 0; j < m; ++j) acc[j].add_product(x, halves[row + j], r[row + j]);
  }
  for (int j = 0; j < m; ++j) sums[j] = acc[j].result();
}

// One parameter's update by a stateful optimizer and its new state.
struct OptimizerUpdate {
  Approx param, buffer;
};

// (O) SGD with momentum, elementwise from the enclosed gradient g (docs/error-model.md,
// section 12), every term exact or enclosed: ge = g + wd p (wd p is an exact double);
// buf' = ge, or mu buf + (1 - damp) ge (mu buf exact; 1 - damp a TwoSum pair);
// d = buf', or ge + mu buf' (Nesterov); p' = p - lr d, or p - lr d - (lr wd) p
// (decoupled; lr wd exact, times p by Dekker's product).
template <Tracking T>
class OptimizerStep {
 public:
  explicit OptimizerStep(const Case& c)
      : o_(c.optimizer),
        fresh_(c.fresh_state()),
        lr_(c.lr),
        keep_(double_word::two_sum(1.0, -static_cast<double>(applied_dampening(c.optimizer)))) {}

  OptimizerUpdate operator()(float param, float buffer, const Approx& g) const {
    using Accumulator = double_word::Accumulator<T>;
    const double wd = o_.weight_decay, mu = o_.momentum, p = param;
    const bool decoupled = o_.decay == Optimizer::Decay::decoupled;
    Approx ge = g;
    if (!decoupled && wd != 0.0) {
      Accumulator a;
      a.add(g);
      a.add_exact(wd * p);
      ge = a.result();
    }
    Approx b = ge;
    if (!fresh_) {
      Accumulator a;
      a.add_exact(mu * static_cast<double>(buffer));
      add_scaled(a, keep_.hi, ge);
      if (keep_.lo != 0.0) add_scaled(a, keep_.lo, ge);
      b = a.result();
    }
    Approx d = b;
    if (o_.nesterov) {
      Accumulator a;
      a.add(ge);
      add_scaled(a, mu, b);
      d = a.result();
    }
    Accumulator a;
    a.add_exact(p);
    add_scaled(a, -lr_, d);
    if (decoupled && wd != 0.0) {
      const Pair q = double_word::two_prod(-lr_ * wd, p);  // lr wd: two float32 values, exact
      a.add_exact(q.hi);
      a.add_small(q.lo);
    }
    return {a.result(), b};
  }

 private:
  Optimizer o_;
  bool fresh_;
  double lr_;
  Pair keep_;
};

// (A) Adam or Adagrad, elementwise from the enclosed gradient: its moments and parameter
// enclosed in double words or MPFR intervals (adam_update.hpp), each rounded where its
// enclosure decides it. Fresh state reads as 0, Adagrad's sum as its initial value;
// Adagrad keeps no first moment (`m_out` null).
void round_adam(const AdamUpdate& adam, const Case& c, float p, const std::vector<float>& m,
                const std::vector<float>& v, std::size_t e, const Approx& g, RoundedValue& param,
                RoundedValue* m_out, RoundedValue& v_out, Missing& missing, Output param_output,
                Output m_output, Output v_output) {
  const float m_before = m.empty() ? 0.0f : m[e];
  const float v_before = v.empty() ? c.optimizer.initial_accumulator_value : v[e];
  const AdamUpdate::Certified r = adam.certify(p, m_before, v_before, g);
  ++missing.adam_elements;
  if (r.by_mpfr) ++missing.adam_by_mpfr;
  put(r.param, param, missing[param_output], e);
  if (m_out) put(r.m, *m_out, missing[m_output], e);
  put(r.v, v_out, missing[v_output], e);
}

// Every output from the residuals, tracked as T says, rounded into `s`; what cannot be
// certified is listed in `missing` (whose residual list is left alone).
template <Tracking T>
void evaluate_outputs(const Case& c, const std::vector<Approx>& residual, int threads,
                      RoundedStep& s, Missing& missing) {
  using Accumulator = double_word::Accumulator<T>;
  const int n = c.n, d = c.d, k = c.k;
  const double count = static_cast<double>(n) * k;
  for (Output o : all_outputs) missing[o].clear();

  const FromSums<T> from(c);

  // (L) sum r^2.
  Accumulator squares;
  for (const Approx& r : residual) squares.add_square(r);
  s.loss.assign(1, {});
  round_value(double_word::divide(squares.result(), count), s.loss[0], missing.loss, 0);

  // (G) sum_n r_nk.
  std::vector<Accumulator> s_bias(static_cast<std::size_t>(k));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) s_bias[j].add(residual[static_cast<std::size_t>(i) * k + j]);
  }
  const OptimizerInfo& kept = info(c.optimizer.kind);
  const bool stateful = c.optimizer.kind != Optimizer::Kind::sgd;
  // Adam and Adagrad: through a square root (adam_update.hpp).
  const bool is_adam = kept.second_moment;
  const OptimizerStep<T> optimizer(c);
  std::optional<AdamUpdate> adam;
  if (is_adam) adam.emplace(c);
  s.grad_bias.resize(static_cast<std::size_t>(k));
  s.bias.resize(static_cast<std::size_t>(k));
  s.momentum_bias.resize(kept.buffer ? static_cast<std::size_t>(k) : 0);
  s.second_moment_bias.resize(kept.second_moment ? static_cast<std::size_t>(k) : 0);
  for (int j = 0; j < k; ++j) {
    const Approx sum = s_bias[j].result();
    const Approx grad = from.gradient(sum);
    round_value(grad, s.grad_bias[j], missing.grad_bias, j);
    if (is_adam) {
      round_adam(*adam, c, c.bias[j], c.momentum_bias, c.second_moment_bias, j, grad, s.bias[j],
                 kept.buffer ? &s.momentum_bias[j] : nullptr, s.second_moment_bias[j], missing,
                 Output::bias, Output::momentum_bias, Output::second_moment_bias);
    } else if (stateful) {
      const OptimizerUpdate u =
          optimizer(c.bias[j], c.fresh_state() ? 0.0f : c.momentum_bias[j], grad);
      round_value(u.param, s.bias[j], missing.bias, j);
      round_value(u.buffer, s.momentum_bias[j], missing.momentum_bias, j);
    } else {
      round_value(from.update(c.bias[j], sum), s.bias[j], missing.bias, j);
    }
  }

  // (G) S_dk = sum_n x_nd r_nk, and from it gW and W', tile by tile: no kernel-sized
  // intermediate.
  const std::size_t dk = static_cast<std::size_t>(d) * k;
  s.grad_kernel.resize(dk);
  s.kernel.resize(dk);
  s.momentum_kernel.resize(kept.buffer ? dk : 0);
  s.second_moment_kernel.resize(kept.second_moment ? dk : 0);
  std::optional<SplitResiduals> split;
  std::vector<Pair> halves;
  if constexpr (T == Tracking::a_priori) {
    split.emplace(residual);
  } else {
    halves.resize(residual.size());
    for (std::size_t i = 0; i < halves.size(); ++i) halves[i] = double_word::split(residual[i].hi);
  }
  std::vector<Missing> parts(static_cast<std::size_t>(threads));
  parallel::for_tiles(d, k, threads, [&](int l, int begin, int end, std::size_t part) {
    Missing& m = parts[part];
    const std::size_t first = static_cast<std::size_t>(l) * k + begin;
    auto round = [&](int j, const Approx& grad, const Approx& updated) {
      round_value(grad, s.grad_kernel[first + j], m.grad_kernel, first + j);
      round_value(updated, s.kernel[first + j], m.kernel, first + j);
    };
    // A stateful optimizer's update, element by element from the gradient.
    auto round_stateful = [&](int j, const Approx& grad) {
      const std::size_t e = first + j;
      if (is_adam) {
        round_value(grad, s.grad_kernel[e], m.grad_kernel, e);
        round_adam(*adam, c, c.kernel[e], c.momentum_kernel, c.second_moment_kernel, e, grad,
                   s.kernel[e], kept.buffer ? &s.momentum_kernel[e] : nullptr,
                   s.second_moment_kernel[e], m, Output::kernel, Output::momentum_kernel,
                   Output::second_moment_kernel);
        return;
      }
      const OptimizerUpdate u =
          optimizer(c.kernel[e], c.fresh_state() ? 0.0f : c.momentum_kernel[e], grad);
      round_value(grad, s.grad_kernel[e], m.grad_kernel, e);
      round_value(u.param, s.kernel[e], m.kernel, e);
      round_value(u.buffer, s.momentum_kernel[e], m.momentum_kernel, e);
    };
    if constexpr (T == Tracking::a_priori) {
      TileEnclosures sums, grad, updated;
      fast_gradient_sums(c, *split, l, begin, end, sums);
      if (stateful) {
        for (int j = 0; j < end - begin; ++j) round_stateful(j, from.gradient(sums[j]));
      } else {
        fast_outputs(from, &c.kernel[first], end - begin, sums, grad, updated);
        for (int j = 0; j < end - begin; ++j) round(j, grad[j], updated[j]);
      }
    } else {
      Approx sums[tile_columns];
      exact_gradient_sums(c, halves, residual, l, begin, end, sums);
      for (int j = 0; j < end - begin; ++j) {
        if (stateful) {
          round_stateful(j, from.gradient(sums[j]));
        } else {
          round(j, from.gradient(sums[j]), from.update(c.kernel[first + j], sums[j]));
        }
      }
    }
  });
  for (const Missing& m : parts) {
    for (Output o : {Output::kernel, Output::grad_kernel, Output::momentum_kernel,
                     Output::second_moment_kernel})
      missing[o].insert(missing[o].end(), m[o].begin(), m[o].end());
    missing.adam_elements += m.adam_elements;
    missing.adam_by_mpfr += m.adam_by_mpfr;
  }
}

// Whether every value of `a` is 0 or of magnitude in [2^-350, 2^350], as section 15's
// products need (their halves' products exact, their low parts far from underflow).
bool in_product_range(const Approx& a) {
  if (!std::isfinite(a.hi) || !std::isfinite(a.lo) || !std::isfinite(a.err)) return false;
  const double m = std::abs(a.hi);
  return (m == 0.0 && a.lo == 0.0) || (m >= 0x1p-350 && m <= 0x1p350);
}

// (C) The clip factor from the gradients' enclosures (docs/error-model.md, section 17):
// S = sum g^2, sqrt(S) + eps, then whether M lies below it. None where the factor is 1
// (M >= sqrt(S) + eps); the enclosure of M / (sqrt(S) + eps) where it is below 1; false
// where the enclosures do not tell (the exact path decides then).
template <Tracking T>
std::optional<std::optional<Approx>> clip_factor(const Clipping& clip,
                                                 const std::vector<Approx>& grads) {
  double_word::Accumulator<T> squares;
  for (const Approx& g : grads) squares.add_square(g);
  Approx sum = squares.result();
  sum.err += double_word::underflow_slack;
  const std::optional<Approx> root = double_word::square_root(sum);
  if (!root) return std::nullopt;
  double_word::Accumulator<Tracking::a_priori> denominator;
  denominator.add(*root);
  denominator.add_exact(clip.eps);
  Approx den = denominator.result();
  den.err += double_word::underflow_slack;
  // den - M = s + t + den.lo within den.err; the sum of the three rounded once more.
  const Pair st = double_word::two_sum(den.hi, -static_cast<double>(clip.max_norm));
  const double rest = st.lo + den.lo;
  const double above = st.hi + rest;
  const double margin =
      (den.err + 4.0 * double_word::u * (std::abs(st.hi) + std::abs(st.lo) + std::abs(den.lo))) *
      double_word::bound_slack;
  if (above < -margin) return std::optional<Approx>{};  // M > sqrt(S) + eps: unclipped
  if (!(above > margin)) return std::nullopt;           // too near M to tell
  const std::optional<Approx> factor = double_word::quotient(Approx{clip.max_norm, 0.0, 0.0}, den);
  if (!factor || !in_product_range(*factor)) return std::nullopt;
  return std::optional<Approx>{*factor};
}

// (C), (O), (A): the optimizer's outputs from the enclosed gradients `grads` (the
// kernel's [d][k], then the bias's [k]), clipped where the case says, element by element,
// rounded into `s`; what cannot be certified is listed in `missing`. False where the clip
// factor cannot be decided.
template <Tracking T>
bool optimizer_outputs(const Case& c, std::vector<Approx> grads, int threads, RoundedStep& s,
                       Missing& missing) {
  const int d = c.d, k = c.k;
  const std::size_t dk = static_cast<std::size_t>(d) * k;
  if (c.clip) {
    // (C) the factor, and the gradients the optimizer reads.
    for (const Approx& g : grads)
      if (!in_product_range(g)) return false;
    const auto factor = clip_factor<T>(*c.clip, grads);
    if (!factor) return false;
    if (*factor)
      for (Approx& g : grads) g = double_word::product(**factor, g);
  }

  // (O), (A) element by element.
  const OptimizerInfo& kept = info(c.optimizer.kind);
  const bool is_adam = kept.second_moment;
  const OptimizerStep<T> optimizer(c);
  std::optional<AdamUpdate> adam;
  if (is_adam) adam.emplace(c);
  s.kernel.resize(dk);
  s.bias.resize(static_cast<std::size_t>(k));
  s.momentum_kernel.resize(kept.buffer ? dk : 0);
  s.momentum_bias.resize(kept.buffer ? static_cast<std::size_t>(k) : 0);
  s.second_moment_kernel.resize(kept.second_moment ? dk : 0);
  s.second_moment_bias.resize(kept.second_moment ? static_cast<std::size_t>(k) : 0);
  const bool fresh = c.fresh_state();
  auto step = [&](bool bias, std::size_t e, Missing& m) {
    const Approx& g = grads[bias ? dk + e : e];
    const std::vector<float>& p = bias ? c.bias : c.kernel;
    const Output param = bias ? Output::bias : Output::kernel;
    const Output buffer = bias ? Output::momentum_bias : Output::momentum_kernel;
    const Output second = bias ? Output::second_moment_bias : Output::second_moment_kernel;
    if (is_adam) {
      round_adam(*adam, c, p[e], bias ? c.momentum_bias : c.momentum_kernel,
                 bias ? c.second_moment_bias : c.second_moment_kernel, e, g, s[param][e],
                 kept.buffer ? &s[buffer][e] : nullptr, s[second][e], m, param, buffer, second);
      return;
    }
    // Plain SGD is the momentum step's fresh path with no buffer kept: p - lr g.
    const std::vector<float>& before = bias ? c.momentum_bias : c.momentum_kernel;
    const OptimizerUpdate u = optimizer(p[e], fresh ? 0.0f : before[e], g);
    round_value(u.param, s[param][e], m[param], e);
    if (kept.buffer) round_value(u.buffer, s[buffer][e], m[buffer], e);
  };
  for (int j = 0; j < k; ++j) step(true, static_cast<std::size_t>(j), missing);
  std::vector<Missing> parts(static_cast<std::size_t>(threads));
  parallel::for_tiles(d, k, threads, [&](int l, int begin, int end, std::size_t part) {
    for (int j = begin; j < end; ++j) step(false, static_cast<std::size_t>(l) * k + j, parts[part]);
  });
  for (const Missing& m : parts) {
    for (Output o : {Output::kernel, Output::momentum_kernel, Output::second_moment_kernel})
      missing[o].insert(missing[o].end(), m[o].begin(), m[o].end());
    missing.adam_elements += m.adam_elements;
    missing.adam_by_mpfr += m.adam_by_mpfr;
  }
  return true;
}

// A clipped case's outputs (Case::clip): every gradient enclosed first (their norm needs
// them all), rounded as reported, then the optimizer element by element from the clipped
// ones, factor times gradient, as the unclipped step's stateful path does. False where
// the factor's branch is not decided; what cannot be certified is listed in `missing`.
template <Tracking T>
bool evaluate_clipped_outputs(const Case& c, const std::vector<Approx>& residual, int threads,
                              RoundedStep& s, Missing& missing) {
  using Accumulator = double_word::Accumulator<T>;
  const int n = c.n, d = c.d, k = c.k;
  const double count = static_cast<double>(n) * k;
  for (Output o : all_outputs) missing[o].clear();
  const FromSums<T> from(c);
  Accumulator squares;
  for (const Approx& r : residual) squares.add_square(r);
  s.loss.assign(1, {});
  round_value(double_word::divide(squares.result(), count), s.loss[0], missing.loss, 0);

  // (G) every gradient, the bias's then the kernel's, kept.
  const std::size_t dk = static_cast<std::size_t>(d) * k;
  std::vector<Approx> grads(dk + static_cast<std::size_t>(k));
  {
    std::vector<Accumulator> s_bias(static_cast<std::size_t>(k));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j) s_bias[j].add(residual[static_cast<std::size_t>(i) * k + j]);
    for (int j = 0; j < k; ++j) grads[dk + j] = from.gradient(s_bias[j].result());
  }
  std::optional<SplitResiduals> split;
  std::vector<Pair> halves;
  if constexpr (T == Tracking::a_priori) {
    split.emplace(residual);
  } else {
    halves.resize(residual.size());
    for (std::size_t i = 0; i < halves.size(); ++i) halves[i] = double_word::split(residual[i].hi);
  }
  parallel::for_tiles(d, k, threads, [&](int l, int begin, int end, std::size_t) {
    const std::size_t first = static_cast<std::size_t>(l) * k + begin;
    if constexpr (T == Tracking::a_priori) {
      TileEnclosures sums;
      fast_gradient_sums(c, *split, l, begin, end, sums);
      for (int j = 0; j < end - begin; ++j) grads[first + j] = from.gradient(sums[j]);
    } else {
      Approx sums[tile_columns];
      exact_gradient_sums(c, halves, residual, l, begin, end, sums);
      for (int j = 0; j < end - begin; ++j) grads[first + j] = from.gradient(sums[j]);
    }
  });
  s.grad_kernel.resize(dk);
  s.grad_bias.resize(static_cast<std::size_t>(k));
  for (std::size_t e = 0; e < dk; ++e)
    round_value(grads[e], s.grad_kernel[e], missing.grad_kernel, e);
  for (int j = 0; j < k; ++j) round_value(grads[dk + j], s.grad_bias[j], missing.grad_bias, j);

  return optimizer_outputs<T>(c, std::move(grads), threads, s, missing);
}

// Replaces the values no pass could certify by the exact step's.
void fill_from_exact(const Missing& missing, const RoundedStep& exact, RoundedStep& s) {
  for (const std::size_t i : missing.residual) s.residual[i] = exact.residual[i];
  for (Output o : all_outputs) {
    for (const std::size_t i : missing[o]) s[o][i] = exact[o][i];
  }
}
}  // namespace

std::optional<RoundedStep> certified_optimizer(const Case& c,
                                               const std::vector<double>& grad_kernel,
                                               const std::vector<double>& grad_bias) {
  c.validate();
  if (has_nonfinite_input(c) || !within_analysed_sizes(c)) return std::nullopt;
  // Each gradient exact: a double with no error.
  std::vector<Approx> grads;
  grads.reserve(grad_kernel.size() + grad_bias.size());
  for (const std::vector<double>* g : {&grad_kernel, &grad_bias})
    for (const double v : *g) {
      if (!std::isfinite(v)) return std::nullopt;
      grads.push_back({v, 0.0, 0.0});
    }
  RoundedStep s;
  Missing missing;
  for (Output o : all_outputs) missing[o].clear();
  const int threads = parallel::threads_for(c.n, c.d, c.k);
  if (!optimizer_outputs<Tracking::exact_errors>(c, std::move(grads), threads, s, missing))
    return std::nullopt;
  for (Output o : all_outputs)
    if (!missing[o].empty()) return std::nullopt;
  return s;
}

RoundedStep certified_step(const Case& c) {
  c.validate();
  if (has_nonfinite_input(c)) throw std::invalid_argument("certified_step: non-finite input");

  RoundedStep s;
  bool refined = false;
  if (!within_analysed_sizes(c)) {
    s = round_exact_step(c);
  } else {
    // Ziv's strategy: the fast enclosures first; where one cannot be certified, the
    // tighter ones (often exact where the first were not); then the exact step. The
    // residuals track their errors exactly in both passes: evaluated once.
    const int threads = parallel::threads_for(c.n, c.d, c.k);
    const std::vector<Approx> residual = residuals(c, threads);
    Missing missing;
    s.residual.resize(residual.size());
    for (std::size_t i = 0; i < residual.size(); ++i) {
      const std::optional<double> v = certified_double(residual[i]);
      s.residual[i] = v.value_or(0.0);
      if (!v) missing.residual.push_back(i);
    }
    // With clipping, a pass whose enclosures cannot tell whether the factor is below 1
    // leaves the whole case to the exact path.
    bool decided = true;
    auto pass = [&](auto tracking) {
      constexpr Tracking T = decltype(tracking)::value;
      if (!c.clip) {
        evaluate_outputs<T>(c, residual, threads, s, missing);
      } else if (!evaluate_clipped_outputs<T>(c, residual, threads, s, missing)) {
        decided = false;
      }
    };
    pass(std::integral_constant<Tracking, Tracking::a_priori>{});
    if (missing.count() > 0 || !decided) {
      refined = true;
      decided = true;
      pass(std::integral_constant<Tracking, Tracking::exact_errors>{});
    }
    if (!decided) {
      s = round_exact_step(c);
    } else if (missing.count() > 0) {
      fill_from_exact(missing, round_exact_step(c), s);
      s.fallback_elements = missing.count();
      s.exact_evaluated = true;
    }
    total_adam_elements.fetch_add(missing.adam_elements, std::memory_order_relaxed);
    total_adam_by_mpfr.fetch_add(missing.adam_by_mpfr, std::memory_order_relaxed);
  }
  total_cases.fetch_add(1, std::memory_order_relaxed);
  total_elements.fetch_add(s.elements(), std::memory_order_relaxed);
  total_fallbacks.fetch_add(s.fallback_elements, std::memory_order_relaxed);
  if (refined) total_refined_cases.fetch_add(1, std::memory_order_relaxed);
  if (s.exact_evaluated) total_exact_cases.fetch_add(1, std::memory_order_relaxed);
  return s;
}

CertificationCounters certification_counters() {
  return {total_cases.load(),       total_refined_cases.load(), total_exact_cases.load(),
          total_elements.load(),    total_fallbacks.load(),     total_adam_elements.load(),
          total_adam_by_mpfr.load()};
}

}  // namespace sgdc::reference