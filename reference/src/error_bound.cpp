#include "sgdc/reference/error_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sgdc/reference/float32.hpp"

namespace sgdc::reference {

namespace {
constexpr double infinity = std::numeric_limits<double>::infinity();

// The bounds are sums of non-negative terms evaluated in double; this factor covers
// their own rounding (docs/error-model.md, section "Evaluating the bound").
constexpr double evaluation_slack = 1.0 + 0x1p-28;

// Roundings each output element may see on its way (docs/error-model.md, table R).
double residual_roundings(const Case& c) { return c.d + 3.0; }
double loss_roundings(const Case& c) { return static_cast<double>(c.n) * c.k + 4.0; }
double grad_roundings(const Case& c) { return c.n + 4.0; }

struct Subnormal {
  double eta;  // absolute error of one operation whose result underflows
  double tau;  // perturbation of an input read as zero
};
Subnormal subnormal_terms(Subnormals s) {
  if (s == Subnormals::ieee) return {0x1p-150, 0.0};
  return {0x1p-126, 0x1p-126};
}

bool over(double magnitude) { return !(magnitude < float32_max); }

// A gradient element's bound, with its underflow part kept apart for the update.
struct Gradient : ElementBound {
  double underflow = 0.0;
};
}  // namespace

double gamma(double m, double u) {
  const double mu = m * u;
  return mu < 1.0 ? mu / (1.0 - mu) : infinity;
}

StepBounds error_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model) {
  const int n = c.n, d = c.d, k = c.k;
  const double u = model.u;
  // Plain variables, not a structured binding: lambdas below capture them, which clang
  // before 16 rejects for bindings.
  const Subnormal subnormal = subnormal_terms(model.subnormals);
  const double eta = subnormal.eta, tau = subnormal.tau;
  const double count = static_cast<double>(n) * k;
  const double scale = 2.0 / count;
  const double lr = std::abs(static_cast<double>(c.lr));
  auto at = [](const std::vector<float>& v, int i) { return std::abs(static_cast<double>(v[i])); };

  // (R) residuals r_nk = sum_d x_nd W_dk + b_k - y_nk: a sum of D+2 terms, D+3 roundings.
  const double g_r = gamma(residual_roundings(c), u);
  std::vector<double> err_r(static_cast<std::size_t>(n) * k);
  std::vector<char> ovf_r(err_r.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      double terms = at(c.bias, j) + at(c.y, i * k + j);
      double perturb = 2.0 * tau;
      for (int l = 0; l < d; ++l) {
        terms += at(c.x, i * d + l) * at(c.kernel, l * k + j);
        perturb += tau * (at(c.x, i * d + l) + at(c.kernel, l * k + j) + tau);
      }
      const std::size_t e = static_cast<std::size_t>(i) * k + j;
      err_r[e] = perturb + g_r * (terms + perturb) + 2.0 * (c.d + 2.0) * eta * (1.0 + g_r);
      ovf_r[e] = over(2.0 * (terms + perturb) * (1.0 + g_r));
    }
  }

  StepBounds b;
  // (L) loss = 1/(N K) sum r^2.
  {
    const double g_l = gamma(loss_roundings(c), u);
    double sum = 0.0, partial = 0.0;
    bool ovf = false;
    for (std::size_t e = 0; e < err_r.size(); ++e) {
      const double r = exact.residual[e], er = err_r[e];
      sum += er * (2.0 * r + er) * (1.0 + g_l) + g_l * r * r;
      partial += (r + er) * (r + er);
      ovf = ovf || ovf_r[e];
    }
    b.loss.resize(1);
    b.loss[0].bound = (sum / count + (3.0 * count + 4.0) * eta * (1.0 + g_l)) * evaluation_slack;
    b.loss[0].may_overflow =
        ovf || over(partial * (1.0 + g_l)) || over(exact.loss + b.loss[0].bound);
  }

  // (G) gradients g = 2/(N K) sum_n x_n r_n, with x = 1 for the bias; (G+) one more
  // rounding for an implementation that folds lr into the scale.
  auto gradient = [&](int col, auto x_of, double extra) {
    const double g_g = gamma(grad_roundings(c) + extra, u);
    double sum = 0.0, partial = 0.0, underflows = 4.0;
    bool ovf = false;
    for (int i = 0; i < n; ++i) {
      const auto [x, x_tau] = x_of(i);
      const std::size_t e = static_cast<std::size_t>(i) * k + col;
      const double r = exact.residual[e], er = err_r[e];
      sum += (x_tau * (r + er) + x * er) * (1.0 + g_g) + g_g * x * r;
      partial += (x + x_tau) * (r + er);
      // Up to three scale operations on r before it meets x, then the product and the add.
      underflows += 3.0 * (x + x_tau) + 2.0;
      ovf = ovf || ovf_r[e];
    }
    Gradient eb;
    eb.underflow = underflows * eta * 2.0 * (1.0 + g_g);
    eb.bound = (scale * sum + eb.underflow) * evaluation_slack;
    eb.may_overflow = ovf || over(2.0 * partial * (1.0 + g_g));
    return eb;
  };

  // (U) update p' = p - lr g; (U2) its distance from p - lr * (a reported gradient).
  // The gradient's underflow term is added once more unscaled by lr: an implementation
  // that folds lr into the scale underflows at lr*c*r, before lr could shrink it.
  auto update = [&](double p, double p_new, double g, const Gradient& eg, const Gradient& eg_plus,
                    ElementBound& out, double& from_grad) {
    const double gp = eg_plus.bound;
    const double folded = eg_plus.underflow;
    out.bound = ((1.0 + u) * (tau + lr * gp + folded + tau * (g + gp)) + u * p_new + 2.0 * eta) *
                evaluation_slack;
    out.may_overflow =
        eg_plus.may_overflow || over((p + tau + lr * (g + gp)) * (1.0 + u) * (1.0 + u));
    from_grad = ((1.0 + u) * (tau + lr * (eg.bound + gp) + folded + tau * (g + gp)) + 2.0 * eta) *
                evaluation_slack;
  };

  b.grad_kernel.resize(static_cast<std::size_t>(d) * k);
  b.kernel.resize(b.grad_kernel.size());
  b.kernel_from_grad.resize(b.grad_kernel.size());
  for (int l = 0; l < d; ++l) {
    auto x_col = [&](int i) { return std::pair{at(c.x, i * d + l), tau}; };
    for (int j = 0; j < k; ++j) {
      const std::size_t e = static_cast<std::size_t>(l) * k + j;
      Gradient g = gradient(j, x_col, 0.0);
      const Gradient g_plus = gradient(j, x_col, 1.0);
      g.may_overflow = g.may_overflow || over(exact.grad_kernel[e] + g.bound);
      b.grad_kernel[e] = g;
      update(at(c.kernel, static_cast<int>(e)), exact.kernel[e], exact.grad_kernel[e], g, g_plus,
             b.kernel[e], b.kernel_from_grad[e]);
    }
  }
  b.grad_bias.resize(static_cast<std::size_t>(k));
  b.bias.resize(b.grad_bias.size());
  b.bias_from_grad.resize(b.grad_bias.size());
  auto ones = [](int) { return std::pair{1.0, 0.0}; };
  for (int j = 0; j < k; ++j) {
    Gradient g = gradient(j, ones, 0.0);
    const Gradient g_plus = gradient(j, ones, 1.0);
    g.may_overflow = g.may_overflow || over(exact.grad_bias[j] + g.bound);
    b.grad_bias[j] = g;
    update(at(c.bias, j), exact.bias[j], exact.grad_bias[j], g, g_plus, b.bias[j],
           b.bias_from_grad[j]);
  }
  return b;
}

}  // namespace sgdc::reference