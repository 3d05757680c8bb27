#include "sgdc/conformance/protocol/messages.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "sgdc/conformance/protocol/base64.hpp"
#include "sgdc/reference/error_model.hpp"
#include "text.hpp"

namespace sgdc::protocol {
namespace {

// ordered_json keeps the spec's field order, which makes messages easy to read and
// compare with the spec.
using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

constexpr std::size_t quote_limit = 200;

[[noreturn]] void bad(const std::string& what) { throw ProtocolError(what); }

// A short, printable rendering of a JSON value for messages.
std::string show(const json& v) {
  return detail::printable(v.dump(-1, ' ', false, json::error_handler_t::replace), quote_limit);
}

json parse_object(std::string_view line, std::string_view what) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    // Not only parse_error: a number beyond double's range is out_of_range.406.
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix: noise in a report.
    std::string_view why = e.what();
    if (const auto end = why.find("] "); why.starts_with("[json.") && end != why.npos) {
      why.remove_prefix(end + 2);
    }
    bad(fmt::format("{} is not JSON: {} (line: '{}')", what, detail::printable(why, quote_limit),
                    detail::printable(line, quote_limit)));
  }
  if (!j.is_object()) {
    bad(fmt::format("{} is not a JSON object: {}", what, show(j)));
  }
  return j;
}

// The integer value of `v`, if it is a JSON integer that fits in int64.
std::optional<std::int64_t> as_int64(const json& v) {
  if (v.is_number_integer() && v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

std::vector<float> floats(const json& j, const char* key, std::int64_t expected) {
  const auto it = j.find(key);
  if (it == j.end()) bad(fmt::format("answer has no {}", key));
  if (!it->is_string()) bad(fmt::format("{} is not a base64 string: {}", key, show(*it)));
  std::vector<float> v;
  try {
    v = decode_floats(it->get_ref<const std::string&>());
  } catch (const std::invalid_argument& e) {
    bad(fmt::format("{} is not valid base64: {}", key, e.what()));
  }
  if (static_cast<std::int64_t>(v.size()) != expected) {
    bad(fmt::format("{} has {} values, expected {}", key, v.size(), expected));
  }
  return v;
}

const json& required(const json& j, const char* key, const char* capability) {
  const auto it = j.find(key);
  if (it == j.end()) {
    bad(fmt::format("answer lacks {}, which capability \"{}\" promises", key, capability));
  }
  return *it;
}

std::vector<ShardPart> shards(const json& v) {
  if (!v.is_array()) bad(fmt::format("shards is not a list: {}", show(v)));
  std::vector<ShardPart> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& s = v[i];
    if (!s.is_object()) bad(fmt::format("shards[{}] is not an object: {}", i, show(s)));
    ShardPart part;
    for (const char* key : {"kernel", "bias"}) {
      const auto it = s.find(key);
      if (it == s.end()) bad(fmt::format("shards[{}] has no {}", i, key));
      const auto count = as_int64(*it);
      if (!count || *count < 0) {
        bad(fmt::format("shards[{}].{} is not a non-negative integer: {}", i, key, show(*it)));
      }
      (std::string_view(key) == "kernel" ? part.kernel : part.bias) = *count;
    }
    out.push_back(part);
  }
  return out;
}

std::string string_field(const json& j, const char* key, std::string_view what) {
  const auto it = j.find(key);
  if (it == j.end()) bad(fmt::format("{} has no {}", what, key));
  if (!it->is_string()) bad(fmt::format("{} {} is not a string: {}", what, key, show(*it)));
  return it->get<std::string>();
}

}  // namespace

std::string encode_hello() { return ojson{{"op", "hello"}, {"protocol", protocol_version}}.dump(); }

std::string encode_step(std::int64_t id, const Case& c) {
  const ojson j = {
      {"op", "step"},
      {"id", id},
      {"n", c.n},
      {"d", c.d},
      {"k", c.k},
      {"num_shards", c.num_shards},
      {"step", c.step},
      {"lr", encode_floats(std::span<const float>(&c.lr, 1))},
      {"kernel", encode_floats(c.kernel)},
      {"bias", encode_floats(c.bias)},
      {"x", encode_floats(c.x)},
      {"y", encode_floats(c.y)},
  };
  return j.dump();
}

std::string encode_bye() { return ojson{{"op", "bye"}}.dump(); }

Declaration decode_hello(std::string_view line) {
  const json j = parse_object(line, "hello reply");
  const auto op = j.find("op");
  if (op == j.end() || !op->is_string() || op->get_ref<const std::string&>() != "hello") {
    bad(fmt::format("hello reply has op {}, expected \"hello\"",
                    op == j.end() ? std::string("missing") : show(*op)));
  }
  const auto protocol = j.find("protocol");
  if (protocol == j.end()) bad("hello reply has no protocol");
  const auto version = as_int64(*protocol);
  if (!version || *version != protocol_version) {
    bad(fmt::format("adapter speaks protocol {}, the suite speaks protocol {}", show(*protocol),
                    protocol_version));
  }

  Declaration d;
  d.name = string_field(j, "name", "hello reply");
  d.version = string_field(j, "version", "hello reply");

  const auto caps = j.find("capabilities");
  if (caps == j.end()) bad("hello reply has no capabilities");
  if (!caps->is_array()) bad(fmt::format("capabilities is not a list: {}", show(*caps)));
  for (std::size_t i = 0; i < caps->size(); ++i) {
    const json& c = (*caps)[i];
    if (!c.is_string()) bad(fmt::format("capabilities[{}] is not a string: {}", i, show(c)));
    const auto& name = c.get_ref<const std::string&>();
    // Unknown names are ignored: later protocol versions may add capabilities.
    if (name == "grads") d.capabilities.grads = true;
    if (name == "step_counter") d.capabilities.step_counter = true;
    if (name == "shard_layout") d.capabilities.shard_layout = true;
  }

  // Extension fields (docs/protocol-extensions.md).
  if (const auto s = j.find("subnormals"); s != j.end()) {
    if (!s->is_string()) bad(fmt::format("subnormals is not a string: {}", show(*s)));
    const auto& text = s->get_ref<const std::string&>();
    if (text == "ieee") {
      d.arithmetic.subnormals = Subnormals::ieee;
    } else if (text == "ftz") {
      d.arithmetic.subnormals = Subnormals::flush_to_zero;
    } else {
      bad(fmt::format("subnormals is {}, expected \"ieee\" or \"ftz\"", show(*s)));
    }
  }
  if (const auto u = j.find("unit_roundoff"); u != j.end()) {
    const double value = u->is_number() ? u->get<double>() : std::nan("");
    if (!(value > 0.0 && value < 1.0)) {
      bad(fmt::format("unit_roundoff is {}, expected a number between 0 and 1", show(*u)));
    }
    d.arithmetic.u = value;
  }
  if (const auto s = j.find("sharded"); s != j.end()) {
    if (!s->is_boolean()) bad(fmt::format("sharded is not true or false: {}", show(*s)));
    d.capabilities.sharded = s->get<bool>();
  }
  if (const auto m = j.find("max_shards"); m != j.end()) {
    if (!m->is_number_integer() || m->get<std::int64_t>() < 1 ||
        m->get<std::int64_t>() > std::numeric_limits<int>::max())
      bad(fmt::format("max_shards is not a positive integer: {}", show(*m)));
    d.capabilities.max_shards = m->get<int>();
  }
  return d;
}

StepOutcome decode_answer(std::string_view line, std::int64_t id, const Case& c,
                          const Capabilities& promised) {
  const json j = parse_object(line, "answer");

  const auto op_it = j.find("op");
  if (op_it == j.end())
    bad(fmt::format("answer has no op: '{}'", detail::printable(line, quote_limit)));
  if (!op_it->is_string()) bad(fmt::format("answer's op is not a string: {}", show(*op_it)));
  const std::string& op = op_it->get_ref<const std::string&>();
  if (op != "result" && op != "error") {
    bad(fmt::format("answer has op {}, expected \"result\" or \"error\"", show(*op_it)));
  }

  const auto id_it = j.find("id");
  if (id_it == j.end()) bad("answer has no id");
  if (as_int64(*id_it) != id) {
    std::string what = fmt::format("answer has id {}, expected {}", show(*id_it), id);
    // The Python kit answers a message it could not parse with id null; say why.
    if (op == "error") {
      const auto m = j.find("message");
      if (m != j.end()) what += fmt::format(" (error: {})", show(*m));
    }
    bad(what);
  }

  if (op == "error") {
    const auto m = j.find("message");
    if (m == j.end()) bad("error answer has no message");
    if (!m->is_string()) bad(fmt::format("error message is not a string: {}", show(*m)));
    std::string message = m->get<std::string>();
    // A rejection is told apart from a result by its non-empty text.
    if (message.empty()) message = "(adapter rejected the case without a message)";
    return StepOutcome{.result = std::nullopt, .rejection = std::move(message)};
  }

  const std::int64_t dk = static_cast<std::int64_t>(c.d) * c.k;
  StepResult r;
  r.loss = floats(j, "loss", 1)[0];
  r.kernel = floats(j, "kernel", dk);
  r.bias = floats(j, "bias", c.k);
  if (promised.grads) {
    required(j, "grad_kernel", "grads");
    required(j, "grad_bias", "grads");
    r.grad_kernel = floats(j, "grad_kernel", dk);
    r.grad_bias = floats(j, "grad_bias", c.k);
  }
  if (promised.step_counter) {
    const json& s = required(j, "step", "step_counter");
    const auto value = as_int64(s);
    if (!value) bad(fmt::format("step is not an integer: {}", show(s)));
    r.step = *value;
  }
  if (promised.shard_layout) {
    r.shards = shards(required(j, "shards", "shard_layout"));
  }
  return StepOutcome{.result = std::move(r), .rejection = {}};
}

std::string encode_hello_reply(const Declaration& d) {
  ojson caps = ojson::array();
  if (d.capabilities.grads) caps.push_back("grads");
  if (d.capabilities.step_counter) caps.push_back("step_counter");
  if (d.capabilities.shard_layout) caps.push_back("shard_layout");
  ojson j = {
      {"op", "hello"},
      {"protocol", protocol_version},
      {"name", d.name},
      {"version", d.version},
      {"capabilities", caps},
      {"subnormals", to_string(d.arithmetic.subnormals)},
      {"unit_roundoff", d.arithmetic.u},
      {"sharded", d.capabilities.sharded},
  };
  if (d.capabilities.max_shards > 0) j["max_shards"] = d.capabilities.max_shards;
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string encode_result(std::int64_t id, const StepResult& r) {
  ojson j = {
      {"op", "result"},
      {"id", id},
      {"loss", encode_floats(std::span<const float>(&r.loss, 1))},
      {"kernel", encode_floats(r.kernel)},
      {"bias", encode_floats(r.bias)},
  };
  if (r.step) j["step"] = *r.step;
  if (r.grad_kernel) j["grad_kernel"] = encode_floats(*r.grad_kernel);
  if (r.grad_bias) j["grad_bias"] = encode_floats(*r.grad_bias);
  if (r.shards) {
    ojson list = ojson::array();
    for (const ShardPart& s : *r.shards) list.push_back({{"kernel", s.kernel}, {"bias", s.bias}});
    j["shards"] = std::move(list);
  }
  return j.dump();
}

std::string encode_error(std::int64_t id, std::string_view message) {
  return ojson{{"op", "error"}, {"id", id}, {"message", std::string(message)}}.dump(
      -1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace sgdc::protocol
