// `sgd-conformance fixtures`: generate fixture files, check an implementation against
// them, or validate them alone.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "run_options.hpp"
#include "sgdc/conformance/exit_status.hpp"
#include "sgdc/conformance/open.hpp"
#include "sgdc/conformance/protocol/adapter_start_failure.hpp"
#include "sgdc/conformance/protocol/recipe_json.hpp"
#include "sgdc/conformance/regression/canonical.hpp"
#include "sgdc/conformance/regression/derive.hpp"
#include "sgdc/conformance/regression/fixture_error.hpp"
#include "sgdc/conformance/regression/fixture_json.hpp"
#include "sgdc/conformance/regression/generate.hpp"
#include "sgdc/conformance/regression/replay.hpp"
#include "sgdc/properties/diagnosis.hpp"
#include "sgdc/reference/oracle.hpp"
#include "subcommands.hpp"

namespace sgdc::conformance::cli {

namespace {

struct GenerateArgs {
  regression::GenerateOptions options;
  std::string magnitudes = "mixed";
  int n = 0, d = 0, k = 0;
  std::vector<std::string> optimizers;
  std::string recipe;
  std::string param_dtype = "float32", reduce_dtype, master_dtype = "float32";
  std::string out;
  bool canonical = false;
};

struct CheckArgs {
  std::string impl = "builtin:float32";
  protocol::AdapterOptions adapter;
  ExpectedVerdict expect = ExpectedVerdict::conformant;
  std::vector<std::string> paths;
  bool quiet = false;
};

// Every optimizer of the reference's table, by its name.
std::vector<std::string> optimizer_names() {
  std::vector<std::string> out;
  for (const reference::OptimizerInfo& o : reference::optimizer_table) out.emplace_back(o.name);
  return out;
}

int generate(GenerateArgs& a) {
  try {
    std::vector<regression::Fixture> list;
    if (a.canonical) {
      list = regression::canonical_fixtures();
    } else {
      a.options.magnitudes = regression::parse_magnitudes(a.magnitudes);
      if (a.n > 0) a.options.n = a.n;
      if (a.d > 0) a.options.d = a.d;
      if (a.k > 0) a.options.k = a.k;
      for (const std::string& name : a.optimizers)
        a.options.optimizers.push_back(*reference::parse_optimizer_kind(name));
      if (!a.recipe.empty()) {
        a.options.recipe = protocol::read_recipe_file(a.recipe);
        // The fixtures are for any implementation: every option is open to the recipe.
        properties::Capabilities all;
        all.momentum = properties::MomentumSupport{
            .dampening = true, .nesterov = true, .coupled_decay = true, .decoupled_decay = true};
        all.adam = properties::AdamSupport{
            .coupled_decay = true, .decoupled_decay = true, .eps_root = true};
        properties::validate(a.options.recipe, all);
      }
      // Precision stages (docs/spec/step.md, "Mixed precision by stage"): reduce_dtype
      // follows param_dtype unless given, as the protocol's.
      reference::Stages& st = a.options.arithmetic.stages;
      st.param = *reference::parse_format(a.param_dtype);
      st.reduce = *reference::parse_format(a.reduce_dtype.empty() ? a.param_dtype : a.reduce_dtype);
      st.master = *reference::parse_format(a.master_dtype);
      if (const std::string problem = reference::stages_problem(st); !problem.empty())
        throw std::invalid_argument("precision: " + problem);
      list = regression::generate_fixtures(a.options);
    }
    std::string names;
    for (const auto& f : list) {
      regression::write_fixture(f, a.out);
      names += (names.empty() ? "" : ", ") + f.name;
    }
    fmt::print("wrote {} {}fixtures to {}{}\n", list.size(), a.canonical ? "canonical " : "", a.out,
               names.empty() ? "" : ": " + names);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: fixtures generate: {}\n", e.what());
    return could_not_test_status;
  }
}

// Reads and verifies every file; the usable ones are returned, the others reported.
std::vector<std::pair<std::string, regression::Fixture>> load(const std::vector<std::string>& paths,
                                                              int& unusable) {
  std::vector<std::pair<std::string, regression::Fixture>> out;
  for (const auto& path : regression::fixture_files(paths)) {
    try {
      regression::Fixture f = regression::read_fixture(path);
      regression::verify_against_oracle(f, path.string());
      out.emplace_back(path.string(), std::move(f));
    } catch (const regression::FixtureError& e) {
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
    return unusable == 0 && !good.empty() ? 0 : could_not_test_status;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: fixtures validate: {}\n", e.what());
    return could_not_test_status;
  }
}

int check(const CheckArgs& a) {
  int unusable = 0;
  std::vector<std::pair<std::string, regression::Fixture>> good;
  try {
    good = load(a.paths, unusable);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: fixtures check: {}\n", e.what());
    return could_not_test_status;
  }
  if (good.empty() && unusable == 0) {
    fmt::print(stderr, "sgd-conformance: fixtures check: no fixture files found\n");
    return could_not_test_status;
  }
  std::unique_ptr<properties::Implementation> impl;
  try {
    impl = conformance::open_implementation(a.impl, a.adapter);
  } catch (const protocol::AdapterStartFailure& e) {
    if (e.exit_status() && e.exit_status()->code == conformance::skipped_status) {
      fmt::print(stderr, "sgd-conformance: skipped {}: {}\n", a.impl, e.what());
      return conformance::skipped_status;
    }
    fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, e.what());
    return could_not_test_status;
  } catch (const std::exception& e) {
    fmt::print(stderr, "sgd-conformance: could not test {}: {}\n", a.impl, e.what());
    return could_not_test_status;
  }
  int passed = 0, failed = 0, faults = 0, not_run = 0;
  const properties::Declaration declaration = impl->declaration();
  // A fixture outside what the implementation declares is not sent, as `run` would never
  // send its case: it says nothing about the implementation.
  const std::size_t total = good.size();
  std::size_t not_applicable = 0;
  std::erase_if(good, [&](const auto& entry) {
    const auto why = properties::outside_declaration(entry.second.inputs, declaration);
    if (!why) return false;
    ++not_applicable;
    if (!a.quiet) fmt::print("n/a   {}: {}\n", entry.first, *why);
    return true;
  });
  if (good.empty() && unusable == 0) {
    // Nothing the implementation declares: nothing tested, which is no pass.
    fmt::print(stderr,
               "sgd-conformance: could not test {}: none of the {} fixtures lies inside what it "
               "declares\n",
               a.impl, total);
    return could_not_test_status;
  }
  // As `run` reports a counterexample: the first failing elements, the bug class the
  // numbers point to, and the inputs; with -q one line per failing fixture.
  auto report = [&](const std::string& path, const regression::Fixture& f,
                    const properties::StepOutcome& outcome, const regression::ReplayOutcome& r) {
    if (r.passed) {
      ++passed;
      if (!a.quiet) fmt::print("pass  {}\n", path);
      return;
    }
    ++failed;
    if (a.quiet) {
      fmt::print("FAIL  {}: {}{}\n", path, r.failures.empty() ? "failed" : r.failures.front(),
                 r.failures.size() > 1 ? fmt::format(" (and {} more)", r.failures.size() - 1) : "");
      return;
    }
    fmt::print("FAIL  {}\n", path);
    constexpr std::size_t listed = 5;
    for (std::size_t i = 0; i < r.failures.size() && i < listed; ++i)
      fmt::print("      {}\n", r.failures[i]);
    if (r.failures.size() > listed)
      fmt::print("      ... and {} more\n", r.failures.size() - listed);
    if (outcome.result && !reference::has_nonfinite_input(f.inputs)) {
      const std::string suspects = properties::join_suspects(properties::suspected_bugs(
          f.inputs, *outcome.result, reference::expect(f.inputs, declaration.arithmetic)));
      if (!suspects.empty()) fmt::print("      suspected: {}\n", suspects);
    }
    std::ostringstream shown;
    reference::showValue(f.inputs, shown);
    std::string inputs = shown.str();
    for (std::size_t at = 0; (at = inputs.find('\n', at)) != std::string::npos; at += 9)
      inputs.replace(at, 1, "\n        ");
    fmt::print("      inputs: {}\n", inputs);
  };
  // The fixtures' inputs go to the implementation a batch at a time.
  constexpr std::size_t batch = 8;
  for (std::size_t first = 0; first < good.size(); first += batch) {
    const std::size_t count = std::min(batch, good.size() - first);
    if (!impl) {
      not_run += static_cast<int>(count);
      continue;
    }
    std::vector<reference::Case> inputs;
    for (std::size_t i = first; i < first + count; ++i) inputs.push_back(good[i].second.inputs);
    std::vector<properties::StepOutcome> outcomes;
    std::size_t judged = 0;
    try {
      outcomes = impl->step_batch(inputs);
    } catch (const properties::ImplementationFault& e) {
      // The answers before the fault are judged; the rest is a fault, then not run.
      outcomes = e.completed();
      fmt::print("FAULT {}: {}\n", good[first + std::min(outcomes.size(), count - 1)].first,
                 e.what());
      ++faults;
      not_run += static_cast<int>(count - std::min(outcomes.size() + 1, count));
      impl.reset();  // nothing more can run
    }
    for (; judged < outcomes.size() && judged < count; ++judged) {
      const auto& [path, f] = good[first + judged];
      regression::ReplayOutcome r = regression::judge_replay(f, outcomes[judged], declaration);
      try {
        if (impl) regression::replay_property(f, *impl, r);
      } catch (const properties::ImplementationFault& e) {
        fmt::print("FAULT {}: {}\n", path, e.what());
        ++faults;
        impl.reset();
      }
      report(path, f, outcomes[judged], r);
    }
  }
  fmt::print(
      "\n{}: {} fixtures, {} passed, {} failed, {} faults, {} not run, {} malformed or "
      "corrupt{}\n",
      a.impl, total + static_cast<std::size_t>(unusable), passed, failed, faults, not_run, unusable,
      not_applicable ? fmt::format(", {} n/a (outside the declaration)", not_applicable) : "");
  // A corrupt fixture says nothing about the implementation.
  if (unusable > 0) return could_not_test_status;
  const SuiteVerdict verdict = failed > 0 || faults > 0 || not_run > 0
                                   ? SuiteVerdict::not_conformant
                                   : SuiteVerdict::conformant;
  return exit_status(verdict, a.expect, faults > 0);
}

}  // namespace

void add_fixtures(CLI::App& app, int& status) {
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
  gen->add_option("--optimizer", g->optimizers,
                  "Draw steps of this optimizer (repeatable, taken in turn; default: the "
                  "recipe's, else plain SGD)")
      ->check(CLI::IsMember(optimizer_names()));
  gen->add_option("--recipe", g->recipe,
                  "Draw only inside this recipe (JSON: optimizers, hyperparameters, "
                  "even_batches, bias_group)");
  const std::vector<std::string> dtypes = {"float32", "bfloat16", "float16"};
  gen->add_option("--param-dtype", g->param_dtype,
                  "Precision stages: the compute copy x, W, b are cast to (docs/spec/step.md, "
                  "\"Mixed precision by stage\")")
      ->check(CLI::IsMember(dtypes))
      ->capture_default_str();
  gen->add_option("--reduce-dtype", g->reduce_dtype,
                  "Precision stages: the ranks' gradients summed in (default: --param-dtype)")
      ->check(CLI::IsMember(dtypes));
  gen->add_option("--master-dtype", g->master_dtype,
                  "Precision stages: the stored parameters and optimizer state")
      ->check(CLI::IsMember(dtypes))
      ->capture_default_str();
  gen->add_flag("--canonical", g->canonical,
                "Write the curated set of fixtures/canonical/ instead (ignores the other "
                "options but --out)");
  gen->callback([g, &status] { status = generate(*g); });

  auto c = std::make_shared<CheckArgs>();
  CLI::App* chk = cmd->add_subcommand(
      "check",
      "Replay fixture files against an implementation (exit 0 all pass, 1 some fail, "
      "2 malformed or corrupt fixture or could not test, 77 skipped)");
  chk->add_option("--impl", c->impl, "builtin:NAME, or an adapter command speaking protocol v1")
      ->capture_default_str();
  add_adapter_options(*chk, c->adapter);
  chk->add_option("--expect", c->expect,
                  "Verdict that makes the exit status 0: conformant or not_conformant")
      ->transform(CLI::CheckedTransformer(std::map<std::string, ExpectedVerdict>{
          {"conformant", ExpectedVerdict::conformant},
          {"not_conformant", ExpectedVerdict::not_conformant}}))
      ->default_str("conformant");
  chk->add_flag("--quiet,-q", c->quiet, "Print only failures and the summary");
  chk->add_option("paths", c->paths, "Fixture files, or directories searched for *.json")
      ->required();
  chk->callback([c, &status] { status = check(*c); });

  auto v = std::make_shared<std::vector<std::string>>();
  CLI::App* val = cmd->add_subcommand(
      "validate", "Check fixture files against the schema and the oracle (exit 0 or 2)");
  val->add_option("paths", *v, "Fixture files, or directories searched for *.json")->required();
  val->callback([v, &status] { status = validate(*v); });
}

}  // namespace sgdc::conformance::cli