#pragma once
// A step with global-norm gradient clipping in exact arithmetic (docs/spec/step.md,
// "Gradient clipping"; docs/error-model.md, section 17): the clip factor in Q(sqrt S),
// the optimizers' update on the clipped gradients in it (quadratic.hpp), each output
// correctly rounded. Internal to sgdc::reference.

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

/// The optimizer's outputs of a case with clipping, from its exact gradients, correctly
/// rounded into `s` (kernel, bias and the state the optimizer keeps).
void round_clipped_optimizer(const Case& c, const StepValues<Rational>& exact, RoundedStep& s);

}  // namespace sgdc::reference
