#pragma once
/// \file
/// Known, accepted deviations of one implementation: a file of `skip` and `xfail` lines,
/// each with a reason (the array-api-tests convention).
///
///     # comment
///     skip  determinism                 # framework is nondeterministic by design
///     xfail special_values:*grad_bias*  # flushes subnormal gradients, declared ieee
///
/// A pattern is `PROPERTY[:MESSAGE]`, both shell globs: PROPERTY matches the property
/// name, MESSAGE (default `*`) the failure's text. A property with an `xfail` line keeps
/// running after an expected failure: a case fails as expected when each of its failing
/// output elements matches (the message's first line and the element's line), or, for a
/// failure not about elements, when its message does; any other failure is a failure.

#include <string>
#include <vector>

#include "sgdc/properties/runner.hpp"

namespace sgdc::conformance {

/// One line of the file.
struct ExpectedDeviation {
  enum class Kind { skip, xfail };
  Kind kind;
  std::string property;  ///< glob over property names
  std::string message;   ///< glob over the failure text
  std::string reason;
  int line = 0;
};

/// Parses the file; throws std::invalid_argument naming the file, the line and what is
/// wrong (unknown keyword, missing pattern, missing reason).
std::vector<ExpectedDeviation> read_expectations_file(const std::string& path);

/// The first `skip` line matching `property`, if any.
const ExpectedDeviation* find_skip(const std::vector<ExpectedDeviation>& list,
                                   const std::string& property);

/// The first `xfail` line for `property` whose MESSAGE matches `text`, if any.
const ExpectedDeviation* find_xfail(const std::vector<ExpectedDeviation>& list,
                                    const std::string& property, const std::string& text);

/// The first `xfail` line matching this report's failure, if any.
const ExpectedDeviation* find_xfail(const std::vector<ExpectedDeviation>& list,
                                    const properties::PropertyReport& report);

}  // namespace sgdc::conformance