#include "sgdc/reference/exact_step.hpp"

#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "clipped_step.hpp"

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

// Adam (docs/spec/step.md, "Adam"): the moments, rational; the parameters through a square
// root, so not in rationals (the rounded step encloses them instead).
// Whether Scalar has a square root: rationals and Q(sqrt S) have none, so their Adam and
// Adagrad parameters are left to AdamUpdate.
template <class Scalar>
constexpr bool has_root = std::is_same_v<Scalar, HighPrecision>;

template <class Scalar>
void adam(const Case& c, const Matrix<Scalar>& w, const Matrix<Scalar>& b,
          const Matrix<Scalar>& grad_kernel, const Matrix<Scalar>& grad_bias,
          StepValues<Scalar>& v) {
  const Optimizer& o = c.optimizer;
  auto scalar = [](float f) { return Scalar(static_cast<double>(f)); };
  const Scalar b1 = scalar(o.b1), b2 = scalar(o.b2), wd = scalar(o.weight_decay);
  const bool decoupled = o.decay == Optimizer::Decay::decoupled;
  auto moments = [&](const Matrix<Scalar>& p, const Matrix<Scalar>& g, const std::vector<float>& m,
                     const std::vector<float>& s, Matrix<Scalar>& m_out, Matrix<Scalar>& s_out) {
    const Matrix<Scalar> ge = decoupled ? g : Matrix<Scalar>(g + p * wd);
    m_out = ge * (Scalar(1) - b1);
    s_out = ge.cwiseProduct(ge) * (Scalar(1) - b2);
    if (!c.fresh_state()) {
      m_out += to_matrix<Scalar>(m, p.rows(), p.cols()) * b1;
      s_out += to_matrix<Scalar>(s, p.rows(), p.cols()) * b2;
    }
  };
  moments(w, grad_kernel, c.momentum_kernel, c.second_moment_kernel, v.momentum_kernel,
          v.second_moment_kernel);
  moments(b, grad_bias, c.momentum_bias, c.second_moment_bias, v.momentum_bias,
          v.second_moment_bias);
  if constexpr (has_root<Scalar>) {
    using std::pow;
    using std::sqrt;
    const Scalar t = Scalar(static_cast<double>(c.step)) + Scalar(1);
    const Scalar bc1 = Scalar(1) - pow(b1, t), bc2 = Scalar(1) - pow(b2, t);
    const Scalar lr = scalar(c.lr), eps = scalar(o.eps), eps_root = scalar(o.eps_root);
    auto parameter = [&](const Matrix<Scalar>& p, const Matrix<Scalar>& m,
                         const Matrix<Scalar>& s) {
      Matrix<Scalar> out(p.rows(), p.cols());
      for (Eigen::Index i = 0; i < p.rows(); ++i) {
        for (Eigen::Index j = 0; j < p.cols(); ++j) {
          Scalar direction = (m(i, j) / bc1) / (sqrt(s(i, j) / bc2 + eps_root) + eps);
          if (decoupled) direction += wd * p(i, j);
          out(i, j) = p(i, j) - lr * direction;
        }
      }
      return out;
    };
    v.kernel = parameter(w, v.momentum_kernel, v.second_moment_kernel);
    v.bias = parameter(b, v.momentum_bias, v.second_moment_bias);
  }
}

// Adagrad (docs/spec/step.md, "Adagrad"): the sum of squares, rational; the parameters
// through a square root, as Adam's. Its state travels as the second moment.
template <class Scalar>
void adagrad(const Case& c, const Matrix<Scalar>& w, const Matrix<Scalar>& b,
             const Matrix<Scalar>& grad_kernel, const Matrix<Scalar>& grad_bias,
             StepValues<Scalar>& v) {
  const Optimizer& o = c.optimizer;
  auto scalar = [](float f) { return Scalar(static_cast<double>(f)); };
  const Scalar wd = scalar(o.weight_decay), initial = scalar(o.initial_accumulator_value);
  const bool decoupled = o.decay == Optimizer::Decay::decoupled;
  auto sum = [&](const Matrix<Scalar>& p, const Matrix<Scalar>& g, const std::vector<float>& s,
                 Matrix<Scalar>& ge, Matrix<Scalar>& s_out) {
    ge = decoupled ? g : Matrix<Scalar>(g + p * wd);
    s_out = ge.cwiseProduct(ge);
    if (c.fresh_state())
      s_out.array() += initial;
    else
      s_out += to_matrix<Scalar>(s, p.rows(), p.cols());
  };
  Matrix<Scalar> ge_kernel, ge_bias;
  sum(w, grad_kernel, c.second_moment_kernel, ge_kernel, v.second_moment_kernel);
  sum(b, grad_bias, c.second_moment_bias, ge_bias, v.second_moment_bias);
  if constexpr (has_root<Scalar>) {
    using std::sqrt;
    const Scalar lr = scalar(c.lr), eps = scalar(o.eps), eps_root = scalar(o.eps_root);
    auto parameter = [&](const Matrix<Scalar>& p, const Matrix<Scalar>& ge,
                         const Matrix<Scalar>& s) {
      Matrix<Scalar> out(p.rows(), p.cols());
      for (Eigen::Index i = 0; i < p.rows(); ++i) {
        for (Eigen::Index j = 0; j < p.cols(); ++j) {
          Scalar direction = ge(i, j) / (sqrt(s(i, j) + eps_root) + eps);
          if (decoupled) direction += wd * p(i, j);
          out(i, j) = p(i, j) - lr * direction;
        }
      }
      return out;
    };
    v.kernel = parameter(w, ge_kernel, v.second_moment_kernel);
    v.bias = parameter(b, ge_bias, v.second_moment_bias);
  }
}
}  // namespace

template <class Scalar>
void apply_optimizer(const Case& c, const Matrix<Scalar>& w, const Matrix<Scalar>& b,
                     const Matrix<Scalar>& grad_kernel, const Matrix<Scalar>& grad_bias,
                     StepValues<Scalar>& v) {
  // The optimizer (docs/spec/step.md, "Optimizers"): the decayed gradient, the buffer, the
  // direction, the update.
  const Optimizer& o = c.optimizer;
  const Scalar lr = to_matrix<Scalar>({c.lr}, 1, 1)(0, 0);
  const Scalar wd = to_matrix<Scalar>({o.weight_decay}, 1, 1)(0, 0);
  const Scalar mu = to_matrix<Scalar>({o.momentum}, 1, 1)(0, 0);
  const Scalar damp = to_matrix<Scalar>({applied_dampening(o)}, 1, 1)(0, 0);
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
  if (o.kind == Optimizer::Kind::adam) {
    adam(c, w, b, grad_kernel, grad_bias, v);
  } else if (o.kind == Optimizer::Kind::adagrad) {
    adagrad(c, w, b, grad_kernel, grad_bias, v);
  } else {
    v.kernel = update(w, grad_kernel, c.momentum_kernel, v.momentum_kernel);
    v.bias = update(b, grad_bias, c.momentum_bias, v.momentum_bias);
  }
}

template <class Scalar>
StepValues<Scalar> evaluate_step(const Case& c) {
  c.validate();
  const Matrix<Scalar> w = to_matrix<Scalar>(c.kernel, c.d, c.k);
  const Matrix<Scalar> b = to_matrix<Scalar>(c.bias, 1, c.k);
  const Matrix<Scalar> x = to_matrix<Scalar>(c.x, c.n, c.d);
  const Matrix<Scalar> y = to_matrix<Scalar>(c.y, c.n, c.k);
  const Scalar count = Scalar(c.n) * Scalar(c.k);

  StepValues<Scalar> v;
  v.residual = x * w - y;
  v.residual.rowwise() += b.row(0);
  v.loss = v.residual.squaredNorm() / count;
  const Scalar scale = Scalar(2) / count;
  v.grad_kernel = (x.transpose() * v.residual) * scale;
  v.grad_bias = v.residual.colwise().sum() * scale;
  if (!c.clip) {
    apply_optimizer(c, w, b, v.grad_kernel, v.grad_bias, v);
  } else if constexpr (has_root<Scalar>) {
    // Clipping (docs/spec/step.md, "Gradient clipping"): the optimizer reads the gradients
    // scaled by min(1, M / (norm + eps)); the reported gradients stay the loss's.
    using std::sqrt;
    const Scalar norm = sqrt(v.grad_kernel.squaredNorm() + v.grad_bias.squaredNorm());
    const Scalar max_norm = to_matrix<Scalar>({c.clip->max_norm}, 1, 1)(0, 0);
    const Scalar eps = to_matrix<Scalar>({c.clip->eps}, 1, 1)(0, 0);
    Scalar factor = max_norm / (norm + eps);
    if (factor > Scalar(1)) factor = Scalar(1);
    apply_optimizer(c, w, b, Matrix<Scalar>(v.grad_kernel * factor),
                    Matrix<Scalar>(v.grad_bias * factor), v);
  }
  return v;
}

template StepValues<Rational> evaluate_step<Rational>(const Case&);
template StepValues<HighPrecision> evaluate_step<HighPrecision>(const Case&);
template void apply_optimizer<Rational>(const Case&, const Matrix<Rational>&,
                                        const Matrix<Rational>&, const Matrix<Rational>&,
                                        const Matrix<Rational>&, StepValues<Rational>&);
template void apply_optimizer<Quadratic>(const Case&, const Matrix<Quadratic>&,
                                         const Matrix<Quadratic>&, const Matrix<Quadratic>&,
                                         const Matrix<Quadratic>&, StepValues<Quadratic>&);

}  // namespace sgdc::reference
