// `sgd-conformance mutants`: the kill matrix. Every built-in variant must conform and
// every mutant must be rejected, for each seed.
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/suite.hpp"
#include "subcommands.hpp"

namespace sgdc::conformance::cli {

namespace {

struct MutantsArgs {
  int cases = 100;
  std::vector<std::uint64_t> seeds = {1, 2, 3, 4};
  bool markdown = false;
};

// "12" (cases to kill), "-" (survived), "n/a".
std::string cell(const conformance::PropertyOutcome& o) {
  const properties::PropertyReport& p = o.report;
  if (!p.applicable) return "n/a";
  if (p.passed) return "-";
  return std::to_string(p.cases);
}

int run(const MutantsArgs& a) {
  std::vector<std::string> names;
  for (const properties::Property& p : properties::all_properties()) names.push_back(p.name);
  bool all_good = true;
  const char* sep = a.markdown ? " | " : " ";
  for (std::uint64_t seed : a.seeds) {
    fmt::print(
        "\nseed {}, {} cases per property; cells: cases until the first failure, '-' "
        "passed\n\n",
        seed, a.cases);
    std::string header = fmt::format("{:<24}{}{:<9}", "implementation", sep, "expected");
    for (const auto& n : names)
      header += a.markdown ? fmt::format("{}{}", sep, n) : fmt::format("{}{:>8.8}", sep, n);
    header += fmt::format("{}{}", sep, "verdict");
    fmt::print("{}{}{}\n", a.markdown ? "| " : "", header, a.markdown ? " |" : "");
    if (a.markdown) {
      std::string rule = "|---|---|";
      for (std::size_t i = 0; i <= names.size(); ++i) rule += "---|";
      fmt::print("{}\n", rule);
    }
    for (const builtin::Entry& e : builtin::catalogue()) {
      const auto impl = builtin::make(e);
      conformance::SuiteOptions options;
      options.run.cases = a.cases;
      options.run.seed = seed;
      const auto report = conformance::run_suite(*impl, options);
      const bool must_fail = e.kind == builtin::Kind::mutant;
      const bool failed = report.verdict != SuiteVerdict::conformant;
      const bool good = must_fail == failed;
      all_good = all_good && good;
      std::string row = fmt::format("{:<24}{}{:<9}", e.name, sep, must_fail ? "reject" : "accept");
      for (const auto& p : report.properties) row += fmt::format("{}{:>8}", sep, cell(p));
      row += fmt::format(
          "{}{}", sep,
          good ? (failed ? "rejected" : "accepted") : (failed ? "WRONGLY REJECTED" : "SURVIVED"));
      fmt::print("{}{}{}\n", a.markdown ? "| " : "", row, a.markdown ? " |" : "");
      std::fflush(stdout);
    }
  }
  fmt::print("\n{}\n", all_good ? "kill matrix: every mutant rejected, every variant accepted"
                                : "kill matrix: FAILED (see SURVIVED / WRONGLY REJECTED)");
  return all_good ? 0 : 1;
}

}  // namespace

void add_mutants(CLI::App& app, int& status) {
  auto args = std::make_shared<MutantsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "mutants", "Kill matrix: run every property against every built-in variant and mutant");
  cmd->add_option("--cases", args->cases, "Passing cases per property")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", args->seeds, "Seeds (repeatable)")->capture_default_str();
  cmd->add_flag("--markdown", args->markdown, "Print Markdown tables");
  cmd->callback([args, &status] { status = run(*args); });
}

}  // namespace sgdc::conformance::cli