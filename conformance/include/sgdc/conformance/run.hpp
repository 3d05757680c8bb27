#pragma once
/// \file
/// One conformance run, whole: open the implementation, run the suite, print the report,
/// write the report files, and give the exit status. `sgd-conformance run` and run_main
/// (run_main.hpp) are this with options from a command line.

#include <functional>
#include <memory>
#include <string>

#include "sgdc/conformance/exit_status.hpp"
#include "sgdc/conformance/suite.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance {

/// What a run does besides the suite's own options.
struct RunSettings {
  std::string impl = "builtin:float32";  ///< what is tested, as named in messages
  SuiteOptions suite;
  std::string json_path, junit_path, xfails_path, save_failures_dir;
  /// A recipe file (protocol/recipe_json.hpp) that narrows the declared recipe.
  std::string recipe_path;
  /// The verdict that makes the exit status 0: lets a test assert that a deliberately
  /// broken implementation is rejected.
  ExpectedVerdict expect = ExpectedVerdict::conformant;
  /// How to rerun the same implementation, for replay lines (replay_line.hpp).
  std::string replay_prefix;
};

/// Runs the suite against what `open` returns (which may throw: an adapter that cannot
/// start, or exits with skipped_status before its handshake) and writes the reports.
/// Returns the exit status (exit_status.hpp; 77 for a skipped adapter).
int run(RunSettings settings,
        const std::function<std::unique_ptr<properties::Implementation>()>& open);

}  // namespace sgdc::conformance
