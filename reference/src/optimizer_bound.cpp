#include "optimizer_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
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

// (O4) The update's bound from the direction's magnitude `direction` and bound `e_d`:
// coupled p - lr d, as (U) with d for the gradient; decoupled p (1 - lr wd) - lr d in any
// of its forms, at most four roundings a term.
double update_bound(bool decoupled, double p, double p_new, double direction, double e_d, double lr,
                    double wd, double u, double eta, double tau) {
  if (!decoupled || wd == 0.0) {
    return (1.0 + u) * (tau + lr * e_d + (1.0 + u) * tau * (direction + e_d) +
                        u * lr * (direction + e_d) + eta) +
           u * p_new + eta;
  }
  const double g4 = gamma(4.0, u);
  const double p_read = p + tau, lr_read = lr + tau, d_read = direction + e_d;
  return (1.0 + g4) * (tau * (1.0 + lr * wd) + lr * e_d + tau * (d_read + wd * p_read)) +
         g4 * (p_read * (1.0 + lr_read * wd) + lr_read * d_read) + 4.0 * eta * (1.0 + g4);
}

// (A4) The relative error of a computed bias correction 1 - b^t: b^t within
// (|t ln b| + 2) u of itself relatively (a power in the working precision, correctly
// rounded or by exp and log, t itself rounded to float32 included), then the
// subtraction's rounding.
double bias_correction_error(double b, double t, double u, double eta) {
  const double power = std::pow(b, t), correction = 1.0 - power;
  const double exponent = b == 0.0 ? 0.0 : std::abs(t * std::log(b));
  return u + ((exponent + 2.0) * u * power + eta) / correction;
}

void apply_adam_bounds(const Case& c, const ExactMagnitudes& exact, const OperationModel& op,
                       StepBounds& bounds) {
  const Optimizer& o = c.optimizer;
  const double u = op.u, eta = op.eta, tau = op.tau, omega = op.omega;
  auto over = [omega](double magnitude) { return !(magnitude < omega); };
  // Adagrad (section 16) is this chain with m' = ge, v' = v + ge^2 and no correction.
  const bool adagrad = o.kind == Optimizer::Kind::adagrad;
  const bool inputs_over = std::abs(static_cast<double>(c.lr)) > omega ||
                           std::abs(static_cast<double>(o.weight_decay)) > omega ||
                           static_cast<double>(o.eps) > omega ||
                           static_cast<double>(o.eps_root) > omega ||
                           static_cast<double>(o.initial_accumulator_value) > omega;
  const double lr = std::abs(static_cast<double>(c.lr)), wd = static_cast<double>(o.weight_decay);
  const double b1 = o.b1, b2 = o.b2, eps = o.eps, eps_root = o.eps_root;
  const bool decoupled = o.decay == Optimizer::Decay::decoupled;
  const bool fresh = c.fresh_state();
  const double g2 = gamma(2.0, u), g4 = gamma(4.0, u), g5 = gamma(5.0, u);
  const double t = static_cast<double>(c.step) + 1.0;
  const double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
  // (A5) m'/bc1 and v'/bc2: the correction's error, a division or a reciprocal and a
  // product.
  // A correction whose error may reach its own size bounds nothing.
  auto theta = [&](double epsilon) {
    return epsilon < 1.0 ? (1.0 + u) * (1.0 + u) / (1.0 - epsilon) - 1.0
                         : std::numeric_limits<double>::infinity();
  };
  const double theta1 = adagrad ? 0.0 : theta(bias_correction_error(b1, t, u, eta));
  const double theta2 = adagrad ? 0.0 : theta(bias_correction_error(b2, t, u, eta));
  // (D2) With eps = 0 (Adagrad as optax has it) the denominator is at least the computed
  // sqrt(eps_root): eps_root read and added to v' >= 0, the root within five roundings.
  const double root_floor =
      std::sqrt(std::max(static_cast<double>(eps_root) * (1.0 - u) - eta, 0.0)) * (1.0 - g5) - eta;
  // (D3) torch forms its scalars in double and converts them to the parameters' format as
  // it applies them: Adam's step size lr / bc1 (addcdiv's value) and AdamW's 1 - lr wd
  // (mul_'s). Past the largest finite value the scalar is +-inf, or the conversion raises,
  // and p' may be NaN even where m' = 0 (inf 0).
  const bool scalar_over = !adagrad && (over(lr / bc1 * (1.0 + g4)) ||
                                        (decoupled && over((1.0 + lr * wd) * (1.0 + g4))));

  auto run = [&](const std::vector<float>& params, const std::vector<float>& m_before,
                 const std::vector<float>& v_before, const std::vector<double>& g,
                 const std::vector<ElementBound>& g_bounds, const std::vector<double>& p_new,
                 const std::vector<double>& m_new, const std::vector<double>& v_new,
                 std::vector<ElementBound>& p_out, std::vector<double>& from_grad,
                 std::vector<ElementBound>& m_out, std::vector<ElementBound>& v_out) {
    m_out.resize(params.size());
    v_out.resize(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double p = std::abs(static_cast<double>(params[i]));
      const double m = fresh || adagrad ? 0.0 : std::abs(static_cast<double>(m_before[i]));
      const double v = fresh ? static_cast<double>(o.initial_accumulator_value)
                             : static_cast<double>(v_before[i]);
      const double bg = g_bounds[i].bound;
      // (A1) the decayed gradient, as (O1).
      const double ge = decoupled ? g[i] : g[i] + wd * p;
      const double e_ge =
          decoupled || wd == 0.0
              ? bg
              : (1.0 + u) * (bg + wd * tau + u * wd * (p + tau) + eta) + u * ge + eta;
      // (A2) m' = b1 m + (1 - b1) ge, or m + (1 - b1)(ge - m) (lerp): four roundings a
      // term of m + (1 - b1)(|ge| + |m|), which bounds both forms' terms.
      const double m_read = m + tau, ge_read = ge + e_ge;
      // (D1) Adagrad's numerator is ge itself.
      const double e_m = adagrad ? e_ge
                                 : b1 * tau + (1.0 - b1) * e_ge +
                                       g4 * (m_read + (1.0 - b1) * (ge_read + m_read)) +
                                       4.0 * eta * (1.0 + g4);
      // (A3) v' = b2 v + (1 - b2) ge^2: the square's error (2 |ge| + e) e, four roundings
      // a term.
      const double v_read = v + tau;
      // (D1) Adagrad's v' = v + ge^2: the square and the sum (or one FMA), two roundings.
      const double e_v = adagrad ? tau + (2.0 * ge + e_ge) * e_ge +
                                       g2 * (v_read + ge_read * ge_read) + 2.0 * eta * (1.0 + g2)
                                 : b2 * tau + (1.0 - b2) * (2.0 * ge + e_ge) * e_ge +
                                       g4 * (v_read + (1.0 - b2) * (ge_read * ge_read + v_read)) +
                                       4.0 * eta * (1.0 + g4);
      // (A5) the bias-corrected moments.
      // Adagrad: no correction, so none of its error (m_new holds no first moment: ge).
      const double mh = adagrad ? ge : m_new[i] / bc1, vh = adagrad ? v_new[i] : v_new[i] / bc2;
      const double e_mh = adagrad ? e_m : e_m * (1.0 + theta1) / bc1 + mh * theta1 + 2.0 * eta;
      const double e_vh = adagrad ? e_v : e_v * (1.0 + theta2) / bc2 + vh * theta2 + 2.0 * eta;
      // (A6) s = sqrt(vh + eps_root): the sum's rounding, the square root's sensitivity
      // (|sqrt a - sqrt b| = |a - b| / (sqrt a + sqrt b) <= sqrt |a - b|), then five
      // roundings (a square root within one ulp, and torch's sqrt(v) / sqrt(bc2) form).
      const double w = vh + eps_root, e_w = e_vh + u * (w + e_vh) + eta;
      const double s = std::sqrt(w);
      const double e_s0 = std::min(std::sqrt(e_w), e_w / (s + std::sqrt(std::max(w - e_w, 0.0))));
      const double e_s = e_s0 + g5 * (s + e_s0) + eta;
      // (A7) D = s + eps, at least eps as computed (s >= 0); a = mh / D.
      const double den = s + eps, e_den = e_s + u * (den + e_s) + eta;
      const double den_floor = eps == 0.0 ? root_floor * (1.0 - u) - eta : eps * (1.0 - u) - eta;
      const double den_low = std::max(den * (1.0 - 0x1p-50) - e_den, den_floor);
      const double a = mh / den;
      const double e_a0 = (e_mh + mh * e_den / den) / den_low;
      // (D2) Adagrad's a may be ge * rsqrt(w) (optax): a reciprocal and a product, two
      // roundings where the quotient has one.
      double e_a = adagrad ? e_a0 + g2 * (a + e_a0) + 2.0 * eta : e_a0 + u * (a + e_a0) + eta;
      // (D4) optax's Adagrad steps only where the computed sum is above 0
      // (where(sum > 0, rsqrt(sum + eps), 0)): where the exact v' lies within its bound of
      // 0, the sum may round to 0 and the direction be 0, off by all of a.
      if (adagrad && v_new[i] <= e_v * evaluation_slack) e_a = std::max(e_a, a + e_a0);
      // (A8) the update, as (O4) with a for the direction.
      // (A8) torch's addcdiv forms lr m' before dividing by D: that product's underflow,
      // eta, divided by D.
      // Adam's step size lr / bc1, converted to float32 as addcdiv's scalar, may be
      // subnormal (lr near the smallest float32): its absolute error eta, times m' / D.
      const double e_step_size = adagrad ? 0.0 : (1.0 + g4) * eta * (m_new[i] + e_m) / den_low;
      const double e_p = update_bound(decoupled, p, p_new[i], a, e_a, lr, wd, u, eta, tau) +
                         (1.0 + g4) * eta / den_low + e_step_size;
      m_out[i].bound = e_m * evaluation_slack;
      v_out[i].bound = e_v * evaluation_slack;
      const bool read_over = inputs_over || p > omega || m > omega || v > omega;
      const double v_sum =
          adagrad ? v_read + ge_read * ge_read : v_read + (1.0 - b2) * (ge_read * ge_read + v_read);
      const bool ge_over = g_bounds[i].may_overflow || read_over || over(ge_read * (1.0 + u));
      m_out[i].may_overflow =
          ge_over || over((m_read + (1.0 - b1) * (ge_read + m_read)) * (1.0 + g4));
      v_out[i].may_overflow = ge_over || over(v_sum * (1.0 + g4)) || over(ge_read * ge_read);
      // Where anything under the square root may pass the largest finite value (ge^2, v',
      // the corrected vh = v' / bc2 of optax's form, vh + eps_root), it may be +inf and
      // the direction mh / (sqrt(inf) + eps) = 0: a finite p' with no accuracy at all.
      // Beyond that point no bound exists.
      const bool root_over =
          v_out[i].may_overflow || over((vh + e_vh) * (1.0 + g4)) || over((w + e_w) * (1.0 + u));
      p_out[i].bound = root_over ? std::numeric_limits<double>::infinity() : e_p * evaluation_slack;
      from_grad[i] = p_out[i].bound;
      // torch's addcdiv(m, den, value=-lr) multiplies before it divides: lr m' (lr / bc1
      // times m' for Adam) is an intermediate too.
      p_out[i].may_overflow = scalar_over || m_out[i].may_overflow || v_out[i].may_overflow ||
                              over((mh + e_mh) * (1.0 + g4)) || over((vh + e_vh) * (1.0 + g4)) ||
                              over((a + e_a) * (1.0 + u)) || over(lr * (mh + e_mh) * (1.0 + g4)) ||
                              over((p + tau + lr * (a + e_a) + lr * wd * p) * (1.0 + g4));
    }
    if (adagrad) m_out.clear();  // no first moment
  };
  run(c.kernel, c.momentum_kernel, c.second_moment_kernel, exact.grad_kernel, bounds.grad_kernel,
      exact.kernel, exact.momentum_kernel, exact.second_moment_kernel, bounds.kernel,
      bounds.kernel_from_grad, bounds.momentum_kernel, bounds.second_moment_kernel);
  run(c.bias, c.momentum_bias, c.second_moment_bias, exact.grad_bias, bounds.grad_bias, exact.bias,
      exact.momentum_bias, exact.second_moment_bias, bounds.bias, bounds.bias_from_grad,
      bounds.momentum_bias, bounds.second_moment_bias);
}

}  // namespace

void apply_optimizer_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model,
                            StepBounds& bounds) {
  const Optimizer& o = c.optimizer;
  if (o.kind == Optimizer::Kind::sgd) return;
  if (o.kind == Optimizer::Kind::adam || o.kind == Optimizer::Kind::adagrad)
    return apply_adam_bounds(c, exact, operation_model(model), bounds);
  const OperationModel op = operation_model(model);
  const double u = op.u, eta = op.eta, tau = op.tau, omega = op.omega;
  auto over = [omega](double magnitude) { return !(magnitude < omega); };
  // The hyperparameters as read in the declared format (section 13).
  const bool inputs_over = std::abs(static_cast<double>(c.lr)) > omega ||
                           std::abs(static_cast<double>(o.momentum)) > omega ||
                           std::abs(static_cast<double>(o.weight_decay)) > omega ||
                           std::abs(1.0 - static_cast<double>(applied_dampening(o))) > omega;
  const double lr = std::abs(static_cast<double>(c.lr));
  const double wd = std::abs(static_cast<double>(o.weight_decay));
  const double mu = std::abs(static_cast<double>(o.momentum));
  const double keep = std::abs(1.0 - static_cast<double>(applied_dampening(o)));  // exact
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
    // (O4) the update.
    const double e_p = update_bound(decoupled, e.p, e.p_new, e.direction, e_d, lr, wd, u, eta, tau);
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

void apply_stored_gradient_bounds(const Case& c, const ExactMagnitudes& exact,
                                  const ErrorModel& model, StepBounds& bounds) {
  const std::size_t dk = c.kernel.size(), k = c.bias.size();
  bounds.kernel.resize(dk);
  bounds.bias.resize(k);
  bounds.kernel_from_grad.resize(dk);
  bounds.bias_from_grad.resize(k);
  if (c.optimizer.kind != Optimizer::Kind::sgd)
    return apply_optimizer_bounds(c, exact, model, bounds);
  // Plain SGD is momentum 0 from a fresh buffer: the buffer is ge, the update (O1, O4)
  // p - lr ge; ge's magnitude enters as the upper bound |g| + wd |p|. The buffer's
  // bounds go.
  Case as_momentum = c;
  Optimizer& o = as_momentum.optimizer;
  o.kind = Optimizer::Kind::momentum;
  o.momentum = 0.0f;
  o.dampening = 0.0f;
  o.nesterov = false;
  o.decay = Optimizer::Decay::coupled;
  ExactMagnitudes with_buffer = exact;
  const double wd = std::abs(static_cast<double>(c.optimizer.weight_decay));
  auto ge = [wd](const std::vector<double>& g, const std::vector<float>& p) {
    std::vector<double> out(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      out[i] = g[i] + wd * std::abs(static_cast<double>(p[i]));
    return out;
  };
  with_buffer.momentum_kernel = ge(exact.grad_kernel, c.kernel);
  with_buffer.momentum_bias = ge(exact.grad_bias, c.bias);
  apply_optimizer_bounds(as_momentum, with_buffer, model, bounds);
  bounds.momentum_kernel.clear();
  bounds.momentum_bias.clear();
}

}  // namespace sgdc::reference
