#include "sgdc/conformance/run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>

#include "sgdc/conformance/machine_report.hpp"
#include "sgdc/conformance/protocol/adapter_start_failure.hpp"
#include "sgdc/conformance/protocol/recipe_json.hpp"
#include "sgdc/conformance/regression/counterexample.hpp"
#include "sgdc/conformance/regression/fixture_json.hpp"
#include "sgdc/conformance/replay_line.hpp"
#include "sgdc/conformance/text_report.hpp"
#include "sgdc/properties/property.hpp"
#include "with_recipe.hpp"

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
  bool all = true;
  for (const PropertyOutcome& o : report.properties) {
    const auto& cx = o.report.counterexample;
    if (!cx) continue;
    // One that cannot be saved does not keep the others from being saved.
    try {
      const auto f = regression::counterexample_fixture(o.report.property, *cx, report.declaration,
                                                        report.options.run.seed);
      fmt::print("saved counterexample: {}\n", regression::write_fixture(f, dir).string());
    } catch (const std::exception& e) {
      fmt::print(stderr, "sgd-conformance: cannot save the counterexample of {}: {}\n",
                 o.report.property, e.what());
      all = false;
    }
  }
  return all;
}

int could_not_test(const RunSettings& a, const std::string& why) {
  fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, why);
  return could_not_test_status;
}

}  // namespace

int run(RunSettings a, const std::function<std::unique_ptr<properties::Implementation>()>& open) {
  std::unique_ptr<properties::Implementation> impl;
  try {
    for (const std::string& name : a.suite.only) properties::find_property(name);
    if (!a.xfails_path.empty()) a.suite.expectations = read_expectations_file(a.xfails_path);
    impl = open();
    if (!a.recipe_path.empty()) {
      impl =
          std::make_unique<WithRecipe>(std::move(impl), protocol::read_recipe_file(a.recipe_path));
      a.replay_prefix += " --recipe " + shell_quote(a.recipe_path);
    }
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
  if (!written) return could_not_test_status;
  return exit_status(report, a.expect);
}

}  // namespace sgdc::conformance