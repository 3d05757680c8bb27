#include "float_step.hpp"

#include <Eigen/Core>
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
  const Matrix<Scalar> gw = (x.transpose() * r) * scale;
  const Matrix<Scalar> gb = r.colwise().sum() * scale;
  const Scalar lr = c.lr;
  StepResult s;
  s.loss = {static_cast<float>(r.squaredNorm() / count)};
  s.kernel = to_floats(w - gw * lr);
  s.bias = to_floats(b - gb * lr);
  s.grad_kernel = to_floats(gw);
  s.grad_bias = to_floats(gb);
  return s;
}

template StepResult float_step<float>(const Case&);
template StepResult float_step<double>(const Case&);

}  // namespace sgdc::bench
