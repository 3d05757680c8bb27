#pragma once
/// \file
/// Per-element forward error bounds for a float32 implementation of the step, valid for
/// any summation order, with or without FMA, wherever the 2/(N K) scale is applied, and
/// for higher internal precision. The derivation is docs/error-model.md; each formula
/// below cites its equation there.

#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/outputs.hpp"

namespace sgdc::reference {

/// gamma_m = m u / (1 - m u); +infinity when m u >= 1 (no bound can be given).
double gamma(double m, double u);

/// Magnitudes of the exact step (rounded to double) that the bounds depend on.
struct ExactMagnitudes {
  std::vector<double> residual;                        ///< |r|, [n][k]
  std::vector<double> grad_kernel;                     ///< |gW|, [d][k]
  std::vector<double> grad_bias;                       ///< |gb|, [k]
  std::vector<double> kernel;                          ///< |W'|, [d][k]
  std::vector<double> bias;                            ///< |b'|, [k]
  std::vector<double> momentum_kernel, momentum_bias;  ///< |buf'| (with momentum), |m'| (Adam)
  std::vector<double> second_moment_kernel, second_moment_bias;  ///< v' (Adam)
  double loss = 0.0;                                             ///< L
};

/// Bound on |computed - exact| for one output element.
struct ElementBound {
  double bound = 0.0;
  /// Some intermediate of a correct implementation may exceed float32's range on the
  /// way to this element: +-inf or NaN is then acceptable too.
  bool may_overflow = false;
};

/// Bounds for every output, plus the slack that relates a reported gradient to the
/// update made from it (equation U2 of the derivation).
struct StepBounds : PerOutput<std::vector<ElementBound>> {
  std::vector<double> kernel_from_grad, bias_from_grad;
};

/// Computes the bounds. The case must be finite; `exact` must belong to it.
StepBounds error_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model);

}  // namespace sgdc::reference