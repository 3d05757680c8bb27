#pragma once
/// \file
/// The referee: what a correct float32 implementation must return for a case, element by
/// element, with the derived bound. Light header: no Boost, no Eigen.

#include <cstdint>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"

namespace sgdc {

/// Expectation for one output element.
struct Expected {
  float rounded = 0.0f;            ///< the exact value correctly rounded to float32 (ties to even)
  double value = 0.0;              ///< the exact value rounded to double, for error reports
  double bound = 0.0;              ///< largest |computed - exact| a correct implementation may show
  bool may_overflow = false;       ///< +-inf or NaN is acceptable too (docs/error-model.md)
  bool must_be_nonfinite = false;  ///< depends on a NaN or infinite input: NaN or +-inf due
};

/// The five outputs in a fixed order, for reports and loops.
enum class Output { loss, kernel, bias, grad_kernel, grad_bias };
inline constexpr Output all_outputs[] = {Output::loss, Output::kernel, Output::bias,
                                         Output::grad_kernel, Output::grad_bias};
const char* to_string(Output o);

/// Expectations for every output of one case.
struct Expectation {
  std::vector<Expected> loss;  ///< one element
  std::vector<Expected> kernel, bias, grad_kernel, grad_bias;
  /// Slack of |p' - (p - lr g_reported)| beyond the final rounding (equation U2).
  std::vector<double> kernel_from_grad, bias_from_grad;
  std::int64_t step = 0;  ///< counter after the update
  double u = 0.0;         ///< unit roundoff the bounds assume

  const std::vector<Expected>& of(Output o) const;
};

/// Rounds every exact output correctly and bounds it under `model`. Non-finite inputs
/// are allowed: the outputs that depend on them must be non-finite, the others are
/// bounded as usual. Throws std::invalid_argument for shape errors. The exact values
/// come from the certified fast path (certified_step.hpp), which falls back to exact
/// rationals where it cannot certify a rounding: the result is expect_exact's, bit for bit.
Expectation expect(const Case& c, const ErrorModel& model = {});

/// The same expectation computed from the exact rational step alone (the reference for
/// the fast path; slower).
Expectation expect_exact(const Case& c, const ErrorModel& model = {});

}  // namespace sgdc
