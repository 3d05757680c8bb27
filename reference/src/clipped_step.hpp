#pragma once
// A step with global-norm gradient clipping in exact arithmetic (docs/spec/step.md,
// "Gradient clipping"; docs/error-model.md, section 17): the clip factor in Q(sqrt S),
// the optimizers' update on the clipped gradients in it (quadratic.hpp), each output
// correctly rounded. Internal to sgdc::reference.

#include <stdexcept>
#include <string>
#include <vector>

#include "adam_update.hpp"
#include "quadratic.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/rounded_step.hpp"

namespace sgdc::reference {

/// The optimizer's part of the step (exact_step.cpp) from gradients given in `Scalar`:
/// fills the parameters and state of `v` (Adam's and Adagrad's parameters only where
/// Scalar has a square root).
template <class Scalar>
void apply_optimizer(const Case& c, const Matrix<Scalar>& w, const Matrix<Scalar>& b,
                     const Matrix<Scalar>& grad_kernel, const Matrix<Scalar>& grad_bias,
                     StepValues<Scalar>& v);
extern template void apply_optimizer<Quadratic>(const Case&, const Matrix<Quadratic>&,
                                                const Matrix<Quadratic>&, const Matrix<Quadratic>&,
                                                const Matrix<Quadratic>&, StepValues<Quadratic>&);

extern template void apply_optimizer<Rational>(const Case&, const Matrix<Rational>&,
                                               const Matrix<Rational>&, const Matrix<Rational>&,
                                               const Matrix<Rational>&, StepValues<Rational>&);

/// The optimizer's outputs of case `c` from the exact gradients in `exact` (its
/// parameters and state as `apply_optimizer` left them; with clipping, from the gradients
/// alone), correctly rounded into `s`: kernel, bias and the state the optimizer keeps.
void round_optimizer_outputs(const Case& c, const StepValues<Rational>& exact, RoundedStep& s);

/// A case's clip factor c = min(1, M / (sqrt(S) + eps)), exactly. Not copyable: `factor`
/// points at `squared_norm`.
struct ClipFactor {
  /// From the exact gradients of `c`, which must have `c.clip`.
  ClipFactor(const Case& c, const Matrix<Rational>& grad_kernel, const Matrix<Rational>& grad_bias);
  ClipFactor(const ClipFactor&) = delete;
  ClipFactor& operator=(const ClipFactor&) = delete;

  Rational squared_norm;  ///< S: the sum of every gradient element's square
  bool active = false;    ///< M / (sqrt(S) + eps) < 1: the gradients are scaled
  Quadratic factor;       ///< c (1 when not active)
};

/// The optimizer's outputs of a case with clipping from its exact gradients (kernel, bias
/// and the state the optimizer keeps; the others left empty), element by element: each
/// value in Q(sqrt S) as `value(x)` maps it, Adam's and Adagrad's parameters, through
/// their square root, as `parameter(update, p, numerator, second)` maps their moments
/// (AdamUpdate's parameter() or exact()). A std::runtime_error of either is rethrown
/// naming the output and element.
template <class T, class Value, class Parameter>
PerOutput<std::vector<T>> clipped_optimizer_outputs(const Case& c,
                                                    const StepValues<Rational>& exact, Value value,
                                                    Parameter parameter);

/// The optimizer's outputs of a case with clipping, from its exact gradients, correctly
/// rounded into `s` (kernel, bias and the state the optimizer keeps).
void round_clipped_optimizer(const Case& c, const StepValues<Rational>& exact, RoundedStep& s);

namespace detail {
Matrix<Quadratic> clipped(const Matrix<Rational>& gradient, const Quadratic& factor);
Matrix<Quadratic> parameter_matrix(const std::vector<float>& p, Eigen::Index rows,
                                   Eigen::Index cols);
// `f(i)` for each element i of `count`, a std::runtime_error rethrown naming `name`[i].
template <class T, class F>
std::vector<T> each_element(const char* name, Eigen::Index count, F f) {
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(count));
  for (Eigen::Index i = 0; i < count; ++i) {
    try {
      out.push_back(f(i));
    } catch (const std::runtime_error& error) {
      throw std::runtime_error(std::string(name) + "[" + std::to_string(i) + "]: " + error.what());
    }
  }
  return out;
}
}  // namespace detail

template <class T, class Value, class Parameter>
PerOutput<std::vector<T>> clipped_optimizer_outputs(const Case& c,
                                                    const StepValues<Rational>& exact, Value value,
                                                    Parameter parameter) {
  const ClipFactor clip(c, exact.grad_kernel, exact.grad_bias);
  const Matrix<Quadratic> gk = detail::clipped(exact.grad_kernel, clip.factor),
                          gb = detail::clipped(exact.grad_bias, clip.factor);
  StepValues<Quadratic> v;
  apply_optimizer(c, detail::parameter_matrix(c.kernel, c.d, c.k),
                  detail::parameter_matrix(c.bias, 1, c.k), gk, gb, v);
  auto values = [&](const char* name, const Matrix<Quadratic>& m) {
    return detail::each_element<T>(name, m.size(),
                                   [&](Eigen::Index i) { return value(m.data()[i]); });
  };
  PerOutput<std::vector<T>> out;
  out.momentum_kernel = values("momentum_kernel", v.momentum_kernel);
  out.momentum_bias = values("momentum_bias", v.momentum_bias);
  out.second_moment_kernel = values("second_moment_kernel", v.second_moment_kernel);
  out.second_moment_bias = values("second_moment_bias", v.second_moment_bias);
  const Optimizer& o = c.optimizer;
  if (!info(o.kind).second_moment) {
    out.kernel = values("kernel", v.kernel);
    out.bias = values("bias", v.bias);
    return out;
  }
  // Adam's and Adagrad's parameters through their square root (adam_update.hpp);
  // Adagrad's numerator is the decayed clipped gradient.
  const AdamUpdate update(c);
  const bool adagrad = o.kind == Optimizer::Kind::adagrad;
  const bool coupled = o.decay == Optimizer::Decay::coupled && o.weight_decay != 0.0f;
  const Quadratic wd(Rational(static_cast<double>(o.weight_decay)));
  auto parameters = [&](const char* name, const std::vector<float>& p, const Matrix<Quadratic>& g,
                        const Matrix<Quadratic>& m, const Matrix<Quadratic>& second) {
    return detail::each_element<T>(name, second.size(), [&](Eigen::Index e) {
      const float pe = p[static_cast<std::size_t>(e)];
      const Quadratic numerator =
          !adagrad  ? m.data()[e]
          : coupled ? g.data()[e] + wd * Quadratic(Rational(static_cast<double>(pe)))
                    : g.data()[e];
      return parameter(update, pe, numerator, second.data()[e]);
    });
  };
  out.kernel = parameters("kernel", c.kernel, gk, v.momentum_kernel, v.second_moment_kernel);
  out.bias = parameters("bias", c.bias, gb, v.momentum_bias, v.second_moment_bias);
  return out;
}

}  // namespace sgdc::reference
