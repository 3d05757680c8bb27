#include "optimizer_bound.hpp"

#include <cmath>
#include <vector>

#include "sgdc/reference/float32.hpp"

namespace sgdc::reference {

namespace {

// As in error_bound.cpp: the bounds' own evaluation.
constexpr double evaluation_slack = 1.0 + 0x1p-28;

// One parameter element's way through the optimizer (section 12), in magnitudes: what
// the bounds of the buffer and the update are made of.
struct Element {
  double p = 0.0;       // |p|
  double buffer = 0.0;  // |buf| before the step (0 when fresh)
  double g = 0.0;       // |g|, the exact gradient
  double bg = 0.0;      // its bound (G)
  bool g_overflow = false;
  double buffer_new = 0.0;  // |buf'|, exact
  double p_new = 0.0;       // |p'|, exact
  double ge = 0.0;          // an upper bound of |g + wd p| (coupled) or |g|
  double direction = 0.0;   // an upper bound of |d|: buf', or ge + mu buf' (Nesterov)
};

}  // namespace

void apply_optimizer_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model,
                            StepBounds& bounds) {
  const Optimizer& o = c.optimizer;
  if (o.kind == Optimizer::Kind::sgd) return;
  const OperationModel op = operation_model(model);
  const double u = op.u, eta = op.eta, tau = op.tau, omega = op.omega;
  auto over = [omega](double magnitude) { return !(magnitude < omega); };
  // The hyperparameters as read in the declared format (section 13).
  const bool inputs_over = std::abs(static_cast<double>(c.lr)) > omega ||
                           std::abs(static_cast<double>(o.momentum)) > omega ||
                           std::abs(static_cast<double>(o.weight_decay)) > omega ||
                           std::abs(1.0 - static_cast<double>(o.dampening)) > omega;
  const double lr = std::abs(static_cast<double>(c.lr));
  const double wd = std::abs(static_cast<double>(o.weight_decay));
  const double mu = std::abs(static_cast<double>(o.momentum));
  const double keep = std::abs(1.0 - static_cast<double>(o.dampening));  // exact in double
  const bool decoupled = o.decay == Optimizer::Decay::decoupled;
  const bool fresh = c.fresh_state();
  const double g2 = gamma(2.0, u), g3 = gamma(3.0, u), g4 = gamma(4.0, u);

  auto element = [&](Element& e, ElementBound& p_bound, double& from_grad, ElementBound& b_bound) {
    // (O1) the decayed gradient ge = g + wd p: the product and the sum, or one FMA.
    const double e_ge =
        decoupled || wd == 0.0
            ? e.bg
            : (1.0 + u) * (e.bg + wd * tau + u * wd * (e.p + tau) + eta) + u * e.ge + eta;
    // (O2) the buffer: ge when fresh; mu buf + (1 - damp) ge, three roundings a term.
    const double e_b = fresh ? e_ge
                             : mu * tau + keep * e_ge +
                                   g3 * (mu * (e.buffer + tau) + keep * (e.ge + e_ge)) +
                                   3.0 * eta * (1.0 + g3);
    // (O3) the direction: buf', or ge + mu buf' (Nesterov), two roundings a term.
    const double e_d = o.nesterov
                           ? e_ge + mu * e_b + g2 * (e.ge + e_ge + mu * (e.buffer_new + e_b)) +
                                 2.0 * eta * (1.0 + g2)
                           : e_b;
    // (O4) the update. Coupled: p - lr d, as (U) with d for the gradient. Decoupled:
    // p (1 - lr wd) - lr d in any of its forms, at most four roundings a term.
    double e_p;
    if (!decoupled || wd == 0.0) {
      e_p = (1.0 + u) * (tau + lr * e_d + (1.0 + u) * tau * (e.direction + e_d) +
                         u * lr * (e.direction + e_d) + eta) +
            u * e.p_new + eta;
    } else {
      const double p_read = e.p + tau, lr_read = lr + tau, d_read = e.direction + e_d;
      e_p = (1.0 + g4) * (tau * (1.0 + lr * wd) + lr * e_d + tau * (d_read + wd * p_read)) +
            g4 * (p_read * (1.0 + lr_read * wd) + lr_read * d_read) + 4.0 * eta * (1.0 + g4);
    }
    b_bound.bound = e_b * evaluation_slack;
    // An intermediate beyond float32's range (the decayed gradient, the buffer, the
    // direction) makes +-inf or NaN acceptable downstream, even where lr is 0 (0 inf).
    // In a narrower format the parameter and the buffer may overflow as they are read.
    const bool read_over = inputs_over || e.p > omega || e.buffer > omega;
    const bool ge_over = e.g_overflow || read_over || over((e.ge + e_ge) * (1.0 + g2));
    b_bound.may_overflow =
        ge_over || over((mu * (e.buffer + tau) + keep * (e.ge + e_ge)) * (1.0 + g3));
    p_bound.bound = e_p * evaluation_slack;
    p_bound.may_overflow =
        b_bound.may_overflow || over((e.direction + e_d) * (1.0 + g2)) ||
        over((e.p + tau + lr * (e.direction + e_d) + lr * wd * e.p) * (1.0 + g4));
    // update_rule's consistency with a reported gradient is not judged with momentum:
    // the slack is the bound itself.
    from_grad = p_bound.bound;
  };

  auto run = [&](const std::vector<float>& params, const std::vector<float>& buffer,
                 const std::vector<double>& g, const std::vector<ElementBound>& g_bounds,
                 const std::vector<double>& p_new, const std::vector<double>& b_new,
                 std::vector<ElementBound>& p_out, std::vector<double>& from_grad,
                 std::vector<ElementBound>& b_out) {
    b_out.resize(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      Element e;
      e.p = std::abs(static_cast<double>(params[i]));
      e.buffer = fresh ? 0.0 : std::abs(static_cast<double>(buffer[i]));
      e.g = g[i];
      e.bg = g_bounds[i].bound;
      e.g_overflow = g_bounds[i].may_overflow;
      e.buffer_new = b_new[i];
      e.p_new = p_new[i];
      // |g + wd p| <= |g| + wd |p|: the magnitudes are upper bounds, so is the sum.
      e.ge = decoupled ? e.g : e.g + wd * e.p;
      e.direction = o.nesterov ? e.ge + mu * e.buffer_new : e.buffer_new;
      element(e, p_out[i], from_grad[i], b_out[i]);
    }
  };
  run(c.kernel, c.momentum_kernel, exact.grad_kernel, bounds.grad_kernel, exact.kernel,
      exact.momentum_kernel, bounds.kernel, bounds.kernel_from_grad, bounds.momentum_kernel);
  run(c.bias, c.momentum_bias, exact.grad_bias, bounds.grad_bias, exact.bias, exact.momentum_bias,
      bounds.bias, bounds.bias_from_grad, bounds.momentum_bias);
}

}  // namespace sgdc::reference
