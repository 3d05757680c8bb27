#pragma once
/// \file
/// The human-readable report of a suite run: a table, then each counterexample with the
/// command that replays it.

#include <iosfwd>
#include <string>

#include "sgdc/conformance/suite.hpp"

namespace sgdc::conformance {

/// Writes the report. `replay_prefix` is the command that selects the same
/// implementation, e.g. "build/bin/sgd-conformance run --impl 'builtin:float32'".
void write_text_report(std::ostream& os, const SuiteReport& report,
                       const std::string& replay_prefix);

/// "n=3 d=2 k=4 S=2" for a case.
std::string shape_of(const reference::Case& c);

/// A short description of a declaration: capabilities, unit roundoff, subnormals.
std::string describe(const properties::Declaration& d);

}  // namespace sgdc::conformance