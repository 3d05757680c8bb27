#include "staged_step.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "format_rounding.hpp"
#include "parallel_for.hpp"
#include "sgdc/reference/error_bound.hpp"
#include "sgdc/reference/float32.hpp"
#include "vector_clones.hpp"

namespace sgdc::reference {

namespace {
constexpr double infinity = std::numeric_limits<double>::infinity();
// The double evaluation's own unit roundoff, and the slack on each error term that
// covers the terms' own rounding (as evaluation_slack in error_bound.cpp).
constexpr double double_u = 0x1p-53;
constexpr double slack = 1.0 + 0x1p-28;

// At least one double ulp outward (|v| 2^-52 is one ulp or more; the smallest subnormal
// near 0), which covers the rounding of the operation that made v.
double down(double v) { return v - (std::abs(v) * 0x1p-52 + 0x1p-1074); }
double up(double v) { return v + (std::abs(v) * 0x1p-52 + 0x1p-1074); }

// A closed interval of reals with double endpoints; `lo > hi` never.
struct Interval {
  double lo = 0.0, hi = 0.0;
  double magnitude() const { return std::max(std::abs(lo), std::abs(hi)); }
  bool finite() const { return std::isfinite(lo) && std::isfinite(hi); }
};

// [lo - e, hi + e], outward.
Interval widen(double lo, double hi, double e) { return {down(lo - e), up(hi + e)}; }

// Rounding to nearest is monotone: every value of `v` rounds into [round(lo), round(hi)].
Interval round_in(const Interval& v, const Format& f) {
  return {detail::rounded_to_format(v.lo, f), detail::rounded_to_format(v.hi, f)};
}

// A sum of `terms` intervals accumulated in some order in a format of unit roundoff `u`
// (underflow `eta` per operation), with `extra` more roundings of the whole (a
// conversion, a divide factor): Lemma 3.1 over the `terms - 1 + extra` roundings, the
// double evaluation's own error over the terms, outward. The error's two factors once
// per count of terms; the endpoints and magnitude as add() sums them.
struct SumError {
  int terms = 0;
  double relative = 0.0, absolute = 0.0;
  SumError(int terms, double u, double eta, int extra) : terms(terms) {
    const double m = terms - 1 + extra;
    relative = gamma(m, u) + gamma(terms, double_u);
    absolute = 2.0 * m * eta * (1.0 + gamma(m, u));
  }
  Interval operator()(double lo, double hi, double magnitude) const {
    if (terms == 0) return {};
    return widen(lo, hi, relative * magnitude * slack + absolute);
  }
};

// One term [min(a, b), max(a, b)] added to a sum's endpoints and magnitude.
inline void add(double a, double b, double& lo, double& hi, double& magnitude) {
  lo += std::min(a, b);
  hi += std::max(a, b);
  magnitude += std::max(std::abs(a), std::abs(b));
}

// The O(N D K) loops, a tile's columns at a time. The point terms x w[j] to a sum and
// its magnitude:
SGDC_VECTOR_CLONES void add_products(double x, const double* w, std::size_t width, double* sum,
                                     double* magnitude) {
  for (std::size_t j = 0; j < width; ++j) {
    const double t = x * w[j];  // exact: two values of the compute copy
    sum[j] += t;
    magnitude[j] += std::abs(t);
  }
}

// The interval terms x [g_lo[j], g_hi[j]]:
SGDC_VECTOR_CLONES void add_interval_products(double x, const double* g_lo, const double* g_hi,
                                              std::size_t width, double* lo, double* hi,
                                              double* magnitude) {
  for (std::size_t j = 0; j < width; ++j) add(x * g_lo[j], x * g_hi[j], lo[j], hi[j], magnitude[j]);
}

StagedValue staged_value(const Interval& v, bool overflow) {
  StagedValue s;
  if (overflow || !(v.magnitude() < float32_max)) {
    s.may_overflow = true;
    s.radius = infinity;
    return s;
  }
  s.center = v.lo / 2.0 + v.hi / 2.0;
  s.radius = std::max(up(v.hi - s.center), up(s.center - v.lo)) * slack;
  return s;
}
}  // namespace

StagedGradients staged_gradients(const Case& c, const ErrorModel& model) {
  const Stages& st = model.stages;
  if (const std::string problem = stages_problem(st); !problem.empty())
    throw std::invalid_argument("precision: " + problem);
  if (model.subnormals != Subnormals::ieee)
    throw std::invalid_argument(
        "precision: stages with subnormals \"ftz\" are not modelled (docs/error-model.md, "
        "section 18)");
  const int n = c.n, d = c.d, k = c.k;
  const Format& param = st.param;
  // float32's accumulations: the declared u; underflow half float32's smallest subnormal.
  const double u = model.u, eta = 0x1p-150;
  auto cast = [&](const std::vector<float>& v) {
    std::vector<double> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = detail::rounded_to_format(v[i], param);
    return out;
  };
  const std::vector<double> x = cast(c.x), w = cast(c.kernel), b = cast(c.bias);

  // The layer's output, x~ W~ + b~ accumulated in float32 and rounded to the compute
  // copy once (S1); the residual r = out - y in float32 (S2); the output's gradient
  // 2 r / (N K) in float32, rounded to the compute copy (S3). Each row's outputs a tile
  // at a time, every sum in the order b, then l = 0, 1, ...: the same bits on any count
  // of threads.
  const std::size_t nk = static_cast<std::size_t>(n) * k;
  std::vector<double> gout_lo(nk, 0.0), gout_hi(nk, 0.0);
  std::vector<char> gout_over(nk, 0);
  // Each output's part of the loss: the residual's centre and radius.
  std::vector<double> loss_rc(nk, 0.0), loss_er(nk, 0.0);
  const double scale = 2.0 / (static_cast<double>(n) * k);  // within 2^-53 of 2/(N K)
  const double g_l = gamma(static_cast<double>(nk) + 4.0, u);
  // d + 1 terms; one more rounding for a sum kept wider than float32, then converted.
  const SumError output_error(d + 1, u, eta, 1);
  const int threads = parallel::threads_for(n, d, k);
  std::vector<std::vector<double>> scratch(static_cast<std::size_t>(threads));
  parallel::for_tiles(n, k, threads, [&](int i, int begin, int end, std::size_t part) {
    std::vector<double>& acc = scratch[part];
    const std::size_t width = static_cast<std::size_t>(end - begin);
    acc.assign(2 * width, 0.0);
    double* const sum = acc.data();
    double* const magnitude = sum + width;
    add_products(1.0, b.data() + begin, width, sum, magnitude);  // b~ first, exactly
    for (int l = 0; l < d; ++l) {
      const double xv = x[static_cast<std::size_t>(i) * d + l];
      add_products(xv, w.data() + static_cast<std::size_t>(l) * k + begin, width, sum, magnitude);
    }
    for (std::size_t j = 0; j < width; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * k + begin + j;
      const Interval out = round_in(output_error(sum[j], sum[j], magnitude[j]), param);
      const double y = c.y[e];
      Interval r = widen(out.lo - y, out.hi - y, 0.0);
      r = widen(r.lo, r.hi, (u + double_u) * r.magnitude() + eta);
      // The sum's partial results, or the residual (S2) itself where out and y are both
      // within range, may pass float32's largest value.
      if (!r.finite() || !(r.magnitude() < float32_max) ||
          !(2.0 * magnitude[j] * (1.0 + u) < float32_max)) {
        gout_over[e] = 1;
        continue;
      }
      loss_rc[e] = r.lo / 2.0 + r.hi / 2.0;
      loss_er[e] = std::max(up(r.hi - loss_rc[e]), up(loss_rc[e] - r.lo));
      // Up to three scale operations in float32, then the compute copy's rounding.
      const double lo = scale * r.lo, hi = scale * r.hi;
      const double ge = (gamma(3.0, u) + 2.0 * double_u) * std::max(std::abs(lo), std::abs(hi));
      const Interval g = round_in(widen(lo, hi, ge + 3.0 * eta * (1.0 + gamma(3.0, u))), param);
      gout_lo[e] = g.lo;
      gout_hi[e] = g.hi;
      if (!g.finite()) gout_over[e] = 2;  // the loss still counts it
    }
  });
  StagedGradients out;
  {
    // (L) with each residual's interval for E_r, summed in the outputs' order.
    double loss_center = 0.0, loss_error = 0.0, loss_partial = 0.0;
    bool loss_over = false;
    for (std::size_t e = 0; e < nk; ++e) {
      if (gout_over[e] == 1) {
        loss_over = true;
        continue;
      }
      const double rc = loss_rc[e], er = loss_er[e];
      loss_center += rc * rc;
      loss_error += er * (2.0 * std::abs(rc) + er) * (1.0 + g_l) + g_l * rc * rc;
      loss_partial += (std::abs(rc) + er) * (std::abs(rc) + er);
    }
    const double count = static_cast<double>(nk);
    const double center = loss_center / count;
    // The double sum's own error, then (L)'s terms.
    const double error = (loss_error + gamma(count, double_u) * loss_center) / count +
                         (3.0 * count + 4.0) * eta * (1.0 + g_l);
    loss_over = loss_over || !(loss_partial * (1.0 + g_l) < float32_max);
    out.loss = staged_value(widen(center, center, error * slack), loss_over);
  }

  // Each rank's gradients: its rows' x~^T gout accumulated in float32, rounded to the
  // compute copy (S4); then the ranks' sum in the reduction's format (S5): S - 1
  // additions, a divide factor, and the conversion when the compute copy differs. Row l
  // of [0, d] is x~'s column l, or the bias's 1 where l = d; each sum in the order of
  // the ranks and of their rows, a tile of columns at a time.
  const int shards = std::max(1, c.num_shards);
  const Format& reduce = st.reduce;
  const bool reduce_wide = !reduce.narrower_than_float32();
  const double u_reduce = reduce_wide ? u : std::max(u, reduce.unit_roundoff());
  const double eta_reduce = reduce_wide ? eta : reduce.min_subnormal() / 2.0;
  const int conversions = reduce == param ? 0 : 1;
  const SumError reduce_error(shards, u_reduce, eta_reduce, 1 + conversions);
  std::vector<SumError> rank_error;
  for (int s = 0; s < shards; ++s) {
    const auto [first, last] = split_part(n, shards, s);
    rank_error.emplace_back(static_cast<int>(last - first), u, eta, 1);
  }
  // A gradient that reads an output's gradient or an x~ out of range may be anything.
  std::vector<char> column_over(static_cast<std::size_t>(k), 0), row_over(d + 1, 0);
  for (std::size_t e = 0; e < nk; ++e) column_over[e % k] = column_over[e % k] || gout_over[e];
  for (int l = 0; l < d; ++l)
    for (int i = 0; i < n; ++i)
      row_over[l] = row_over[l] || !std::isfinite(x[static_cast<std::size_t>(i) * d + l]);
  out.grad_kernel.resize(static_cast<std::size_t>(d) * k);
  out.grad_bias.resize(static_cast<std::size_t>(k));
  parallel::for_tiles(d + 1, k, threads, [&](int l, int begin, int end, std::size_t part) {
    std::vector<double>& acc = scratch[part];
    const std::size_t width = static_cast<std::size_t>(end - begin);
    acc.assign(7 * width, 0.0);
    double* const lo = acc.data();
    double* const hi = lo + width;
    double* const magnitude = hi + width;
    double* const total_lo = magnitude + width;
    double* const total_hi = total_lo + width;
    double* const total_magnitude = total_hi + width;
    double* const over = total_magnitude + width;  // nonzero: may overflow float32
    for (int s = 0; s < shards; ++s) {
      const auto [first, last] = split_part(n, shards, s);
      std::fill(lo, lo + 3 * width, 0.0);
      for (auto i = first; i < last; ++i) {
        const double xv = l < d ? x[static_cast<std::size_t>(i) * d + l] : 1.0;
        const std::size_t row = static_cast<std::size_t>(i) * k + begin;
        add_interval_products(xv, gout_lo.data() + row, gout_hi.data() + row, width, lo, hi,
                              magnitude);
      }
      for (std::size_t j = 0; j < width; ++j) {
        if (!(2.0 * magnitude[j] * (1.0 + u) < float32_max)) over[j] = 1.0;
        const Interval rank = round_in(rank_error[s](lo[j], hi[j], magnitude[j]), param);
        add(rank.lo, rank.hi, total_lo[j], total_hi[j], total_magnitude[j]);
      }
    }
    StagedValue* const into =
        l < d ? out.grad_kernel.data() + static_cast<std::size_t>(l) * k : out.grad_bias.data();
    for (std::size_t j = 0; j < width; ++j) {
      const std::size_t column = begin + j;
      if (column_over[column] || row_over[l]) {
        into[column] = staged_value({}, true);
        continue;
      }
      const bool may_overflow =
          over[j] != 0.0 || !(2.0 * total_magnitude[j] * (1.0 + u_reduce) < float32_max);
      into[column] =
          staged_value(reduce_error(total_lo[j], total_hi[j], total_magnitude[j]), may_overflow);
    }
  });
  return out;
}

}  // namespace sgdc::reference
