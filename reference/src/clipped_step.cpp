#include "clipped_step.hpp"

#include <stdexcept>

namespace sgdc::reference {

namespace {
Rational exact(float f) { return Rational(static_cast<double>(f)); }
}  // namespace

// c < 1 exactly when M < sqrt(S) + eps, that is M - eps < 0 or (M - eps)^2 < S; then
// c = M / (r + eps) with r = sqrt(S): rational when r is, else
// M (r - eps) / (S - eps^2), S != eps^2 since r is irrational.
ClipFactor::ClipFactor(const Case& c, const Matrix<Rational>& grad_kernel,
                       const Matrix<Rational>& grad_bias)
    : factor(1) {
  if (!c.clip) throw std::invalid_argument("ClipFactor: a case without clipping");
  for (const Matrix<Rational>* g : {&grad_kernel, &grad_bias})
    for (Eigen::Index i = 0; i < g->size(); ++i) squared_norm += g->data()[i] * g->data()[i];
  const Rational m = exact(c.clip->max_norm), eps = exact(c.clip->eps);
  const Rational margin = m - eps;
  active = margin < 0 || margin * margin < squared_norm;
  if (!active) return;
  if (const std::optional<Rational> r = rational_root(squared_norm)) {
    factor = Quadratic(Rational(m / (*r + eps)));
  } else {
    const Rational denominator = squared_norm - eps * eps;
    factor = Quadratic(Rational(-m * eps / denominator), Rational(m / denominator), &squared_norm);
  }
}

namespace detail {
Matrix<Quadratic> clipped(const Matrix<Rational>& gradient, const Quadratic& factor) {
  Matrix<Quadratic> out(gradient.rows(), gradient.cols());
  for (Eigen::Index i = 0; i < gradient.size(); ++i)
    out.data()[i] = Quadratic(gradient.data()[i]) * factor;
  return out;
}

Matrix<Quadratic> parameter_matrix(const std::vector<float>& p, Eigen::Index rows,
                                   Eigen::Index cols) {
  Matrix<Quadratic> out(rows, cols);
  for (Eigen::Index i = 0; i < out.size(); ++i)
    out.data()[i] = Quadratic(exact(p[static_cast<std::size_t>(i)]));
  return out;
}
}  // namespace detail

void round_clipped_optimizer(const Case& c, const StepValues<Rational>& exact_values,
                             RoundedStep& s) {
  PerOutput<std::vector<RoundedValue>> out = clipped_optimizer_outputs<RoundedValue>(
      c, exact_values, [](const Quadratic& x) { return round_both(x); },
      [](const AdamUpdate& update, float p, const Quadratic& m, const Quadratic& v) {
        return update.parameter(p, m, v);
      });
  for (Output o : {Output::kernel, Output::bias, Output::momentum_kernel, Output::momentum_bias,
                   Output::second_moment_kernel, Output::second_moment_bias})
    s[o] = std::move(out[o]);
}

}  // namespace sgdc::reference
