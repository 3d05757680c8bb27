#pragma once
/// \file
/// What a correct implementation must return for one case, element by element.

#include <cstdint>
#include <vector>

#include "sgdc/reference/outputs.hpp"

namespace sgdc::reference {

/// Expectation for one output element.
struct Expected {
  float rounded = 0.0f;            ///< the exact value correctly rounded to float32 (ties to even)
  double value = 0.0;              ///< the exact value rounded to double, for error reports
  double bound = 0.0;              ///< largest |computed - exact| a correct implementation may show
  bool may_overflow = false;       ///< +-inf or NaN is acceptable too (docs/error-model.md)
  bool must_be_nonfinite = false;  ///< depends on a NaN or infinite input: NaN or +-inf due
};

/// Expectations for every output of one case, one per element.
struct Expectation : PerOutput<std::vector<Expected>> {
  /// Slack of |p' - (p - lr g_reported)| beyond the final rounding (equation U2).
  std::vector<double> kernel_from_grad, bias_from_grad;
  double u = 0.0;  ///< one operation's relative error the bounds assume (OperationModel::u)
};

}  // namespace sgdc::reference
