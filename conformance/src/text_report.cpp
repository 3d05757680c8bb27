#include "sgdc/conformance/text_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cctype>
#include <cmath>
#include <sstream>

#include "sgdc/conformance/protocol/recipe_json.hpp"
#include "sgdc/conformance/replay_line.hpp"
#include "sgdc/properties/sharding/storage.hpp"

namespace sgdc::conformance {

std::string shape_of(const reference::Case& c) {
  return fmt::format("n={} d={} k={} num_shards={}", c.n, c.d, c.k, c.num_shards);
}

namespace {

// The shrunk case's own worst error, labelled apart from the run's worst in the table;
// only where the failure is one of the bound (a NaN or a rejection has no ratio to give).
std::string shrunk_ratio(const properties::Counterexample& cx) {
  const auto w = cx.observations.overall();
  return w.seen && w.ratio > 1 ? fmt::format(" (err/bound (shrunk case) {:.3g})", w.ratio) : "";
}

}  // namespace

std::string counterexample_summary(const std::string& property,
                                   const properties::Counterexample& cx) {
  // The verdict's first line; when it introduces a list ("...:"), the first item too.
  const std::string& m = cx.message;
  const std::size_t end = m.find('\n');
  std::string first = m.substr(0, end);
  if (end != std::string::npos && !first.empty() && first.back() == ':') {
    const std::size_t next = m.find_first_not_of(' ', end + 1);
    const std::size_t stop = m.find('\n', next);
    if (next != std::string::npos) first += " " + m.substr(next, stop - next);
  }
  return fmt::format("{}: {}: {}{}", property, shape_of(cx.shrunk), first, shrunk_ratio(cx));
}

std::string counterexample_body(const properties::Counterexample& cx, const std::string& replay) {
  std::ostringstream shown;
  reference::showValue(cx.shrunk, shown);
  return fmt::format("  inputs: {}\n  {}\n  replay: {}\n", shown.str(), cx.message, replay);
}

std::string describe(const properties::Declaration& d) {
  std::string caps;
  const properties::Capabilities& c = d.capabilities;
  for (auto [on, name] : {std::pair{c.grads, "grads"},
                          {c.step_counter, "step_counter"},
                          {c.shard_layout, "shard_layout"},
                          {c.sharded, "sharded"}})
    if (on) caps += (caps.empty() ? "" : ", ") + std::string(name);
  std::string out = fmt::format("version {}; capabilities: {}; unit roundoff 2^{:g}; subnormals {}",
                                d.version.empty() ? "?" : d.version, caps.empty() ? "none" : caps,
                                std::log2(d.arithmetic.u), to_string(d.arithmetic.subnormals));
  if (d.arithmetic.format != reference::formats::float32)
    out += "; compute format " + reference::to_string(d.arithmetic.format);
  if (const reference::Stages& st = d.arithmetic.stages; st.declared()) {
    out += "; precision";
    for (const reference::StageField& field : reference::stage_fields)
      out += fmt::format("{} {} {}", &field == reference::stage_fields ? "" : ",", field.name,
                         reference::to_string(st.*field.format));
  }
  if (c.step_counter) {
    out += fmt::format("; counter {}", to_string(d.counter.type));
    if (d.counter.at_end != reference::CounterEnd::untested)
      out += fmt::format(" ({}s at its end)", to_string(d.counter.at_end));
  }
  if (c.shard_layout) out += fmt::format("; placement {}", to_string(c.placement));
  if (!d.recipe.empty()) out += "; recipe " + protocol::encode_recipe(d.recipe).dump();
  return out;
}

namespace {

// Bytes each shard reported storing, beside what the storage estimate (`storage`) gives
// for the same shape, shard count, placement rule and optimizer.
void write_shard_storage(std::ostream& os, const properties::Observations::ShardStorage& s,
                         const std::string& property) {
  namespace sharding = properties::sharding;
  sharding::StorageOptions options;
  options.optimizer_name = reference::to_string(s.optimizer);
  options.rule = s.rule;
  const sharding::StoragePlan plan = sharding::plan_storage(s.d, s.k, s.shards, options);
  const sharding::OptimizerState state = plan.optimizer;
  fmt::print(os,
             "\nstored bytes per shard ({}, last case d={} k={} num_shards={}, placement {}, "
             "{}):\n  {:>5} {:>12} {:>12} {:>12} {:>12} {:>12}\n",
             property, s.d, s.k, s.shards, to_string(s.rule),
             state == sharding::OptimizerState::adam       ? "Adam"
             : state == sharding::OptimizerState::adagrad  ? "Adagrad"
             : state == sharding::OptimizerState::momentum ? "momentum"
                                                           : "plain SGD",
             "shard", "parameters", "state", "est. params", "est. grads", "est. state");
  for (int i = 0; i < s.shards && i < static_cast<int>(s.values.size()); ++i) {
    const std::int64_t bytes = sizeof(float);
    const auto& est = plan.per_shard[static_cast<std::size_t>(i)];
    const std::optional<std::int64_t> state_values =
        i < static_cast<int>(s.state.size()) ? s.state[i] : std::nullopt;
    fmt::print(os, "  {:>5} {:>10} B {:>10} {:>10} B {:>10} B {:>10} B\n", i, s.values[i] * bytes,
               state_values ? fmt::format("{} B", *state_values * bytes) : "-", est.parameter_bytes,
               est.gradient_bytes, est.state_bytes);
  }
  fmt::print(os,
             "  storage, not peak memory: gathered copies, activations and communication "
             "buffers come on top (`storage` estimates the same)\n");
}

}  // namespace

std::string verdict_label(const std::string& verdict) {
  if (verdict == "fail" || verdict == "fault" || verdict == "xpass") {
    std::string upper = verdict;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return upper;
  }
  if (verdict == "not_run") return "not run";
  return verdict;
}

namespace {

const char* verdict_line(SuiteVerdict v) {
  switch (v) {
    case SuiteVerdict::conformant:
      return "CONFORMANT";
    case SuiteVerdict::not_conformant:
      return "NOT CONFORMANT";
    case SuiteVerdict::could_not_test:
      return "COULD NOT TEST";
  }
  return "?";
}
}  // namespace

void write_text_report(std::ostream& os, const SuiteReport& r, const std::string& replay_prefix) {
  fmt::print(os, "implementation: {} ({})\n", r.declaration.name, describe(r.declaration));
  fmt::print(os, "seed {}, {} cases per property\n\n", r.options.run.seed,
             r.options.run.only_case ? 1 : r.options.run.cases);
  fmt::print(os, "{:<18} {:>6} {:>8}  {:>21} {:>15} {:>8}\n", "property", "cases", "verdict",
             "worst err/bound (run)", "worst ULP (run)", "time");
  for (const PropertyOutcome& o : r.properties) {
    const properties::PropertyReport& p = o.report;
    const auto w = p.observations.overall();
    fmt::print(os, "{:<18} {:>6} {:>8}  {:>21} {:>15} {:>7.2f}s\n", p.property, p.cases,
               verdict_label(o.verdict()), w.seen ? fmt::format("{:.3g}", w.ratio) : "-",
               w.ulps ? std::to_string(*w.ulps) : "-", p.seconds);
  }
  // Properties judged on fewer cases than drawn: why the others were left out.
  bool discards = false;
  for (const PropertyOutcome& o : r.properties) {
    const properties::PropertyReport& p = o.report;
    if (p.discarded == 0) continue;
    if (!discards) fmt::print(os, "\n");
    discards = true;
    std::string why;
    for (const auto& [reason, count] : p.discard_reasons)
      why += fmt::format("{}{} {}", why.empty() ? "" : "; ", count, reason);
    fmt::print(os, "{}: judged on {} of {} drawn cases, {} discarded ({})\n", p.property, p.cases,
               p.cases + p.discarded, p.discarded, why);
  }
  // What the judged cases exercised, per property, and what was declared but never run.
  properties::Exercised all;
  for (const PropertyOutcome& o : r.properties) all.merge(o.report.exercised);
  if (all.cases > 0) {
    fmt::print(os, "\nexercised (judged cases: optimizers and options; drawn hyperparameters):\n");
    for (const PropertyOutcome& o : r.properties)
      if (o.report.exercised.cases > 0)
        fmt::print(os, "  {:<16} {}\n", o.report.property, o.report.exercised.summary());
    for (const std::string& w : properties::unexercised(all, r.declaration))
      fmt::print(os, "warning: {}\n", w);
  }
  for (const PropertyOutcome& o : r.properties) {
    if (const auto& s = o.report.observations.shard_storage)
      write_shard_storage(os, *s, o.report.property);
  }
  for (const PropertyOutcome& o : r.properties) {
    if (!o.skip_reason.empty()) fmt::print(os, "\nskip {}: {}\n", o.report.property, o.skip_reason);
    if (!o.xfail_reason.empty()) {
      const properties::PropertyReport& p = o.report;
      if (p.first_expected) {
        const std::string& m = p.first_expected->second;
        const int passed = p.cases - p.expected_failures;
        fmt::print(
            os,
            "\nxfail {}: {} of {} cases failed as expected, because {}{}. The first, case {}: {}\n",
            p.property, p.expected_failures, p.cases, o.xfail_reason,
            passed > 0 ? fmt::format("; the other {} passed", passed) : "", p.first_expected->first,
            m.substr(0, m.find('\n')));
      } else {
        fmt::print(os, "\nxfail {}: expected, because {}\n", p.property, o.xfail_reason);
      }
    }
    if (o.xpass)
      fmt::print(os, "\nXPASS {}: an xfail line names it, but it passed; remove the line\n",
                 o.report.property);
  }
  for (const PropertyOutcome& o : r.properties) {
    const properties::PropertyReport& p = o.report;
    if (p.fault) fmt::print(os, "\nFAULT in {}: {}\n", p.property, *p.fault);
    if (!p.counterexample) continue;
    const properties::Counterexample& cx = *p.counterexample;
    fmt::print(os, "\n{} {}: case {} ({}) shrunk in {} steps to {}{}\n{}",
               verdict_label(o.verdict()), p.property, cx.case_index, shape_of(cx.original),
               cx.shrink_steps, shape_of(cx.shrunk), shrunk_ratio(cx),
               counterexample_body(
                   cx, replay_line(replay_prefix, r.options.run, p.property, cx.case_index)));
  }
  fmt::print(os, "\n{}: {} in {:.1f} s\n", verdict_line(r.verdict), r.declaration.name, r.seconds);
}

}  // namespace sgdc::conformance