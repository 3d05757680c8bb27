#include "adagrad_step.hpp"

#include <cmath>
#include <vector>

namespace sgdc::conformance::builtin {

namespace {

using reference::Optimizer;

// One parameter tensor's update, element by element, in the form `form` (the arithmetic
// in T: float, or double for a sum kept wide).
template <class T>
void update(const reference::Case& c, AdagradForm form, Bug bug, const std::vector<float>& p,
            const std::vector<float>& g, const std::vector<float>& s_in, std::vector<float>& p_out,
            std::vector<float>& s_out) {
  const Optimizer& o = c.optimizer;
  const bool decoupled = o.decay == Optimizer::Decay::decoupled;
  const T eps = o.eps, eps_root = o.eps_root, wd = o.weight_decay, lr = c.lr;
  // The sum before the step: the case's, or the initial value (the bugs: the initial value
  // left out; the sum started afresh at every step).
  const bool fresh = c.fresh_state() || bug == Bug::adagrad_sum_reset_every_step;
  const T initial =
      bug == Bug::adagrad_initial_value_ignored ? T(0) : T(o.initial_accumulator_value);
  // The bug: eps placed on the other side of the root than the case says.
  const bool swap_eps = bug == Bug::adagrad_eps_swapped;
  const T root_eps = swap_eps ? eps : eps_root, outer_eps = swap_eps ? eps_root : eps;
  p_out.resize(p.size());
  s_out.resize(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const T pi = p[i], gi = g[i];
    const T s = fresh ? initial : T(s_in[i]);
    const T ge = !decoupled && wd != T(0) ? gi + wd * pi : gi;
    T next, s_new;
    switch (form) {
      case AdagradForm::torch: {
        // grad.add(param, alpha=wd); state_sum.addcmul_(grad, grad); std = sqrt(sum) + eps;
        // param.addcdiv_(grad, std, value=-lr).
        s_new = std::fma(ge, ge, s);
        const T std_dev = std::sqrt(s_new + root_eps) + outer_eps;
        // addcdiv: value * tensor1 / tensor2, the product first.
        next = pi + (-lr * ge) / std_dev;
        if (decoupled && wd != T(0)) next -= lr * wd * pi;
        break;
      }
      case AdagradForm::optax: {
        // sum_of_squares = g^2 + state; where(sum > 0, rsqrt(sum + eps), 0) * g; then
        // add_decayed_weights (decoupled) and scale(-lr).
        s_new = ge * ge + s;
        const T inverse = s_new > T(0) ? T(1) / (std::sqrt(s_new + root_eps) + outer_eps) : T(0);
        T a = inverse * ge;
        if (decoupled && wd != T(0)) a = std::fma(wd, pi, a);
        next = std::fma(-lr, a, pi);
        break;
      }
    }
    p_out[i] = static_cast<float>(next);
    s_out[i] = static_cast<float>(s_new);
  }
}

}  // namespace

void adagrad_step(const reference::Case& c, const Recipe& recipe, reference::StepResult& out) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    update<T>(c, recipe.adagrad, recipe.bug, c.kernel, out.grad_kernel, c.second_moment_kernel,
              out.kernel, out.second_moment_kernel);
    update<T>(c, recipe.adagrad, recipe.bug, c.bias, out.grad_bias, c.second_moment_bias, out.bias,
              out.second_moment_bias);
  };
  if (recipe.wide || recipe.wide_state) {
    run(0.0);
  } else {
    run(0.0f);
  }
}

}  // namespace sgdc::conformance::builtin
