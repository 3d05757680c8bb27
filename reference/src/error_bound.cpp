#include "sgdc/reference/error_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "parallel_for.hpp"
#include "sgdc/reference/float32.hpp"
#include "vector_clones.hpp"

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

bool over(double magnitude, double omega) { return !(magnitude < omega); }

// A gradient element's bound, with its underflow part kept apart for the update.
struct Gradient : ElementBound {
  double underflow = 0.0;
};

using parallel::tile_columns;

// (R) for row i, columns [begin, end): each element's sum of |terms| and its input
// perturbation, over d in order, as arrays over k so that the inner loop vectorises.
SGDC_VECTOR_CLONES void residual_bound_tile(const Case& c, double tau, double g_r, double eta,
                                            double omega, int i, int begin, int end, double* err_r,
                                            char* ovf_r) {
  const int d = c.d, m = end - begin;
  const std::size_t row = static_cast<std::size_t>(i) * c.k + begin;
  const float* x = &c.x[static_cast<std::size_t>(i) * d];
  double terms[tile_columns], perturb[tile_columns];
  for (int j = 0; j < m; ++j) {
    terms[j] = std::abs(static_cast<double>(c.bias[begin + j])) +
               std::abs(static_cast<double>(c.y[row + j]));
    perturb[j] = 2.0 * tau;
  }
  for (int l = 0; l < d; ++l) {
    const double ax = std::abs(static_cast<double>(x[l]));
    const float* w = &c.kernel[static_cast<std::size_t>(l) * c.k + begin];
    if (tau == 0.0) {
      // Each perturbation term tau (...) is +0: perturb stays +0, bit for bit.
      for (int j = 0; j < m; ++j) terms[j] += ax * std::abs(static_cast<double>(w[j]));
    } else {
      for (int j = 0; j < m; ++j) {
        const double aw = std::abs(static_cast<double>(w[j]));
        terms[j] += ax * aw;
        perturb[j] += tau * (ax + aw + tau);
      }
    }
  }
  for (int j = 0; j < m; ++j) {
    err_r[row + j] =
        perturb[j] + g_r * (terms[j] + perturb[j]) + 2.0 * (c.d + 2.0) * eta * (1.0 + g_r);
    ovf_r[row + j] = over(2.0 * (terms[j] + perturb[j]) * (1.0 + g_r), omega);
  }
}

// (G) without its gamma, for columns [begin, end) of sum_n over the rows of x (|x_n| =
// |x[n * stride]|, read with perturbation tau) and of the residuals:
// a = sum (tau (|r| + E_r) + |x| E_r), b = sum |x| |r|, so that the sum of (G) is
// (1 + gamma) a + gamma b for any gamma (G and G+ from one pass); and the overflow
// flag's partial = sum (|x| + tau)(|r| + E_r). Each sum over n in order.
SGDC_VECTOR_CLONES void gradient_bound_sums(int n, int k, const double* r, const double* err_r,
                                            const float* x, std::size_t stride, double tau,
                                            int begin, int end, double* a, double* b,
                                            double* partial) {
  const int m = end - begin;
  for (int j = 0; j < m; ++j) a[j] = b[j] = partial[j] = 0.0;
  for (int i = 0; i < n; ++i) {
    const double ax = std::abs(static_cast<double>(x[i * stride]));
    const double* ri = r + static_cast<std::size_t>(i) * k + begin;
    const double* ei = err_r + static_cast<std::size_t>(i) * k + begin;
    if (tau == 0.0) {
      // The same sums with the +0 terms of tau left out, bit for bit.
      for (int j = 0; j < m; ++j) {
        a[j] += ax * ei[j];
        b[j] += ax * ri[j];
        partial[j] += ax * (ri[j] + ei[j]);
      }
    } else {
      for (int j = 0; j < m; ++j) {
        a[j] += tau * (ri[j] + ei[j]) + ax * ei[j];
        b[j] += ax * ri[j];
        partial[j] += (ax + tau) * (ri[j] + ei[j]);
      }
    }
  }
}
}  // namespace

double gamma(double m, double u) {
  const double mu = m * u;
  return mu < 1.0 ? mu / (1.0 - mu) : infinity;
}

StepBounds error_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model) {
  const int n = c.n, d = c.d, k = c.k;
  // Plain variables, not a structured binding: lambdas below capture them, which clang
  // before 16 rejects for bindings.
  const OperationModel op = operation_model(model);
  const double u = op.u, eta = op.eta, tau = op.tau, omega = op.omega;
  auto over = [omega](double magnitude) { return !(magnitude < omega); };
  const double count = static_cast<double>(n) * k;
  const double scale = 2.0 / count;
  const double lr = std::abs(static_cast<double>(c.lr));
  auto at = [](const std::vector<float>& v, std::size_t i) {
    return std::abs(static_cast<double>(v[i]));
  };

  const int threads = parallel::threads_for(n, d, k);

  // (R) residuals r_nk = sum_d x_nd W_dk + b_k - y_nk: a sum of D+2 terms, D+3 roundings.
  const double g_r = gamma(residual_roundings(c), u);
  std::vector<double> err_r(static_cast<std::size_t>(n) * k);
  std::vector<char> ovf_r(err_r.size());
  parallel::for_tiles(n, k, threads, [&](int i, int begin, int end, std::size_t) {
    residual_bound_tile(c, tau, g_r, eta, omega, i, begin, end, err_r.data(), ovf_r.data());
  });
  // In a format narrower than float32 an input beyond its largest value may itself
  // become infinite as it is converted (section 13): every output that reads it may too.
  const bool inputs_may_overflow = omega < float32_max;
  std::vector<char> x_column_over(static_cast<std::size_t>(d), 0);
  bool lr_over = false;
  if (inputs_may_overflow) {
    auto beyond = [omega](float v) { return std::abs(static_cast<double>(v)) > omega; };
    std::vector<char> x_row_over(static_cast<std::size_t>(n), 0), column_over(k, 0);
    for (int i = 0; i < n; ++i) {
      for (int l = 0; l < d; ++l) {
        if (beyond(c.x[static_cast<std::size_t>(i) * d + l])) x_row_over[i] = x_column_over[l] = 1;
      }
    }
    for (int l = 0; l < d; ++l) {
      for (int j = 0; j < k; ++j) {
        if (beyond(c.kernel[static_cast<std::size_t>(l) * k + j])) column_over[j] = 1;
      }
    }
    for (int j = 0; j < k; ++j) column_over[j] = column_over[j] || beyond(c.bias[j]);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < k; ++j) {
        const std::size_t e = static_cast<std::size_t>(i) * k + j;
        ovf_r[e] = ovf_r[e] || x_row_over[i] || column_over[j] || beyond(c.y[e]);
      }
    }
    lr_over = beyond(c.lr);
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
  // rounding for an implementation that folds lr into the scale. Both from the same
  // gamma-free sums (docs/error-model.md, section 8).
  const double g_g = gamma(grad_roundings(c), u), g_plus = gamma(grad_roundings(c) + 1.0, u);
  // Per column: does some residual of it overflow.
  std::vector<char> ovf_column(static_cast<std::size_t>(k), 0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j)
      ovf_column[j] = ovf_column[j] || ovf_r[static_cast<std::size_t>(i) * k + j];
  }
  // Per row of x^T (a row l of the kernel; the bias: x = 1): up to three scale operations
  // on r before it meets x, then the product and the add.
  auto underflows = [&](const float* x, std::size_t stride, double x_tau) {
    double sum = 4.0;
    for (int i = 0; i < n; ++i)
      sum += 3.0 * (std::abs(static_cast<double>(x[i * stride])) + x_tau) + 2.0;
    return sum;
  };
  auto gradient = [&](double a, double b_sum, double partial, double under, bool ovf, double g) {
    Gradient eb;
    eb.underflow = under * eta * 2.0 * (1.0 + g);
    eb.bound = (scale * ((1.0 + g) * a + g * b_sum) + eb.underflow) * evaluation_slack;
    eb.may_overflow = ovf || over(2.0 * partial * (1.0 + g));
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
        eg_plus.may_overflow || lr_over || over((p + tau + lr * (g + gp)) * (1.0 + u) * (1.0 + u));
    from_grad = ((1.0 + u) * (tau + lr * (eg.bound + gp) + folded + tau * (g + gp)) + 2.0 * eta) *
                evaluation_slack;
  };

  b.grad_kernel.resize(static_cast<std::size_t>(d) * k);
  b.kernel.resize(b.grad_kernel.size());
  b.kernel_from_grad.resize(b.grad_kernel.size());
  parallel::for_tiles(d, k, threads, [&](int l, int begin, int end, std::size_t) {
    double a[tile_columns], b_sum[tile_columns], partial[tile_columns];
    gradient_bound_sums(n, k, exact.residual.data(), err_r.data(), &c.x[l], d, tau, begin, end, a,
                        b_sum, partial);
    const double under = underflows(&c.x[l], d, tau);
    for (int j = 0; j < end - begin; ++j) {
      const std::size_t e = static_cast<std::size_t>(l) * k + begin + j;
      const bool ovf = ovf_column[begin + j] || x_column_over[l];
      Gradient g = gradient(a[j], b_sum[j], partial[j], under, ovf, g_g);
      const Gradient plus = gradient(a[j], b_sum[j], partial[j], under, ovf, g_plus);
      g.may_overflow = g.may_overflow || over(exact.grad_kernel[e] + g.bound);
      b.grad_kernel[e] = g;
      update(at(c.kernel, e), exact.kernel[e], exact.grad_kernel[e], g, plus, b.kernel[e],
             b.kernel_from_grad[e]);
    }
  });
  b.grad_bias.resize(static_cast<std::size_t>(k));
  b.bias.resize(b.grad_bias.size());
  b.bias_from_grad.resize(b.grad_bias.size());
  const std::vector<float> ones(static_cast<std::size_t>(n), 1.0f);
  const double under = underflows(ones.data(), 1, 0.0);
  parallel::for_tiles(1, k, 1, [&](int, int begin, int end, std::size_t) {
    double a[tile_columns], b_sum[tile_columns], partial[tile_columns];
    gradient_bound_sums(n, k, exact.residual.data(), err_r.data(), ones.data(), 1, 0.0, begin, end,
                        a, b_sum, partial);
    for (int j = 0; j < end - begin; ++j) {
      const int e = begin + j;
      const bool ovf = ovf_column[e];
      Gradient g = gradient(a[j], b_sum[j], partial[j], under, ovf, g_g);
      const Gradient plus = gradient(a[j], b_sum[j], partial[j], under, ovf, g_plus);
      g.may_overflow = g.may_overflow || over(exact.grad_bias[e] + g.bound);
      b.grad_bias[e] = g;
      update(at(c.bias, e), exact.bias[e], exact.grad_bias[e], g, plus, b.bias[e],
             b.bias_from_grad[e]);
    }
  });
  return b;
}

}  // namespace sgdc::reference