#pragma once
/// \file
/// Judging one float32 value against its expectation.

#include <cstdint>
#include <string>

#include "sgdc/reference/oracle.hpp"

namespace sgdc {

/// Verdict on one output element.
struct ElementCheck {
  bool ok = false;
  double error = 0.0;      ///< |actual - exact| (0 for an accepted non-finite value)
  double ratio = 0.0;      ///< error / bound; <= 1 when ok for finite values
  std::uint64_t ulps = 0;  ///< ULP distance from the correctly rounded value
  std::string why;         ///< empty when ok, else a sentence saying what is wrong
};

/// Applies the acceptance rule of docs/error-model.md ("Verdict"): finite values within
/// the bound; non-finite where a non-finite input or a possible overflow allows it, or
/// equal to the correctly rounded infinity.
ElementCheck check_element(float actual, const Expected& e);

}  // namespace sgdc
