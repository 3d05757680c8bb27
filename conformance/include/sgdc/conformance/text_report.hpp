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

/// A property's verdict (PropertyOutcome::verdict) as the text report shows it: FAIL,
/// FAULT and XPASS in capitals, "not run", the rest as they are.
std::string verdict_label(const std::string& verdict);

/// One line that sums up a counterexample: the property, the shrunk shape, the first
/// failing element (or the verdict's first line) and the shrunk case's err/bound.
std::string counterexample_summary(const std::string& property,
                                   const properties::Counterexample& cx);

/// The shrunk inputs, the property's verdict on them and the replay command, as the text
/// report prints them under a counterexample (two spaces before each part).
std::string counterexample_body(const properties::Counterexample& cx, const std::string& replay);

/// "n=3 d=2 k=4 S=2" for a case.
std::string shape_of(const reference::Case& c);

/// A short description of a declaration: capabilities, unit roundoff, subnormals.
std::string describe(const properties::Declaration& d);

}  // namespace sgdc::conformance