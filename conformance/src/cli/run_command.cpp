// `sgd-conformance run`: every property against one implementation.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "sgdc/conformance/machine_report.hpp"
#include "sgdc/conformance/open.hpp"
#include "sgdc/conformance/protocol/adapter_start_failure.hpp"
#include "sgdc/conformance/suite.hpp"
#include "sgdc/conformance/text_report.hpp"
#include "sgdc/properties/property.hpp"

namespace sgdc::cli {

namespace {

constexpr int skipped_status = 77;

struct RunArgs {
  std::string impl = "builtin:float32";
  conformance::SuiteOptions suite;
  conformance::OpenOptions open;
  int only_case = -1;
  std::string json_path, junit_path, xfails_path;
  std::string argv0;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// On a terminal the line is redrawn in place; elsewhere (CI logs) one line every 10 s.
std::function<void(const std::string&, int, int)> progress_printer() {
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto last =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [tty, last](const std::string& name, int done, int wanted) {
    const auto now = std::chrono::steady_clock::now();
    if (tty) {
      fmt::print(stderr, "\r{:<18} {:>5}/{:<5}", name, done, wanted);
      if (done == wanted) fmt::print(stderr, "\r{:40}\r", "");
    } else if (now - *last > std::chrono::seconds(10)) {
      fmt::print(stderr, "sgd-conformance: {} {}/{} cases\n", name, done, wanted);
      *last = now;
    }
  };
}

template <class Writer>
bool write_file(const std::string& path, Writer write) {
  if (path.empty()) return true;
  std::ofstream out(path);
  if (out) write(out);
  if (!out) {
    fmt::print(stderr, "sgd-conformance: cannot write {}\n", path);
    return false;
  }
  return true;
}

int run(RunArgs& a) {
  if (a.only_case >= 0) a.suite.only_case = a.only_case;
  std::unique_ptr<Implementation> impl;
  try {
    for (const std::string& name : a.suite.only) find_property(name);
    if (!a.xfails_path.empty())
      a.suite.expectations = conformance::read_expectations_file(a.xfails_path);
    impl = conformance::open_implementation(a.impl, a.open);
  } catch (const protocol::AdapterStartFailure& e) {
    // Exit status 77 before the handshake: the adapter says it cannot run here (its
    // framework is missing), which callers such as ctest report as skipped.
    if (e.exit_status() && e.exit_status()->code == skipped_status) {
      fmt::print(stderr, "sgd-conformance: skipped {}: {}\n", a.impl, e.what());
      return skipped_status;
    }
    fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, e.what());
    return static_cast<int>(conformance::Verdict::could_not_test);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, e.what());
    return static_cast<int>(conformance::Verdict::could_not_test);
  }
  a.suite.progress = progress_printer();
  const conformance::SuiteReport report = conformance::run_suite(*impl, a.suite);
  impl.reset();  // stop an adapter before reporting
  const std::string replay = fmt::format("{} run --impl {}", a.argv0, shell_quote(a.impl));
  conformance::write_text_report(std::cout, report, replay);
  const bool written =
      write_file(a.json_path,
                 [&](std::ostream& os) { conformance::write_json_report(os, report, replay); }) &&
      write_file(a.junit_path,
                 [&](std::ostream& os) { conformance::write_junit_report(os, report, replay); });
  if (!written && report.verdict == conformance::Verdict::conformant)
    return static_cast<int>(conformance::Verdict::could_not_test);
  return static_cast<int>(report.verdict);
}

}  // namespace

void add_run(CLI::App& app, const char* argv0) {
  auto args = std::make_shared<RunArgs>();
  args->argv0 = argv0;
  CLI::App* cmd = app.add_subcommand("run", "Run every property against one implementation");
  cmd->add_option("--impl", args->impl, "builtin:NAME, or an adapter command speaking protocol v1")
      ->capture_default_str();
  cmd->add_option("--cases", args->suite.cases, "Passing cases per property")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", args->suite.seed, "Seed of the case generators")->capture_default_str();
  cmd->add_option("--property", args->suite.only, "Run only this property (repeatable)");
  cmd->add_option("--case", args->only_case, "Replay only this case index")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--timeout", args->open.case_timeout_s, "Seconds an adapter may take per case")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--handshake-timeout", args->open.handshake_timeout_s,
                  "Seconds an adapter may take to start and answer hello")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--json", args->json_path, "Write the JSON report to FILE");
  cmd->add_option("--junit", args->junit_path, "Write a JUnit XML report to FILE");
  cmd->add_option("--xfails", args->xfails_path,
                  "Known deviations: lines 'skip|xfail PROPERTY[:MESSAGE]  # reason'");
  cmd->callback([args] { set_exit_status(run(*args)); });
}

}  // namespace sgdc::cli
