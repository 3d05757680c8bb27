#include "clipped_step.hpp"

#include <stdexcept>

#include "adam_update.hpp"

namespace sgdc::reference {

namespace {
Rational exact(float f) { return Rational(static_cast<double>(f)); }

Matrix<Quadratic> quadratic(const Matrix<Rational>& m, const Quadratic& factor) {
  Matrix<Quadratic> out(m.rows(), m.cols());
  for (Eigen::Index i = 0; i < m.size(); ++i) out.data()[i] = Quadratic(m.data()[i]) * factor;
  return out;
}

Matrix<Quadratic> quadratic(const std::vector<float>& v, Eigen::Index rows, Eigen::Index cols) {
  Matrix<Quadratic> out(rows, cols);
  for (Eigen::Index i = 0; i < out.size(); ++i)
    out.data()[i] = Quadratic(exact(v[static_cast<std::size_t>(i)]));
  return out;
}

std::vector<RoundedValue> round_all(const Matrix<Quadratic>& m) {
  std::vector<RoundedValue> out;
  out.reserve(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.size(); ++i) out.push_back(round_both(m.data()[i]));
  return out;
}
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

void round_clipped_optimizer(const Case& c, const StepValues<Rational>& exact_values,
                             RoundedStep& s) {
  const ClipFactor clip(c, exact_values.grad_kernel, exact_values.grad_bias);
  const Matrix<Quadratic> w = quadratic(c.kernel, c.d, c.k), b = quadratic(c.bias, 1, c.k);
  const Matrix<Quadratic> gk = quadratic(exact_values.grad_kernel, clip.factor),
                          gb = quadratic(exact_values.grad_bias, clip.factor);
  StepValues<Quadratic> v;
  apply_optimizer(c, w, b, gk, gb, v);
  s.momentum_kernel = round_all(v.momentum_kernel);
  s.momentum_bias = round_all(v.momentum_bias);
  s.second_moment_kernel = round_all(v.second_moment_kernel);
  s.second_moment_bias = round_all(v.second_moment_bias);
  const Optimizer& o = c.optimizer;
  if (o.kind != Optimizer::Kind::adam && o.kind != Optimizer::Kind::adagrad) {
    s.kernel = round_all(v.kernel);
    s.bias = round_all(v.bias);
    return;
  }
  // Adam's and Adagrad's parameters through their square root (adam_update.hpp);
  // Adagrad's numerator is the decayed clipped gradient.
  const AdamUpdate update(c);
  const bool adagrad = o.kind == Optimizer::Kind::adagrad;
  const bool coupled = o.decay == Optimizer::Decay::coupled && o.weight_decay != 0.0f;
  const Quadratic wd(exact(o.weight_decay));
  auto parameters = [&](const std::vector<float>& p, const Matrix<Quadratic>& g,
                        const Matrix<Quadratic>& m, const Matrix<Quadratic>& second) {
    std::vector<RoundedValue> out(p.size());
    for (Eigen::Index e = 0; e < second.size(); ++e) {
      const std::size_t i = static_cast<std::size_t>(e);
      const Quadratic numerator = !adagrad  ? m.data()[e]
                                  : coupled ? g.data()[e] + wd * Quadratic(exact(p[i]))
                                            : g.data()[e];
      out[i] = update.parameter(p[i], numerator, second.data()[e]);
    }
    return out;
  };
  s.kernel = parameters(c.kernel, gk, v.momentum_kernel, v.second_moment_kernel);
  s.bias = parameters(c.bias, gb, v.momentum_bias, v.second_moment_bias);
}

}  // namespace sgdc::reference
