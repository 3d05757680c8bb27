#pragma once
/// \file
/// The step's exact values as the oracle reports them: each output correctly rounded to
/// float32 and to double, and the residuals rounded to double (the error bound's
/// magnitudes). Light header: no Boost, no Eigen.

#include <cstddef>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/outputs.hpp"

namespace sgdc::reference {

/// One exact value, correctly rounded (to nearest, ties to even) twice.
struct RoundedValue {
  float rounded = 0.0f;  ///< to float32, with gradual underflow and overflow to +-inf
  double value = 0.0;    ///< to double
};

/// Every exact quantity of one step that the oracle needs, rounded: each output of the
/// table (`loss` one value) and the residuals.
struct RoundedStep : PerOutput<std::vector<RoundedValue>> {
  std::vector<double> residual;  ///< r = x W + b - y rounded to double, [n][k]

  /// Elements (residuals included) whose roundings came from the exact rational step
  /// because a faster evaluation could not certify them; all of them for the exact path.
  std::size_t fallback_elements = 0;
  /// The exact rational step was evaluated for this case.
  bool exact_evaluated = false;

  /// Residuals plus every output element.
  std::size_t elements() const;
};

/// Evaluates the step exactly in rationals and rounds every value through MPFR: the
/// reference every faster path must reproduce bit for bit. Inputs must be finite;
/// throws std::invalid_argument otherwise or for shape errors.
RoundedStep round_exact_step(const Case& c);

}  // namespace sgdc::reference