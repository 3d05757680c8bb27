#include "sgdc/conformance/suite.hpp"

#include <algorithm>
#include <chrono>

namespace sgdc::conformance {

bool PropertyOutcome::counts_as_failure() const {
  return report.applicable && !report.passed && skip_reason.empty() && xfail_reason.empty();
}

std::string PropertyOutcome::verdict() const {
  if (!skip_reason.empty()) return "skip";
  if (!report.applicable) return "n/a";
  if (report.not_run) return "not_run";
  if (!xfail_reason.empty()) return "xfail";
  if (report.fault) return "fault";
  if (!report.passed) return "fail";
  return xpass ? "xpass" : "pass";
}

const char* to_string(SuiteVerdict v) {
  switch (v) {
    case SuiteVerdict::conformant:
      return "conformant";
    case SuiteVerdict::not_conformant:
      return "not_conformant";
    case SuiteVerdict::could_not_test:
      return "could_not_test";
  }
  return "?";
}

SuiteVerdict verdict_of(const std::vector<PropertyOutcome>& outcomes) {
  bool any_ran = false, any_failed = false;
  for (const PropertyOutcome& o : outcomes) {
    const properties::PropertyReport& p = o.report;
    if (!p.applicable || p.not_run || !o.skip_reason.empty()) continue;
    // A fault during a case counts as testing: the implementation was reached and broke.
    any_ran = any_ran || p.cases > 0 || p.fault.has_value();
    any_failed = any_failed || o.counts_as_failure();
  }
  if (!any_ran) return SuiteVerdict::could_not_test;
  return any_failed ? SuiteVerdict::not_conformant : SuiteVerdict::conformant;
}

SuiteReport run_suite(properties::Implementation& impl, const SuiteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SuiteReport report;
  report.declaration = impl.declaration();
  report.options = options;
  bool stopped = false;
  for (const properties::Property& p : properties::all_properties()) {
    if (!options.only.empty() &&
        std::find(options.only.begin(), options.only.end(), p.name) == options.only.end())
      continue;
    PropertyOutcome outcome;
    outcome.report.property = p.name;
    if (const auto* skip = find_skip(options.expectations, p.name)) {
      outcome.skip_reason = skip->reason;
      report.properties.push_back(std::move(outcome));
      continue;
    }
    if (stopped) {
      outcome.report.passed = false;
      outcome.report.not_run = true;
      report.properties.push_back(std::move(outcome));
      continue;
    }
    std::function<void(int)> progress;
    if (options.progress) {
      const int wanted = options.run.only_case ? 1 : options.run.cases;
      progress = [&options, wanted, &name = p.name](int done) {
        options.progress(name, done, wanted);
      };
    }
    // A case failing as an `xfail` line expects is counted apart; the property goes on.
    const ExpectedDeviation* first_match = nullptr;
    properties::RunOptions run = options.run;
    run.expected = [&](const std::string& text) {
      const ExpectedDeviation* d = find_xfail(options.expectations, p.name, text);
      if (d && !first_match) first_match = d;
      return d != nullptr;
    };
    outcome.report = run_property(p, impl, run, progress);
    const properties::PropertyReport& r = outcome.report;
    if (r.passed && r.expected_failures > 0 && first_match) {
      outcome.xfail_reason = first_match->reason;
    } else if (r.fault && !r.counterexample) {
      // A fault (a rejection, a broken adapter) is expected as a whole or not at all.
      if (const auto* x = find_xfail(options.expectations, r)) outcome.xfail_reason = x->reason;
    } else if (r.passed) {
      for (const auto& d : options.expectations)
        if (d.kind == ExpectedDeviation::Kind::xfail && d.property == p.name) outcome.xpass = true;
    }
    // An implementation that broke is unusable: the rest is not run.
    stopped = outcome.report.broke;
    report.properties.push_back(std::move(outcome));
  }
  report.verdict = verdict_of(report.properties);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace sgdc::conformance
