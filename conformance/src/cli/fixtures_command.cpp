// `sgd-conformance fixtures`: generate fixture files, check an implementation against
// them, or validate them alone.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "commands.hpp"
#include "sgdc/conformance/fixtures/canonical.hpp"
#include "sgdc/conformance/fixtures/derive.hpp"
#include "sgdc/conformance/fixtures/fixture_error.hpp"
#include "sgdc/conformance/fixtures/fixture_json.hpp"
#include "sgdc/conformance/fixtures/generate.hpp"
#include "sgdc/conformance/fixtures/replay.hpp"
#include "sgdc/conformance/open.hpp"
#include "sgdc/conformance/protocol/adapter_start_failure.hpp"
#include "sgdc/conformance/run_command.hpp"

namespace sgdc::cli {

namespace {

constexpr int could_not_test = 2;

struct GenerateArgs {
  fixtures::GenerateOptions options;
  std::string magnitudes = "mixed";
  int n = 0, d = 0, k = 0;
  std::string out;
  bool canonical = false;
};

struct CheckArgs {
  std::string impl = "builtin:float32";
  conformance::OpenOptions open;
  std::string expect = "conformant";
  std::vector<std::string> paths;
  bool quiet = false;
};

int generate(GenerateArgs& a) {
  try {
    std::vector<fixtures::Fixture> list;
    if (a.canonical) {
      list = fixtures::canonical_fixtures();
    } else {
      a.options.magnitudes = fixtures::parse_magnitudes(a.magnitudes);
      if (a.n > 0) a.options.n = a.n;
      if (a.d > 0) a.options.d = a.d;
      if (a.k > 0) a.options.k = a.k;
      list = fixtures::generate_fixtures(a.options);
    }
    for (const auto& f : list) fixtures::write_fixture(f, a.out);
    fmt::print("wrote {} fixtures to {}\n", list.size(), a.out);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: fixtures generate: {}\n", e.what());
    return could_not_test;
  }
}

// Reads and verifies every file; the usable ones are returned, the others reported.
std::vector<std::pair<std::string, fixtures::Fixture>> load(const std::vector<std::string>& paths,
                                                            int& unusable) {
  std::vector<std::pair<std::string, fixtures::Fixture>> out;
  for (const auto& path : fixtures::fixture_files(paths)) {
    try {
      fixtures::Fixture f = fixtures::read_fixture(path);
      fixtures::verify_against_oracle(f, path.string());
      out.emplace_back(path.string(), std::move(f));
    } catch (const fixtures::FixtureError& e) {
      fmt::print(stderr, "{}\n", e.what());
      ++unusable;
    }
  }
  return out;
}

int validate(const std::vector<std::string>& paths) {
  int unusable = 0;
  try {
    const auto good = load(paths, unusable);
    fmt::print("{} fixtures valid, {} malformed or corrupt\n", good.size(), unusable);
    return unusable == 0 && !good.empty() ? 0 : could_not_test;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: fixtures validate: {}\n", e.what());
    return could_not_test;
  }
}

int check(const CheckArgs& a) {
  int unusable = 0;
  std::vector<std::pair<std::string, fixtures::Fixture>> good;
  try {
    good = load(a.paths, unusable);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: fixtures check: {}\n", e.what());
    return could_not_test;
  }
  if (good.empty() && unusable == 0) {
    fmt::print(stderr, "sgd-conformance: fixtures check: no fixture files found\n");
    return could_not_test;
  }
  std::unique_ptr<Implementation> impl;
  try {
    impl = conformance::open_implementation(a.impl, a.open);
  } catch (const protocol::AdapterStartFailure& e) {
    if (e.exit_status() && e.exit_status()->code == conformance::skipped_status) {
      fmt::print(stderr, "sgd-conformance: skipped {}: {}\n", a.impl, e.what());
      return conformance::skipped_status;
    }
    fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, e.what());
    return could_not_test;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, e.what());
    return could_not_test;
  }
  int passed = 0, failed = 0, faults = 0, not_run = 0;
  // Every fixture's inputs, in order, for an adapter that takes the next ones ahead.
  const std::size_t window = impl ? static_cast<std::size_t>(impl->prefetch_window()) : 0;
  std::vector<Case> inputs;
  if (window > 1)
    for (const auto& entry : good) inputs.push_back(entry.second.inputs);
  for (std::size_t i = 0; i < good.size(); ++i) {
    const auto& [path, f] = good[i];
    if (!impl) {
      ++not_run;
      continue;
    }
    if (window > 1)
      impl->prefetch(std::span<const Case>(inputs).subspan(i, std::min(window, inputs.size() - i)));
    try {
      const fixtures::ReplayOutcome r = fixtures::replay(f, *impl);
      if (r.passed) {
        ++passed;
        if (!a.quiet) fmt::print("pass  {}\n", path);
      } else {
        ++failed;
        fmt::print("FAIL  {}\n", path);
        for (const auto& line : r.failures) fmt::print("      {}\n", line);
      }
    } catch (const ImplementationFault& e) {
      ++faults;
      fmt::print("FAULT {}: {}\n", path, e.what());
      if (e.fatal()) impl.reset();  // nothing more can run
    }
  }
  fmt::print(
      "\n{}: {} fixtures, {} passed, {} failed, {} faults, {} not run, {} malformed or "
      "corrupt\n",
      a.impl, good.size() + static_cast<std::size_t>(unusable), passed, failed, faults, not_run,
      unusable);
  // A corrupt fixture says nothing about the implementation.
  if (unusable > 0) return could_not_test;
  if (a.expect == "not_conformant") return failed > 0 && faults == 0 ? 0 : 1;
  return failed == 0 && faults == 0 && not_run == 0 ? 0 : 1;
}

}  // namespace

void add_fixtures(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "fixtures", "Regression fixtures: generate them, check an implementation against them");
  cmd->require_subcommand(1);

  auto g = std::make_shared<GenerateArgs>();
  CLI::App* gen = cmd->add_subcommand(
      "generate", "Write random fixtures (same arguments, same bytes), or the canonical set");
  gen->add_option("--seed", g->options.seed, "Seed")->capture_default_str();
  gen->add_option("--count", g->options.count, "Number of fixtures")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  gen->add_option("--out", g->out, "Directory to write NAME.json files to")->required();
  gen->add_option("--magnitudes", g->magnitudes, "unit, wide, extreme, cancellation or mixed")
      ->check(CLI::IsMember({"unit", "wide", "extreme", "cancellation", "mixed"}))
      ->capture_default_str();
  gen->add_option("--max-dim", g->options.max_dim, "Largest n, d, k drawn")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  gen->add_option("--max-shards", g->options.max_shards, "Largest num_shards drawn")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  gen->add_option("--n", g->n, "Fix the batch size n")->check(CLI::Range(1, 4096));
  gen->add_option("--d", g->d, "Fix the input features d")->check(CLI::Range(1, 4096));
  gen->add_option("--k", g->k, "Fix the output features k")->check(CLI::Range(1, 4096));
  gen->add_flag("--canonical", g->canonical,
                "Write the curated set of fixtures/canonical/ instead (ignores the other "
                "options but --out)");
  gen->callback([g] { set_exit_status(generate(*g)); });

  auto c = std::make_shared<CheckArgs>();
  CLI::App* chk = cmd->add_subcommand(
      "check",
      "Replay fixture files against an implementation (exit 0 all pass, 1 some fail, "
      "2 malformed or corrupt fixture or could not test, 77 skipped)");
  chk->add_option("--impl", c->impl, "builtin:NAME, or an adapter command speaking protocol v1")
      ->capture_default_str();
  conformance::add_open_options(*chk, c->open);
  chk->add_option("--expect", c->expect,
                  "Verdict that makes the exit status 0: conformant or not_conformant")
      ->check(CLI::IsMember({"conformant", "not_conformant"}))
      ->capture_default_str();
  chk->add_flag("--quiet,-q", c->quiet, "Print only failures and the summary");
  chk->add_option("paths", c->paths, "Fixture files, or directories searched for *.json")
      ->required();
  chk->callback([c] { set_exit_status(check(*c)); });

  auto v = std::make_shared<std::vector<std::string>>();
  CLI::App* val = cmd->add_subcommand(
      "validate", "Check fixture files against the schema and the oracle (exit 0 or 2)");
  val->add_option("paths", *v, "Fixture files, or directories searched for *.json")->required();
  val->callback([v] { set_exit_status(validate(*v)); });
}

}  // namespace sgdc::cli
