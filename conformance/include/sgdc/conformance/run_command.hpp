#pragma once
/// \file
/// The `run` command, reusable: `sgd-conformance run` uses it for built-ins and adapter
/// commands, and `run_main` gives a C++ implementation its own conformance executable.
///
///     #include <sgdc/conformance/run_command.hpp>
///     class MyStep : public sgdc::Implementation { ... };
///     int main(int argc, char** argv) {
///       return sgdc::conformance::run_main(argc, argv, [] { return std::make_unique<MyStep>(); });
///     }

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "sgdc/conformance/open.hpp"
#include "sgdc/conformance/suite.hpp"

namespace sgdc::conformance {

/// Exit status for "skipped": an adapter that exits with it before its handshake says it
/// cannot run here (its framework is missing); ctest's SKIP_RETURN_CODE.
inline constexpr int skipped_status = 77;

/// Everything `run` takes from its command line.
struct RunCommand {
  std::string impl = "builtin:float32";
  SuiteOptions suite;
  OpenOptions open;
  int only_case = -1;
  std::string json_path, junit_path, xfails_path, save_failures_dir;
  /// Exit 0 when the verdict is this one ("conformant" or "not_conformant"), else 1:
  /// lets a test assert that a deliberately broken implementation is rejected.
  std::string expect = "conformant";
  /// How to rerun the same implementation, for replay lines (without "--seed ...").
  std::string replay_prefix;
};

/// Adds run's options to `cmd`; `--impl` only when `with_impl`.
void add_run_options(CLI::App& cmd, RunCommand& args, bool with_impl);

/// Runs the suite against what `open` returns and writes the reports. Returns the exit
/// status: 0 conformant, 1 not, 2 could not test, 77 skipped (see `expect`).
int execute(RunCommand& args, const std::function<std::unique_ptr<Implementation>()>& open);

/// A complete `main` for an in-process implementation: parses run's options (all but
/// --impl) and runs the suite against `make()`.
int run_main(int argc, char** argv, std::function<std::unique_ptr<Implementation>()> make);

}  // namespace sgdc::conformance
