#pragma once
/// \file
/// Runs every property against one implementation and gives the overall verdict.

#include <functional>
#include <string>
#include <vector>

#include "sgdc/conformance/expectations_file.hpp"
#include "sgdc/properties/runner.hpp"

namespace sgdc::conformance {

/// How to run the suite.
struct SuiteOptions {
  properties::RunOptions run;     ///< cases, seed, the case to replay, what shapes the cases
  std::vector<std::string> only;  ///< property names; empty: all
  /// Known deviations of this implementation (`--xfails FILE`).
  std::vector<ExpectedDeviation> expectations;
  /// Called with (property, cases done, cases wanted) as a run progresses.
  std::function<void(const std::string&, int, int)> progress;
};

/// The suite's overall verdict on one implementation.
enum class SuiteVerdict { conformant, not_conformant, could_not_test };

/// One property's report with what the expectations file says about it.
struct PropertyOutcome {
  properties::PropertyReport report;
  std::string skip_reason;   ///< skipped by a `skip` line: its reason
  std::string xfail_reason;  ///< failed as a matching `xfail` line expects: its reason
  bool xpass = false;        ///< an `xfail` line names this property, but it passed

  /// Counts against conformance: failed (or broke) and not expected to.
  bool counts_as_failure() const;
  /// The property's verdict in the reports' one vocabulary (docs/report.schema.json):
  /// "pass", "fail", "fault", "xfail", "xpass", "skip", "n/a" or "not_run". The text
  /// report shows it as text_report.hpp's verdict_label says.
  std::string verdict() const;
};

/// All properties' reports for one implementation.
struct SuiteReport {
  properties::Declaration declaration;
  SuiteOptions options;
  std::vector<PropertyOutcome> properties;
  SuiteVerdict verdict = SuiteVerdict::conformant;
  double seconds = 0.0;
};

/// Runs the selected properties in order. A fault stops the run; the properties already
/// measured are kept and the rest are reported as not run.
SuiteReport run_suite(properties::Implementation& impl, const SuiteOptions& options);

/// The verdict that `outcomes` add up to.
SuiteVerdict verdict_of(const std::vector<PropertyOutcome>& outcomes);

/// "conformant", "not_conformant" or "could_not_test".
const char* to_string(SuiteVerdict v);

}  // namespace sgdc::conformance
