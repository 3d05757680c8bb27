#include "sgdc/conformance/machine_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>

#include "protocol/base64.hpp"
#include "sgdc/conformance/protocol/precision_json.hpp"
#include "sgdc/conformance/protocol/recipe_json.hpp"
#include "sgdc/conformance/replay_line.hpp"
#include "sgdc/conformance/text_report.hpp"
#include "sgdc/reference/float32.hpp"

namespace sgdc::conformance {

namespace {
using nlohmann::json;

json floats(const std::vector<float>& v) {
  json values = json::array();
  for (float f : v) values.push_back(fmt::format("{:.9g}", f));
  return {{"base64", protocol::encode_floats(v)}, {"values", values}};
}

json case_json(const reference::Case& c) {
  json j = {{"n", c.n},       {"d", c.d},
            {"k", c.k},       {"num_shards", c.num_shards},
            {"step", c.step}, {"lr", floats({c.lr})}};
  const reference::Optimizer& o = c.optimizer;
  if (o.kind != reference::Optimizer::Kind::sgd)
    j["optimizer"] = {{"kind", to_string(o.kind)},
                      {"momentum", floats({o.momentum})},
                      {"dampening", floats({o.dampening})},
                      {"nesterov", o.nesterov},
                      {"weight_decay", floats({o.weight_decay})},
                      {"decay", to_string(o.decay)}};
  for (const reference::InputArray& in : reference::input_arrays)
    if (!in.state || !(c.*in.member).empty()) j[in.name] = floats(c.*in.member);
  return j;
}

json worst_json(const properties::Observations::Worst& w) {
  if (!w.seen) return nullptr;
  json j = {{"error_over_bound", w.ratio}};
  j["ulps"] = w.ulps ? json(*w.ulps) : json(nullptr);
  return j;
}

std::string replay(const std::string& prefix, const SuiteReport& r,
                   const properties::PropertyReport& p) {
  return replay_line(prefix, r.options.run, p.property, p.counterexample->case_index);
}

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}
}  // namespace

void write_json_report(std::ostream& os, const SuiteReport& r, const std::string& replay_prefix) {
  const properties::Declaration& d = r.declaration;
  json caps = json::array();
  const properties::Capabilities& c = d.capabilities;
  for (auto [on, name] : {std::pair{c.grads, "grads"},
                          {c.step_counter, "step_counter"},
                          {c.shard_layout, "shard_layout"}})
    if (on) caps.push_back(name);
  json j = {{"tool", "sgd-conformance"},
            {"format_version", 2},
            {"implementation",
             {{"name", d.name},
              {"version", d.version},
              {"capabilities", caps},
              {"sharded", c.sharded},
              {"unit_roundoff", d.arithmetic.u},
              {"subnormals", to_string(d.arithmetic.subnormals)},
              {"compute_format", reference::to_string(d.arithmetic.format)}}},
            {"seed", r.options.run.seed},
            {"cases_per_property", r.options.run.only_case ? 1 : r.options.run.cases},
            {"verdict", to_string(r.verdict)},
            {"seconds", r.seconds}};
  if (!d.recipe.empty()) j["implementation"]["recipe"] = protocol::encode_recipe(d.recipe);
  if (const reference::Stages& st = d.arithmetic.stages; st.declared())
    j["implementation"]["precision"] = protocol::encode_precision(st);
  json props = json::array();
  for (const PropertyOutcome& o : r.properties) {
    const properties::PropertyReport& p = o.report;
    json per_output = json::object();
    for (reference::Output out : reference::all_outputs)
      per_output[to_string(out)] = worst_json(p.observations.of(out));
    json jp = {{"name", p.property},
               {"verdict", o.verdict()},
               {"cases", p.cases},
               {"discarded", p.discarded},
               {"seconds", p.seconds},
               {"worst", worst_json(p.observations.overall())},
               {"worst_per_output", per_output}};
    if (const auto& s = p.observations.shard_storage) {
      json bytes = json::array();
      for (std::int64_t v : s->values) bytes.push_back(v * std::int64_t{sizeof(float)});
      json state = json::array();
      for (const auto& v : s->state)
        state.push_back(v ? json(*v * std::int64_t{sizeof(float)}) : json(nullptr));
      jp["stored_bytes_per_shard"] = {{"d", s->d},
                                      {"k", s->k},
                                      {"num_shards", s->shards},
                                      {"placement", to_string(s->rule)},
                                      {"optimizer", reference::to_string(s->optimizer)},
                                      {"bytes", bytes},
                                      {"state_bytes", state},
                                      {"meaning", "storage, not peak memory"}};
    }
    {
      const auto& options = properties::exercised_options();
      json counts = json::object(), ranges = json::object();
      for (std::size_t i = 0; i < options.size(); ++i)
        counts[options[i].name] = p.exercised.counts[i];
      for (const auto& [name, range] : p.exercised.drawn())
        ranges[name] = {range.first, range.second};
      jp["exercised"] = {{"cases", p.exercised.cases}, {"options", counts}, {"ranges", ranges}};
    }
    if (!p.discard_reasons.empty()) {
      json reasons = json::array();
      for (const auto& [reason, count] : p.discard_reasons)
        reasons.push_back({{"reason", reason}, {"count", count}});
      jp["discard_reasons"] = std::move(reasons);
    }
    if (!o.skip_reason.empty()) jp["skip_reason"] = o.skip_reason;
    if (!o.xfail_reason.empty()) jp["xfail_reason"] = o.xfail_reason;
    jp["expected_failures"] = p.expected_failures;
    if (p.fault) jp["fault"] = *p.fault;
    if (p.counterexample) {
      const properties::Counterexample& cx = *p.counterexample;
      jp["counterexample"] = {{"case_index", cx.case_index},
                              {"shrink_steps", cx.shrink_steps},
                              {"original_shape", shape_of(cx.original)},
                              {"case", case_json(cx.shrunk)},
                              {"message", cx.message},
                              {"summary", counterexample_summary(p.property, cx)},
                              {"suspects", cx.suspects},
                              {"worst", worst_json(cx.observations.overall())},
                              {"replay", replay(replay_prefix, r, p)}};
    }
    props.push_back(std::move(jp));
  }
  j["properties"] = std::move(props);
  properties::Exercised all;
  for (const PropertyOutcome& o : r.properties) all.merge(o.report.exercised);
  j["warnings"] = properties::unexercised(all, r.declaration);
  os << j.dump(2) << "\n";
}

void write_junit_report(std::ostream& os, const SuiteReport& r, const std::string& replay_prefix) {
  int failures = 0, skipped = 0;
  for (const PropertyOutcome& o : r.properties) {
    if (o.counts_as_failure())
      ++failures;
    else if (o.verdict() != "pass" && o.verdict() != "xpass")
      ++skipped;
  }
  const std::string suite = escape_xml("sgd-conformance: " + r.declaration.name);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << fmt::format(
      "<testsuites name=\"sgd-conformance\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
      r.properties.size(), failures, r.seconds);
  os << fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
      suite, r.properties.size(), failures, skipped, r.seconds);
  // The declared precision stages, as the JSON report's implementation.precision.
  if (const reference::Stages& st = r.declaration.arithmetic.stages; st.declared()) {
    os << "    <properties>\n";
    for (const reference::StageField& field : reference::stage_fields)
      os << fmt::format("      <property name=\"precision.{}\" value=\"{}\"/>\n", field.name,
                        reference::to_string(st.*field.format));
    os << "    </properties>\n";
  }
  for (const PropertyOutcome& o : r.properties) {
    const properties::PropertyReport& p = o.report;
    os << fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"",
                      escape_xml("sgd-conformance." + r.declaration.name), p.property, p.seconds);
    const std::string v = o.verdict();
    os << ">\n";
    // What the judged cases exercised, as JUnit properties.
    if (p.exercised.cases > 0) {
      os << "      <properties>\n";
      os << fmt::format("        <property name=\"exercised.cases\" value=\"{}\"/>\n",
                        p.exercised.cases);
      const auto& options = properties::exercised_options();
      for (std::size_t i = 0; i < options.size(); ++i)
        os << fmt::format("        <property name=\"exercised.{}\" value=\"{}\"/>\n",
                          escape_xml(options[i].name), p.exercised.counts[i]);
      for (const auto& [name, range] : p.exercised.drawn())
        os << fmt::format("        <property name=\"drawn.{}\" value=\"{:.9g} {:.9g}\"/>\n", name,
                          range.first, range.second);
      os << "      </properties>\n";
    }
    if (v == "pass" || v == "xpass") {
      os << "    </testcase>\n";
      continue;
    }
    if (o.counts_as_failure()) {
      // The message sums the counterexample up in one line; the body carries what the
      // text report prints under it (shrunk inputs, verdict, replay), after any fault.
      std::string body = p.fault ? "fault: " + *p.fault + "\n" : "";
      std::string message = p.fault ? "fault: " + *p.fault : "failed";
      if (p.counterexample) {
        message = counterexample_summary(p.property, *p.counterexample);
        body += counterexample_body(*p.counterexample, replay(replay_prefix, r, p));
      }
      os << fmt::format("      <failure message=\"{}\">{}</failure>\n", escape_xml(message),
                        escape_xml(body));
    } else {
      const std::string why = !o.skip_reason.empty() ? "skip: " + o.skip_reason
                              : !o.xfail_reason.empty()
                                  ? fmt::format("xfail: {} ({} of {} cases failed as expected)",
                                                o.xfail_reason, p.expected_failures, p.cases)
                                  : v;
      os << fmt::format("      <skipped message=\"{}\"/>\n", escape_xml(why));
    }
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
}

}  // namespace sgdc::conformance