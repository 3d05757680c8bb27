#include "sgdc/reference/exact_step.hpp"

#include <cmath>
#include <stdexcept>

namespace sgdc::reference {

namespace {
template <class Scalar>
Matrix<Scalar> to_matrix(const std::vector<float>& values, int rows, int cols) {
  Matrix<Scalar> m(rows, cols);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const float v = values[static_cast<std::size_t>(i) * cols + j];
      if (!std::isfinite(v)) throw std::invalid_argument("evaluate_step: non-finite input");
      // float -> double is exact, and both scalar types hold every double exactly.
      m(i, j) = Scalar(static_cast<double>(v));
    }
  }
  return m;
}
}  // namespace

template <class Scalar>
StepValues<Scalar> evaluate_step(const Case& c) {
  c.validate();
  const Matrix<Scalar> w = to_matrix<Scalar>(c.kernel, c.d, c.k);
  const Matrix<Scalar> b = to_matrix<Scalar>(c.bias, 1, c.k);
  const Matrix<Scalar> x = to_matrix<Scalar>(c.x, c.n, c.d);
  const Matrix<Scalar> y = to_matrix<Scalar>(c.y, c.n, c.k);
  const Scalar lr = to_matrix<Scalar>({c.lr}, 1, 1)(0, 0);
  const Scalar count = Scalar(c.n) * Scalar(c.k);

  StepValues<Scalar> v;
  v.residual = x * w - y;
  v.residual.rowwise() += b.row(0);
  v.loss = v.residual.squaredNorm() / count;
  const Scalar scale = Scalar(2) / count;
  v.grad_kernel = (x.transpose() * v.residual) * scale;
  v.grad_bias = v.residual.colwise().sum() * scale;
  // The optimizer (docs/spec/step.md, "Optimizers"): the decayed gradient, the buffer, the
  // direction, the update.
  const Optimizer& o = c.optimizer;
  const Scalar wd = to_matrix<Scalar>({o.weight_decay}, 1, 1)(0, 0);
  const Scalar mu = to_matrix<Scalar>({o.momentum}, 1, 1)(0, 0);
  const Scalar damp = to_matrix<Scalar>({o.dampening}, 1, 1)(0, 0);
  const bool momentum = o.kind == Optimizer::Kind::momentum;
  const bool decoupled = momentum && o.decay == Optimizer::Decay::decoupled;
  auto update = [&](const Matrix<Scalar>& p, const Matrix<Scalar>& g,
                    const std::vector<float>& buffer, Matrix<Scalar>& buffer_out) {
    const Matrix<Scalar> ge = decoupled ? g : Matrix<Scalar>(g + p * wd);
    if (!momentum) return Matrix<Scalar>(p - ge * lr);
    buffer_out = c.fresh_state()
                     ? ge
                     : Matrix<Scalar>(to_matrix<Scalar>(buffer, p.rows(), p.cols()) * mu +
                                      ge * (Scalar(1) - damp));
    Matrix<Scalar> direction = o.nesterov ? Matrix<Scalar>(ge + buffer_out * mu) : buffer_out;
    if (decoupled) direction += p * wd;
    return Matrix<Scalar>(p - direction * lr);
  };
  v.kernel = update(w, v.grad_kernel, c.momentum_kernel, v.momentum_kernel);
  v.bias = update(b, v.grad_bias, c.momentum_bias, v.momentum_bias);
  return v;
}

template StepValues<Rational> evaluate_step<Rational>(const Case&);
template StepValues<HighPrecision> evaluate_step<HighPrecision>(const Case&);

}  // namespace sgdc::reference