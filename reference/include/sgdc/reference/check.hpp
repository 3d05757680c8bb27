#pragma once
/// \file
/// Judging one float32 value against its expectation.

#include <cstdint>
#include <optional>
#include <string>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/expectation.hpp"

namespace sgdc::reference {

/// Verdict on one output element.
struct ElementCheck {
  bool ok = false;
  double error = 0.0;  ///< |actual - exact| (0 for an accepted non-finite value)
  double ratio = 0.0;  ///< error / bound; <= 1 when ok for finite values
  /// ULP distance from the correctly rounded value, where it means something: the actual
  /// value is finite and the exact one lies farther from zero than the bound (near zero a
  /// correct result may be any number of ULPs away: the bound is relative to the terms of
  /// the sum, not to its cancelled result). Empty otherwise.
  std::optional<std::uint64_t> ulps;
  /// The bound in ULPs of the correctly rounded value (infinite where the value is 0 or
  /// not finite): where it is small, ULPs are the natural measure of an error.
  double bound_ulps = 0.0;
  std::string why;  ///< empty when ok, else a sentence saying what is wrong
};

/// Applies the acceptance rule of docs/error-model.md ("Verdict"): finite values within
/// the bound; non-finite where a non-finite input or a possible overflow allows it, or
/// equal to the correctly rounded infinity.
ElementCheck check_element(float actual, const Expected& e);

/// Whether a step may refuse the case instead of returning results (docs/error-model.md,
/// "Verdict"): some input is NaN or +-inf, or some output may overflow (an overflow
/// trapped rather than rounded to +-inf, as torch traps a scalar's).
bool refusal_allowed(const Case& c, const Expectation& e);

}  // namespace sgdc::reference
