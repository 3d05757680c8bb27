#include "sgdc/conformance/text_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cmath>
#include <sstream>

#include "sgdc/properties/generators.hpp"

namespace sgdc::conformance {

std::string shape_of(const Case& c) {
  return fmt::format("n={} d={} k={} num_shards={}", c.n, c.d, c.k, c.num_shards);
}

std::string describe(const Declaration& d) {
  std::string caps;
  const Capabilities& c = d.capabilities;
  for (auto [on, name] : {std::pair{c.grads, "grads"},
                          {c.step_counter, "step_counter"},
                          {c.shard_layout, "shard_layout"},
                          {c.sharded, "sharded"}})
    if (on) caps += (caps.empty() ? "" : ", ") + std::string(name);
  return fmt::format("version {}; capabilities: {}; unit roundoff 2^{:g}; subnormals {}",
                     d.version.empty() ? "?" : d.version, caps.empty() ? "none" : caps,
                     std::log2(d.arithmetic.u), to_string(d.arithmetic.subnormals));
}

namespace {
const char* verdict_line(Verdict v) {
  switch (v) {
    case Verdict::conformant:
      return "CONFORMANT";
    case Verdict::not_conformant:
      return "NOT CONFORMANT";
    case Verdict::could_not_test:
      return "COULD NOT TEST";
  }
  return "?";
}
}  // namespace

void write_text_report(std::ostream& os, const SuiteReport& r, const std::string& replay_prefix) {
  fmt::print(os, "implementation: {} ({})\n", r.declaration.name, describe(r.declaration));
  fmt::print(os, "seed {}, {} cases per property\n\n", r.options.seed,
             r.options.only_case ? 1 : r.options.cases);
  fmt::print(os, "{:<18} {:>6} {:>8}  {:>15} {:>10} {:>8}\n", "property", "cases", "verdict",
             "worst err/bound", "worst ULP", "time");
  for (const PropertyOutcome& o : r.properties) {
    const PropertyReport& p = o.report;
    const auto w = p.observations.overall();
    fmt::print(os, "{:<18} {:>6} {:>8}  {:>15} {:>10} {:>7.2f}s\n", p.property, p.cases,
               o.verdict(), w.seen ? fmt::format("{:.3g}", w.ratio) : "-",
               w.seen ? std::to_string(w.ulps) : "-", p.seconds);
  }
  for (const PropertyOutcome& o : r.properties) {
    const auto& s = o.report.observations.shard_storage;
    if (!s) continue;
    std::string bytes;
    for (std::int64_t v : s->values) bytes += fmt::format(" {}", v * std::int64_t{sizeof(float)});
    fmt::print(os,
               "\nstored bytes per shard ({}, last case d={} k={} num_shards={}):{}\n"
               "  parameter storage, not peak memory: (D+1)*K/S float32 values per shard; "
               "gathered copies, gradients, activations and buffers come on top\n",
               o.report.property, s->d, s->k, s->shards, bytes);
  }
  for (const PropertyOutcome& o : r.properties) {
    if (!o.skip_reason.empty()) fmt::print(os, "\nskip {}: {}\n", o.report.property, o.skip_reason);
    if (!o.xfail_reason.empty())
      fmt::print(os, "\nxfail {}: expected, because {}\n", o.report.property, o.xfail_reason);
    if (o.xpass)
      fmt::print(os, "\nXPASS {}: an xfail line names it, but it passed; remove the line\n",
                 o.report.property);
  }
  for (const PropertyOutcome& o : r.properties) {
    const PropertyReport& p = o.report;
    if (p.fault) fmt::print(os, "\nFAULT in {}: {}\n", p.property, *p.fault);
    if (!p.counterexample) continue;
    const Counterexample& cx = *p.counterexample;
    std::ostringstream shown;
    showValue(cx.shrunk, shown);
    fmt::print(os,
               "\n{} {}: case {} ({}) shrunk in {} steps to {}\n  inputs: {}\n  {}\n"
               "  replay: {} --seed {} --property {} --case {}\n",
               o.verdict(), p.property, cx.case_index, shape_of(cx.original), cx.shrink_steps,
               shape_of(cx.shrunk), shown.str(), cx.message, replay_prefix, r.options.seed,
               p.property, cx.case_index);
  }
  fmt::print(os, "\n{}: {} in {:.1f} s\n", verdict_line(r.verdict), r.declaration.name, r.seconds);
}

}  // namespace sgdc::conformance
