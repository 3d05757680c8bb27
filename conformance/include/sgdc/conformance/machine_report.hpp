#pragma once
/// \file
/// Machine-readable reports of a suite run: JSON (everything measured) and JUnit XML
/// (one testcase per property, for CI dashboards).

#include <iosfwd>
#include <string>

#include "sgdc/conformance/suite.hpp"

namespace sgdc::conformance {

/// The JSON report: implementation, options, verdict, and per property its verdict,
/// counts, worst error/bound and ULPs per output, counterexample (inputs as base64 and as
/// readable values, the message, the replay command) and fault. `replay_prefix` as for
/// write_text_report.
void write_json_report(std::ostream& os, const SuiteReport& report,
                       const std::string& replay_prefix);

/// JUnit XML: a testsuite for the implementation, a testcase per property; failures and
/// faults as <failure>, xfail / skip / n/a as <skipped>.
void write_junit_report(std::ostream& os, const SuiteReport& report,
                        const std::string& replay_prefix);

}  // namespace sgdc::conformance