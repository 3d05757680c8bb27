#include "float_step.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

namespace sgdc::bench {

namespace {
template <class Scalar>
using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class Scalar>
Matrix<Scalar> to_matrix(const std::vector<float>& v, int rows, int cols) {
  return Eigen::Map<const Matrix<float>>(v.data(), rows, cols).template cast<Scalar>();
}

template <class M>
std::vector<float> to_floats(const M& m) {
  std::vector<float> out(static_cast<std::size_t>(m.size()));
  Eigen::Map<Matrix<float>>(out.data(), m.rows(), m.cols()) = m.template cast<float>();
  return out;
}
// Optimizer state shaped as the parameter p: zeros when fresh (empty).
template <class Scalar>
Matrix<Scalar> state_matrix(const std::vector<float>& state, const Matrix<Scalar>& p) {
  if (state.empty()) return Matrix<Scalar>::Zero(p.rows(), p.cols());
  return to_matrix<Scalar>(state, static_cast<int>(p.rows()), static_cast<int>(p.cols()));
}

// Adam's update elementwise (torch.optim.Adam / AdamW's arithmetic in Scalar): the
// parameters p' and the moments m', v' from the gradient g and the moments before.
template <class Scalar>
struct AdamOut {
  Matrix<Scalar> p, m, v;
};

template <class Scalar>
AdamOut<Scalar> adam_update(const Case& c, const Matrix<Scalar>& p, const Matrix<Scalar>& g,
                            const std::vector<float>& m, const std::vector<float>& v) {
  const reference::Optimizer& o = c.optimizer;
  const Matrix<Scalar> m0 = state_matrix<Scalar>(m, p), v0 = state_matrix<Scalar>(v, p);
  const Scalar b1 = o.b1, b2 = o.b2, wd = o.weight_decay, lr = c.lr;
  const bool decoupled = o.decay == reference::Optimizer::Decay::decoupled;
  const Scalar t = static_cast<Scalar>(c.step + 1);
  const Scalar bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
  const Scalar coupled_wd = decoupled ? Scalar(0) : wd;
  const auto ge = (g.array() + coupled_wd * p.array()).eval();
  AdamOut<Scalar> out;
  out.m = (b1 * m0.array() + (1 - b1) * ge).matrix();
  out.v = (b2 * v0.array() + (1 - b2) * ge.square()).matrix();
  auto direction =
      ((out.m.array() / bc1) / ((out.v.array() / bc2 + Scalar(o.eps_root)).sqrt() + Scalar(o.eps)))
          .eval();
  if (decoupled) direction += wd * p.array();
  out.p = (p.array() - lr * direction).matrix();
  return out;
}
// SGD with momentum (heavy ball, dampening 0, no decay; torch.optim.SGD's arithmetic in
// Scalar): the parameters p' and the buffer from the gradient and the buffer before.
template <class Scalar>
struct MomentumOut {
  Matrix<Scalar> p, buffer;
};

template <class Scalar>
MomentumOut<Scalar> momentum_update(const Case& c, const Matrix<Scalar>& p, const Matrix<Scalar>& g,
                                    const std::vector<float>& buffer) {
  const Scalar mu = c.optimizer.momentum, lr = c.lr;
  MomentumOut<Scalar> out;
  out.buffer = buffer.empty() ? g : (mu * state_matrix<Scalar>(buffer, p) + g).eval();
  out.p = p - lr * out.buffer;
  return out;
}
}  // namespace

template <class Scalar>
StepResult float_step(const Case& c) {
  const Matrix<Scalar> w = to_matrix<Scalar>(c.kernel, c.d, c.k);
  const Matrix<Scalar> b = to_matrix<Scalar>(c.bias, 1, c.k);
  const Matrix<Scalar> x = to_matrix<Scalar>(c.x, c.n, c.d);
  const Matrix<Scalar> y = to_matrix<Scalar>(c.y, c.n, c.k);
  const Scalar count = static_cast<Scalar>(c.n) * static_cast<Scalar>(c.k);
  Matrix<Scalar> r = x * w - y;
  r.rowwise() += b.row(0);
  const Scalar scale = Scalar(2) / count;
  const Matrix<Scalar> grad_w = (x.transpose() * r) * scale;
  const Matrix<Scalar> grad_b = r.colwise().sum() * scale;
  // Clipping: the optimizer reads the gradients times min(1, M / (norm + eps)).
  Scalar factor = 1;
  if (c.clip) {
    const Scalar norm = std::sqrt(grad_w.squaredNorm() + grad_b.squaredNorm());
    factor = std::min(Scalar(1), Scalar(c.clip->max_norm) / (norm + Scalar(c.clip->eps)));
  }
  const Matrix<Scalar> gw = factor == 1 ? grad_w : Matrix<Scalar>(grad_w * factor);
  const Matrix<Scalar> gb = factor == 1 ? grad_b : Matrix<Scalar>(grad_b * factor);
  const Scalar lr = c.lr;
  StepResult s;
  s.loss = {static_cast<float>(r.squaredNorm() / count)};
  if (c.optimizer.kind == reference::Optimizer::Kind::adam) {
    const AdamOut<Scalar> kernel = adam_update(c, w, gw, c.momentum_kernel, c.second_moment_kernel);
    const AdamOut<Scalar> bias = adam_update(c, b, gb, c.momentum_bias, c.second_moment_bias);
    s.kernel = to_floats(kernel.p);
    s.momentum_kernel = to_floats(kernel.m);
    s.second_moment_kernel = to_floats(kernel.v);
    s.bias = to_floats(bias.p);
    s.momentum_bias = to_floats(bias.m);
    s.second_moment_bias = to_floats(bias.v);
  } else if (c.optimizer.kind == reference::Optimizer::Kind::momentum) {
    const MomentumOut<Scalar> kernel = momentum_update(c, w, gw, c.momentum_kernel);
    const MomentumOut<Scalar> bias = momentum_update(c, b, gb, c.momentum_bias);
    s.kernel = to_floats(kernel.p);
    s.momentum_kernel = to_floats(kernel.buffer);
    s.bias = to_floats(bias.p);
    s.momentum_bias = to_floats(bias.buffer);
  } else {
    s.kernel = to_floats(w - gw * lr);
    s.bias = to_floats(b - gb * lr);
  }
  s.grad_kernel = to_floats(grad_w);
  s.grad_bias = to_floats(grad_b);
  return s;
}

template StepResult float_step<float>(const Case&);
template StepResult float_step<double>(const Case&);

}  // namespace sgdc::bench
