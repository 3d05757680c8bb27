#include "clipping_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "optimizer_bound.hpp"

namespace sgdc::reference {

namespace {
constexpr double infinity = std::numeric_limits<double>::infinity();
// As in error_bound.cpp: the bounds' own evaluation.
constexpr double evaluation_slack = 1.0 + 0x1p-28;
// Roundings of the norm's computation a term may see besides the sum's (section 17, N1):
// its square, and up to three square roots squared again (a norm per tensor, per shard,
// and the norm of those norms), three roundings each, and the last root.
constexpr double norm_extra_roundings = 16.0;
}  // namespace

ClipFactorBound clip_factor_bound(const Case& c, const ExactMagnitudes& exact,
                                  const StepBounds& bounds, const OperationModel& op) {
  if (!c.clip) throw std::invalid_argument("clip_factor_bound: a case without clipping");
  const double u = op.u, eta = op.eta, omega = op.omega;
  const double terms = static_cast<double>(exact.grad_kernel.size() + exact.grad_bias.size());
  ClipFactorBound out;

  // (N0) the exact norm N from the exact gradients' magnitudes, each within 2^-53 of
  // itself, their squares and sum in double: N within delta of N_d relatively.
  double sum = 0.0, err_sum = 0.0;
  bool grad_over = false;
  auto add = [&](const std::vector<double>& g, const std::vector<ElementBound>& b) {
    for (std::size_t i = 0; i < g.size(); ++i) {
      sum += g[i] * g[i];
      err_sum += b[i].bound * b[i].bound;
      grad_over = grad_over || b[i].may_overflow || !std::isfinite(b[i].bound);
    }
  };
  add(exact.grad_kernel, bounds.grad_kernel);
  add(exact.grad_bias, bounds.grad_bias);
  const double delta = gamma(terms + 4.0, 0x1p-53);
  const double n_d = std::sqrt(sum);
  out.norm_lo = n_d * (1.0 - delta);
  out.norm_hi = n_d * (1.0 + delta) * evaluation_slack;
  // (N1) the computed norm of the computed gradients: |N^ - N| <= E_N, E_g = ||e_g||_2.
  const double e_g = std::sqrt(err_sum) * evaluation_slack;
  const double gamma_s = gamma(terms + norm_extra_roundings, u);
  const double delta_n = std::sqrt(1.0 + gamma_s) * (1.0 + u) - 1.0;
  const double absolute =
      std::sqrt((terms + norm_extra_roundings) * eta * (1.0 + gamma_s)) * (1.0 + u);
  out.e_norm = (e_g + delta_n * (out.norm_hi + e_g) + absolute) * evaluation_slack;
  // (N2) the squares' sum may overflow: the computed norm may be +inf (its factor 0) or
  // NaN, and no bound holds for anything the optimizer makes.
  out.norm_may_overflow =
      grad_over ||
      !((out.norm_hi + e_g) * (out.norm_hi + e_g) * (1.0 + gamma_s) * evaluation_slack < omega);

  // (C) the factor: c = min(1, M / (N + eps)) is at most c_hi; the computed one's distance
  // from it at most E_c (min(1, .) is 1-Lipschitz, and both are 1 when even the largest
  // computed norm leaves M / (N^ + eps) >= 1).
  const double m = c.clip->max_norm, eps = c.clip->eps;
  out.c_hi = std::min(1.0, m / (out.norm_lo + eps) * evaluation_slack);
  out.e_c = 1.0;
  if (m / ((out.norm_hi + out.e_norm + eps) * evaluation_slack) >= 1.0) {
    out.e_c = 0.0;
  } else if (out.norm_lo + eps - out.e_norm > 0.0) {
    out.e_c =
        std::min(1.0, m * out.e_norm / ((out.norm_lo + eps - out.e_norm) * (out.norm_lo + eps)) *
                          evaluation_slack);
  }
  return out;
}

void apply_clipping_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model,
                           StepBounds& bounds) {
  const OperationModel op = operation_model(model);
  const double u = op.u, eta = op.eta;
  const ClipFactorBound f = clip_factor_bound(c, exact, bounds, op);
  const double m = c.clip->max_norm, c_hi = f.c_hi, e_c = f.e_c;
  const bool norm_over = f.norm_may_overflow;
  const double c_read = std::min(1.0, c_hi + e_c);  // the computed factor is at most this

  // (C1) each clipped element: g^ c^ (1 + theta_3) for c^ within E_c of c, three roundings
  // (the denominator's sum, the quotient, the product; optax's (g / N) M the same), each
  // maybe underflowing: torch's factor M / (N + eps) by eta, which g^ then multiplies;
  // optax's g / N by eta, which M multiplies; the product by eta.
  const double g3 = gamma(3.0, u);
  ExactMagnitudes clipped = exact;
  StepBounds clipped_bounds = bounds;
  auto clip = [&](const std::vector<double>& g, std::vector<double>& g_out,
                  std::vector<ElementBound>& b) {
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double eg = b[i].bound;
      g_out[i] = c_hi * g[i] * (1.0 + 0x1p-50);
      b[i].bound = (c_read * eg + g[i] * e_c + g3 * c_read * (g[i] + eg) +
                    (1.0 + g3) * eta * (2.0 + m + g[i] + eg)) *
                   evaluation_slack;
    }
  };
  clip(exact.grad_kernel, clipped.grad_kernel, clipped_bounds.grad_kernel);
  clip(exact.grad_bias, clipped.grad_bias, clipped_bounds.grad_bias);

  // (O) the optimizer's bounds from the clipped gradients, which the optimizer reads as
  // stored (plain SGD: O1 and O4).
  apply_stored_gradient_bounds(c, clipped, model, clipped_bounds);
  const bool buffer = info(c.optimizer.kind).buffer, second = info(c.optimizer.kind).second_moment;
  for (Output o : all_outputs) {
    const bool optimizer_output =
        o == Output::kernel || o == Output::bias ||
        (buffer && (o == Output::momentum_kernel || o == Output::momentum_bias)) ||
        (second && (o == Output::second_moment_kernel || o == Output::second_moment_bias));
    if (!optimizer_output) continue;
    bounds[o] = std::move(clipped_bounds[o]);
    if (norm_over)
      for (ElementBound& b : bounds[o]) b = {infinity, true};
  }
  // update_rule's consistency with a reported gradient is not judged with clipping (the
  // reported gradient is the loss's, not the one the update read): the slack is the bound.
  auto slack = [](const std::vector<ElementBound>& b, std::vector<double>& out) {
    out.resize(b.size());
    for (std::size_t i = 0; i < b.size(); ++i) out[i] = b[i].bound;
  };
  slack(bounds.kernel, bounds.kernel_from_grad);
  slack(bounds.bias, bounds.bias_from_grad);
}

}  // namespace sgdc::reference
