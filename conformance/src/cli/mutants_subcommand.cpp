// `sgd-conformance mutants`: the kill matrix. Every built-in variant must conform and
// every mutant must be rejected, for each seed.
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/suite.hpp"
#include "sgdc/properties/shared_expectations.hpp"
#include "subcommands.hpp"

namespace sgdc::conformance::cli {

namespace {

struct MutantsArgs {
  int cases = 100;
  std::vector<std::uint64_t> seeds = {1, 2, 3, 4};
  bool markdown = false;
  bool suspects = false;
};

// Where a report names the mutant's class: the first suspect of a failing property, or
// its own verdict ("first"), a later suspect ("among"), or nowhere ("not named").
struct Naming {
  std::string cell;
  std::string line;  // the first failing property's suspected line, or its verdict's head
};

Naming naming(const builtin::Entry& e, const conformance::SuiteReport& report) {
  Naming out{"not named", ""};
  if (e.named_by.empty()) out.cell = "no class";
  bool first = false, among = false;
  std::string first_where, among_where;
  for (const conformance::PropertyOutcome& o : report.properties) {
    const auto& cx = o.report.counterexample;
    if (!cx) continue;
    const std::string& m = cx->message;
    if (out.line.empty())
      out.line = fmt::format("{}: {}", o.report.property,
                             cx->suspects.empty() ? m.substr(0, m.find('\n'))
                                                  : "suspected: " + cx->suspects[0] +
                                                        (cx->suspects.size() > 1 ? " (...)" : ""));
    if (e.named_by.empty()) continue;
    auto names = [&](const std::string& s) { return s.find(e.named_by) != std::string::npos; };
    const std::string head = m.substr(0, m.find("\n  suspected: "));
    if (!first && ((!cx->suspects.empty() && names(cx->suspects[0])) || names(head))) {
      first = true;
      first_where = o.report.property;
    }
    for (std::size_t i = 1; i < cx->suspects.size() && !among; ++i)
      if (names(cx->suspects[i])) {
        among = true;
        among_where = o.report.property;
      }
  }
  if (first)
    out.cell = "first (" + first_where + ")";
  else if (among)
    out.cell = "among (" + among_where + ")";
  for (char& ch : out.line)
    if (ch == '|') ch = '/';
  return out;
}

// The table of where each mutant's class is named, seed by seed (docs/reports.md).
int run_suspects(const MutantsArgs& a) {
  std::string header = "| mutant |";
  std::string rule = "|---|";
  for (std::uint64_t seed : a.seeds) {
    header += fmt::format(" seed {} |", seed);
    rule += "---|";
  }
  fmt::print("{} what seed {} reports first |\n{}---|\n", header, a.seeds.front(), rule);
  int first_everywhere = 0, mutants = 0;
  for (const builtin::Entry& e : builtin::catalogue()) {
    if (e.kind != builtin::Kind::mutant) continue;
    ++mutants;
    std::string row = "| " + e.name + " |";
    std::string line;
    bool all_first = !e.named_by.empty();
    for (std::uint64_t seed : a.seeds) {
      const auto impl = builtin::make(e);
      conformance::SuiteOptions options;
      options.run.cases = a.cases;
      options.run.seed = seed;
      const Naming n = naming(e, conformance::run_suite(*impl, options));
      all_first = all_first && n.cell.starts_with("first");
      row += " " + n.cell + " |";
      if (line.empty()) line = n.line;
    }
    first_everywhere += all_first ? 1 : 0;
    fmt::print("{} {} |\n", row, line.empty() ? "(no failure)" : line);
    std::fflush(stdout);
  }
  fmt::print("\n{} of {} mutants have their class named first at every seed\n", first_everywhere,
             mutants);
  return 0;
}

// "12" (cases to kill), "-" (survived), "n/a".
std::string cell(const conformance::PropertyOutcome& o) {
  const properties::PropertyReport& p = o.report;
  if (!p.applicable) return "n/a";
  if (p.passed) return "-";
  return std::to_string(p.cases);
}

int run(const MutantsArgs& a) {
  // One seed draws the same cases for every built-in of one declaration: the oracle's
  // results computed for the first serve the others, bit for bit (the default 4 seeds:
  // 33.8 s -> 18.9 s, peak RSS 20 -> 115 MB, docs/benchmarks.md).
  const properties::SharedExpectations shared;
  if (a.suspects) return run_suspects(a);
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
  cmd->add_flag("--suspects", args->suspects,
                "Instead of the kill matrix: for each mutant and seed, whether a report names "
                "its bug class first, among others, or not at all (a Markdown table)");
  cmd->callback([args, &status] { status = run(*args); });
}

}  // namespace sgdc::conformance::cli