#include "adam_step.hpp"

#include <cmath>
#include <vector>

namespace sgdc::conformance::builtin {

namespace {

using reference::Optimizer;

float bfloat16(float v) {
  // Round to nearest even at 8 significant bits (NaN and infinity kept).
  if (!std::isfinite(v) || v == 0.0f) return v;
  int e = 0;
  std::frexp(v, &e);
  const double quantum = std::ldexp(1.0, std::max(e - 1, -126) - 7);
  return static_cast<float>(std::nearbyint(static_cast<double>(v) / quantum) * quantum);
}

// One parameter tensor's update, element by element, in the form `form` (the arithmetic
// in T: float, or double for moments kept wide).
template <class T>
void update(const reference::Case& c, AdamForm form, Bug bug, const std::vector<float>& p,
            const std::vector<float>& g, const std::vector<float>& m_in,
            const std::vector<float>& v_in, std::vector<float>& p_out, std::vector<float>& m_out,
            std::vector<float>& v_out) {
  const Optimizer& o = c.optimizer;
  const bool fresh = c.fresh_state();
  // The bug: torch.optim.Adam's coupled decay where AdamW's decoupled is declared, and back.
  const bool decoupled =
      (o.decay == Optimizer::Decay::decoupled) != (bug == Bug::adam_decay_convention_swapped);
  // t = step + 1 (the bug: the counter before it advances).
  const double t =
      static_cast<double>(c.step) + (bug == Bug::adam_bias_correction_off_by_one ? 0 : 1);
  const T b1 = o.b1, b2 = o.b2, eps = o.eps, eps_root = o.eps_root, wd = o.weight_decay, lr = c.lr;
  const T c1 = T(1) - b1, c2 = T(1) - b2;
  // Bias corrections: in double (torch), or in T with T's pow.
  const double bc1_d = 1.0 - std::pow(static_cast<double>(o.b1), t);
  const double bc2_d = 1.0 - std::pow(static_cast<double>(o.b2), t);
  const T bc1 = form == AdamForm::torch ? T(bc1_d) : T(1) - std::pow(b1, T(t));
  const T bc2 = form == AdamForm::torch ? T(bc2_d) : T(1) - std::pow(b2, T(t));
  p_out.resize(p.size());
  m_out.resize(p.size());
  v_out.resize(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const T pi = p[i], gi = g[i];
    const T m = fresh ? T(0) : T(m_in[i]), v = fresh ? T(0) : T(v_in[i]);
    T ge = gi;
    if (!decoupled && wd != T(0))
      ge = form == AdamForm::textbook ? gi + wd * pi : std::fma(wd, pi, gi);
    T g_m = ge;  // the gradient the first moment reads
    if (bug == Bug::adam_decay_in_moment && decoupled) g_m = ge + wd * pi;
    T m_new, v_new;
    const T g2 = bug == Bug::adam_b2_on_gradient ? ge : ge * ge;
    switch (form) {
      case AdamForm::textbook:
        m_new = b1 * m + c1 * g_m;
        v_new = b2 * v + c2 * g2;
        break;
      case AdamForm::torch:
        m_new = std::fma(c1, g_m - m, m);  // lerp with weight 1 - b1 < 0.5 or not
        v_new = bug == Bug::adam_b2_on_gradient ? std::fma(c2, ge, v * b2)
                                                : std::fma(c2 * ge, ge, v * b2);
        break;
      case AdamForm::optax_fused:
        m_new = std::fma(c1, g_m, b1 * m);
        v_new = std::fma(c2, g2, b2 * v);
        break;
    }
    if (bug == Bug::adam_moments_bfloat16) {
      m_new = bfloat16(static_cast<float>(m_new));
      v_new = bfloat16(static_cast<float>(v_new));
    }
    T next;
    const T root_eps = bug == Bug::adam_eps_inside ? eps : eps_root;
    const T outer_eps = bug == Bug::adam_eps_inside ? T(0) : eps;
    switch (form) {
      case AdamForm::textbook: {
        const T a = (m_new / bc1) / (std::sqrt(v_new / bc2 + root_eps) + outer_eps);
        next = decoupled ? pi - lr * (a + wd * pi) : pi - lr * a;
        break;
      }
      case AdamForm::torch: {
        // p (1 - lr wd) first; then p - (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps).
        const T decayed = decoupled ? pi * T(1.0 - static_cast<double>(c.lr) * o.weight_decay) : pi;
        const T step_size = T(static_cast<double>(c.lr) / bc1_d);
        const T root = root_eps == T(0) ? std::sqrt(v_new) / T(std::sqrt(bc2_d))
                                        : std::sqrt(v_new / T(bc2_d) + root_eps);
        next = decayed + (-step_size * m_new) / (root + outer_eps);
        break;
      }
      case AdamForm::optax_fused: {
        const T mh = m_new * (T(1) / bc1), vh = v_new * (T(1) / bc2);
        T a = mh / (std::sqrt(vh + root_eps) + outer_eps);
        if (decoupled) a = std::fma(wd, pi, a);
        next = std::fma(-lr, a, pi);
        break;
      }
    }
    p_out[i] = static_cast<float>(next);
    m_out[i] = static_cast<float>(m_new);
    v_out[i] = static_cast<float>(v_new);
    if (bug == Bug::adam_state_not_advanced) {
      m_out[i] = fresh ? 0.0f : m_in[i];
      v_out[i] = fresh ? 0.0f : v_in[i];
    }
  }
}

}  // namespace

void adam_step(const reference::Case& c, const Recipe& recipe, reference::StepResult& out) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    update<T>(c, recipe.adam, recipe.bug, c.kernel, out.grad_kernel, c.momentum_kernel,
              c.second_moment_kernel, out.kernel, out.momentum_kernel, out.second_moment_kernel);
    update<T>(c, recipe.adam, recipe.bug, c.bias, out.grad_bias, c.momentum_bias,
              c.second_moment_bias, out.bias, out.momentum_bias, out.second_moment_bias);
  };
  if (recipe.wide || recipe.wide_state) {
    run(0.0);
  } else {
    run(0.0f);
  }
}

}  // namespace sgdc::conformance::builtin
