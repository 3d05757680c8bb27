#include "staged_step.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "sgdc/reference/error_bound.hpp"
#include "sgdc/reference/float32.hpp"

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
  return {round_to_format(v.lo, f), round_to_format(v.hi, f)};
}

// A sum of `terms` intervals accumulated in some order in a format of unit roundoff `u`
// (underflow `eta` per operation), with `extra` more roundings of the whole (a
// conversion, a divide factor): Lemma 3.1 over the `terms - 1 + extra` roundings, the
// double evaluation's own error over the terms, outward.
struct Sum {
  double lo = 0.0, hi = 0.0, magnitude = 0.0;
  int terms = 0;
  void add(double a, double b) {
    lo += std::min(a, b);
    hi += std::max(a, b);
    magnitude += std::max(std::abs(a), std::abs(b));
    ++terms;
  }
  Interval result(double u, double eta, int extra) const {
    if (terms == 0) return {};
    const double m = terms - 1 + extra;
    const double e = (gamma(m, u) + gamma(terms, double_u)) * magnitude * slack +
                     2.0 * m * eta * (1.0 + gamma(m, u));
    return widen(lo, hi, e);
  }
};

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
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = round_to_format(v[i], param);
    return out;
  };
  const std::vector<double> x = cast(c.x), w = cast(c.kernel), b = cast(c.bias);

  // The layer's output, x~ W~ + b~ accumulated in float32 and rounded to the compute
  // copy once (S1); the residual r = out - y in float32 (S2); the output's gradient
  // 2 r / (N K) in float32, rounded to the compute copy (S3).
  const std::size_t nk = static_cast<std::size_t>(n) * k;
  std::vector<Interval> gout(nk);
  std::vector<char> gout_over(nk, 0);
  const double scale = 2.0 / (static_cast<double>(n) * k);  // within 2^-53 of 2/(N K)
  const double g_l = gamma(static_cast<double>(nk) + 4.0, u);
  double loss_center = 0.0, loss_error = 0.0, loss_partial = 0.0;
  bool loss_over = false;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * k + j;
      Sum z;
      z.add(b[j], b[j]);
      for (int l = 0; l < d; ++l) {
        const double t =
            x[static_cast<std::size_t>(i) * d + l] * w[static_cast<std::size_t>(l) * k + j];
        z.add(t, t);
      }
      // d + 1 terms; one more rounding for a sum kept wider than float32, then converted.
      const Interval out = round_in(z.result(u, eta, 1), param);
      const double y = c.y[e];
      Interval r = widen(out.lo - y, out.hi - y, 0.0);
      r = widen(r.lo, r.hi, (u + double_u) * r.magnitude() + eta);
      const bool over = !r.finite() || !(2.0 * z.magnitude * (1.0 + u) < float32_max);
      gout_over[e] = over;
      loss_over = loss_over || over;
      if (over) continue;
      // (L) with the residual's interval for E_r.
      const double rc = r.lo / 2.0 + r.hi / 2.0;
      const double er = std::max(up(r.hi - rc), up(rc - r.lo));
      loss_center += rc * rc;
      loss_error += er * (2.0 * std::abs(rc) + er) * (1.0 + g_l) + g_l * rc * rc;
      loss_partial += (std::abs(rc) + er) * (std::abs(rc) + er);
      // Up to three scale operations in float32, then the compute copy's rounding.
      const double lo = scale * r.lo, hi = scale * r.hi;
      const double ge = (gamma(3.0, u) + 2.0 * double_u) * std::max(std::abs(lo), std::abs(hi));
      gout[e] = round_in(widen(lo, hi, ge + 3.0 * eta * (1.0 + gamma(3.0, u))), param);
      if (!gout[e].finite()) gout_over[e] = 1;
    }
  }
  StagedGradients out;
  {
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
  // additions, a divide factor, and the conversion when the compute copy differs.
  const int shards = std::max(1, c.num_shards);
  const Format& reduce = st.reduce;
  const bool reduce_wide = !reduce.narrower_than_float32();
  const double u_reduce = reduce_wide ? u : std::max(u, reduce.unit_roundoff());
  const double eta_reduce = reduce_wide ? eta : reduce.min_subnormal() / 2.0;
  const int conversions = reduce == param ? 0 : 1;
  // `x_at(i)` the compute copy's x~ of row i (1 for the bias).
  auto gradient = [&](int j, auto x_at, bool column_over) {
    if (column_over) return staged_value({}, true);
    Sum total;
    bool over = false;
    for (int s = 0; s < shards; ++s) {
      const auto [begin, end] = split_part(n, shards, s);
      Sum part;
      for (int i = static_cast<int>(begin); i < end; ++i) {
        const Interval& g = gout[static_cast<std::size_t>(i) * k + j];
        const double xi = x_at(i);
        part.add(xi * g.lo, xi * g.hi);
      }
      over = over || !(2.0 * part.magnitude * (1.0 + u) < float32_max);
      const Interval rank = round_in(part.result(u, eta, 1), param);
      total.add(rank.lo, rank.hi);
    }
    over = over || !(2.0 * total.magnitude * (1.0 + u_reduce) < float32_max);
    return staged_value(total.result(u_reduce, eta_reduce, 1 + conversions), over);
  };
  std::vector<char> column_over(static_cast<std::size_t>(k), 0);
  for (std::size_t e = 0; e < nk; ++e) column_over[e % k] = column_over[e % k] || gout_over[e];
  out.grad_kernel.resize(static_cast<std::size_t>(d) * k);
  for (int l = 0; l < d; ++l) {
    bool x_over = false;
    for (int i = 0; i < n; ++i)
      x_over = x_over || !std::isfinite(x[static_cast<std::size_t>(i) * d + l]);
    for (int j = 0; j < k; ++j) {
      out.grad_kernel[static_cast<std::size_t>(l) * k + j] = gradient(
          j, [&](int i) { return x[static_cast<std::size_t>(i) * d + l]; },
          column_over[j] || x_over);
    }
  }
  out.grad_bias.resize(static_cast<std::size_t>(k));
  for (int j = 0; j < k; ++j)
    out.grad_bias[j] = gradient(
        j, [](int) { return 1.0; }, column_over[j]);
  return out;
}

}  // namespace sgdc::reference
