#include "sgdc/conformance/run_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>

#include "sgdc/conformance/fixtures/counterexample.hpp"
#include "sgdc/conformance/fixtures/fixture_json.hpp"
#include "sgdc/conformance/machine_report.hpp"
#include "sgdc/conformance/protocol/adapter_start_failure.hpp"
#include "sgdc/conformance/text_report.hpp"
#include "sgdc/properties/property.hpp"

namespace sgdc::conformance {

namespace {

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

// Each shrunk counterexample as a fixture in `dir`, ready to commit as a regression test.
bool save_failures(const SuiteReport& report, const std::string& dir) {
  if (dir.empty()) return true;
  for (const PropertyOutcome& o : report.properties) {
    const auto& cx = o.report.counterexample;
    if (!cx) continue;
    try {
      const auto f = fixtures::counterexample_fixture(o.report.property, *cx, report.declaration,
                                                      report.options.seed);
      fmt::print("saved counterexample: {}\n", fixtures::write_fixture(f, dir).string());
    } catch (const std::exception& e) {
      fmt::print(stderr, "sgd-conformance: cannot save the counterexample of {}: {}\n",
                 o.report.property, e.what());
      return false;
    }
  }
  return true;
}

int could_not_test(const RunCommand& a, const std::string& why) {
  fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, why);
  return static_cast<int>(Verdict::could_not_test);
}

}  // namespace

void add_run_options(CLI::App& cmd, RunCommand& a, bool with_impl) {
  if (with_impl) {
    cmd.add_option("--impl", a.impl, "builtin:NAME, or an adapter command speaking protocol v1")
        ->capture_default_str();
  }
  cmd.add_option("--cases", a.suite.cases, "Passing cases per property")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--seed", a.suite.seed, "Seed of the case generators")->capture_default_str();
  cmd.add_option("--property", a.suite.only, "Run only this property (repeatable)");
  cmd.add_option("--case", a.only_case, "Replay only this case index")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--shards", a.suite.num_shards, "Give every generated case this num_shards")
      ->check(CLI::PositiveNumber);
  add_open_options(cmd, a.open);
  cmd.add_option("--json", a.json_path, "Write the JSON report to FILE");
  cmd.add_option("--junit", a.junit_path, "Write a JUnit XML report to FILE");
  cmd.add_option("--save-failures", a.save_failures_dir,
                 "Write each shrunk counterexample as a fixture file to DIR");
  cmd.add_option("--xfails", a.xfails_path,
                 "Known deviations: lines 'skip|xfail PROPERTY[:MESSAGE]  # reason'");
  cmd.add_option("--expect", a.expect,
                 "Verdict that makes the exit status 0: conformant or not_conformant")
      ->check(CLI::IsMember({"conformant", "not_conformant"}))
      ->capture_default_str();
}

int execute(RunCommand& a, const std::function<std::unique_ptr<Implementation>()>& open) {
  if (a.only_case >= 0) a.suite.only_case = a.only_case;
  std::unique_ptr<Implementation> impl;
  try {
    for (const std::string& name : a.suite.only) find_property(name);
    if (!a.xfails_path.empty()) a.suite.expectations = read_expectations_file(a.xfails_path);
    impl = open();
  } catch (const protocol::AdapterStartFailure& e) {
    if (e.exit_status() && e.exit_status()->code == skipped_status) {
      fmt::print(stderr, "sgd-conformance: skipped {}: {}\n", a.impl, e.what());
      return skipped_status;
    }
    return could_not_test(a, e.what());
  } catch (const std::exception& e) {
    return could_not_test(a, e.what());
  }
  a.suite.progress = progress_printer();
  const SuiteReport report = run_suite(*impl, a.suite);
  impl.reset();  // stop an adapter before reporting
  write_text_report(std::cout, report, a.replay_prefix);
  const bool written =
      write_file(a.json_path,
                 [&](std::ostream& os) { write_json_report(os, report, a.replay_prefix); }) &&
      write_file(a.junit_path,
                 [&](std::ostream& os) { write_junit_report(os, report, a.replay_prefix); }) &&
      save_failures(report, a.save_failures_dir);
  if (!written || report.verdict == Verdict::could_not_test)
    return static_cast<int>(Verdict::could_not_test);
  // An expected rejection must be a counterexample: an implementation that broke down
  // (crash, hang, protocol error) was not rejected by any property.
  const bool faulted =
      std::any_of(report.properties.begin(), report.properties.end(),
                  [](const PropertyOutcome& o) { return o.report.fault.has_value(); });
  if (a.expect == "not_conformant" && faulted) return 1;
  return to_string(report.verdict) == a.expect ? 0 : 1;
}

int run_main(int argc, char** argv, std::function<std::unique_ptr<Implementation>()> make) {
  CLI::App app{"Conformance of one SGD step implementation (sgd-conformance)"};
  RunCommand args;
  add_run_options(app, args, false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(Verdict::could_not_test);
  }
  args.impl = argv[0];
  args.replay_prefix = argv[0];
  return execute(args, make);
}

}  // namespace sgdc::conformance
