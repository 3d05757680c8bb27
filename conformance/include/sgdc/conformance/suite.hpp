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
  int cases = 100;
  std::uint64_t seed = 1;
  std::vector<std::string> only;  ///< property names; empty: all
  std::optional<int> only_case;   ///< replay one case index
  std::optional<int> num_shards;  ///< force this num_shards on every generated case
  /// Known deviations of this implementation (`--xfails FILE`).
  std::vector<ExpectedDeviation> expectations;
  /// Called with (property, cases done, cases wanted) as a run progresses.
  std::function<void(const std::string&, int, int)> progress;
};

/// Overall outcome, which is also the command's exit status.
enum class Verdict { conformant = 0, not_conformant = 1, could_not_test = 2 };

/// One property's report with what the expectations file says about it.
struct PropertyOutcome {
  PropertyReport report;
  std::string skip_reason;   ///< skipped by a `skip` line: its reason
  std::string xfail_reason;  ///< failed as a matching `xfail` line expects: its reason
  bool xpass = false;        ///< an `xfail` line names this property, but it passed

  /// Counts against conformance: failed (or broke) and not expected to.
  bool counts_as_failure() const;
  /// "pass", "FAIL", "FAULT", "xfail", "XPASS", "skip", "n/a" or "not run".
  std::string verdict() const;
};

/// All properties' reports for one implementation.
struct SuiteReport {
  Declaration declaration;
  SuiteOptions options;
  std::vector<PropertyOutcome> properties;
  Verdict verdict = Verdict::conformant;
  double seconds = 0.0;
};

/// Runs the selected properties in order. A fatal fault stops the run; the properties
/// already measured are kept and the rest are reported as not run.
SuiteReport run_suite(Implementation& impl, const SuiteOptions& options);

/// The verdict that `properties` add up to.
Verdict verdict_of(const std::vector<PropertyOutcome>& properties);

/// "conformant", "not_conformant" or "could_not_test".
const char* to_string(Verdict v);

}  // namespace sgdc::conformance
