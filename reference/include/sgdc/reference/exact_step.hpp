#pragma once
/// \file
/// The step evaluated in Boost.Multiprecision scalars held in Eigen matrices: exactly in
/// rationals (the oracle), and in a 50-digit binary float (the cross-check).

#include <Eigen/Core>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <boost/multiprecision/eigen.hpp>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference {

/// High-precision float (about 166 significand bits) for cross-checking the exact path.
using HighPrecision = boost::multiprecision::cpp_bin_float_50;

template <class Scalar>
using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Every quantity of the step in one scalar type. Row vectors hold the [k] arrays.
template <class Scalar>
struct StepValues {
  Matrix<Scalar> residual;     ///< r = x W + b - y, [n][k]
  Scalar loss;                 ///< mean of r^2 over all n*k elements
  Matrix<Scalar> grad_kernel;  ///< 2/(n k) x^T r, [d][k]
  Matrix<Scalar> grad_bias;    ///< 2/(n k) sum_n r, [1][k]
  /// W', the optimizer's update of W (W - lr gW for plain SGD); Adam's and Adagrad's are
  /// irrational: empty in rationals (AdamUpdate in the rounded step encloses them).
  Matrix<Scalar> kernel;
  Matrix<Scalar> bias;  ///< b', [1][k]; as the kernel
  /// The momentum buffer (Adam: first moment) after the step, [d][k] and [1][k]; empty
  /// without one.
  Matrix<Scalar> momentum_kernel, momentum_bias;
  /// Adam's second moment (Adagrad's sum of squares) after the step; empty without one.
  Matrix<Scalar> second_moment_kernel, second_moment_bias;
};

/// Evaluates the step in `Scalar`. Inputs must be finite (float32 values are exact in
/// both scalar types); shapes are validated. With `Rational` every value is exact; with
/// clipping (Case::clip) the optimizer's outputs are irrational in general, so empty in
/// rationals (the rounded step computes them in Q(sqrt S)).
template <class Scalar>
StepValues<Scalar> evaluate_step(const Case& c);

extern template StepValues<Rational> evaluate_step<Rational>(const Case&);
extern template StepValues<HighPrecision> evaluate_step<HighPrecision>(const Case&);

}  // namespace sgdc::reference