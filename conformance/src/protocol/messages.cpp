#include "sgdc/conformance/protocol/messages.hpp"
#include "sgdc/conformance/protocol/precision_json.hpp"
#include "sgdc/conformance/protocol/recipe_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "protocol/base64.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/hyperparameters.hpp"
#include "text.hpp"

namespace sgdc::conformance::protocol {
namespace {

// ordered_json keeps the spec's field order, which makes messages easy to read and
// compare with the spec.
using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

using detail::show_json;

[[noreturn]] void bad(const std::string& what) { throw ProtocolError(what); }

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
    bad(fmt::format("{} is not JSON: {} (line: '{}')", what,
                    detail::printable(why, detail::quote_limit),
                    detail::printable(line, detail::quote_limit)));
  }
  if (!j.is_object()) {
    bad(fmt::format("{} is not a JSON object: {}", what, show_json(j)));
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

// Reads the answer's arrays in the conversation's encoding.
class ArrayReader {
 public:
  ArrayReader(ArrayEncoding arrays, std::string_view payload)
      : arrays_(arrays), payload_(payload) {}

  std::vector<float> operator()(const json& j, const char* key, std::int64_t expected) const {
    const auto it = j.find(key);
    if (it == j.end()) bad(fmt::format("answer has no {}", key));
    const std::vector<float> v =
        arrays_ == ArrayEncoding::binary ? from_payload(*it, key, expected) : from_base64(*it, key);
    if (static_cast<std::int64_t>(v.size()) != expected) {
      bad(fmt::format("{} has {} values, expected {}", key, v.size(), expected));
    }
    return v;
  }

 private:
  static std::vector<float> from_base64(const json& v, const char* key) {
    if (!v.is_string()) bad(fmt::format("{} is not a base64 string: {}", key, show_json(v)));
    try {
      return decode_floats(v.get_ref<const std::string&>());
    } catch (const std::invalid_argument& e) {
      bad(fmt::format("{} is not valid base64: {}", key, e.what()));
    }
  }

  std::vector<float> from_payload(const json& v, const char* key, std::int64_t expected) const {
    if (!v.is_object()) {
      bad(fmt::format("{} is not a binary array reference {{\"offset\":O,\"count\":C}}: {}", key,
                      show_json(v)));
    }
    const auto field = [&](const char* name) {
      const auto it = v.find(name);
      if (it == v.end()) bad(fmt::format("{} has no {}: {}", key, name, show_json(v)));
      const auto value = as_int64(*it);
      if (!value || *value < 0) {
        bad(fmt::format("{}.{} is not a non-negative integer: {}", key, name, show_json(*it)));
      }
      return static_cast<std::uint64_t>(*value);
    };
    const std::uint64_t offset = field("offset");
    const std::uint64_t count = field("count");
    if (count != static_cast<std::uint64_t>(expected)) {
      bad(fmt::format("{} has {} values, expected {}", key, count, expected));
    }
    // Written to avoid overflow: count is small (it equals `expected`), offset is not.
    if (offset > payload_.size() || 4 * count > payload_.size() - offset) {
      bad(fmt::format("{} (bytes {} to {}) lies outside the {}-byte payload", key, offset,
                      offset + 4 * count, payload_.size()));
    }
    return floats_from_bytes(payload_.substr(offset, 4 * count));
  }

  ArrayEncoding arrays_;
  std::string_view payload_;
};

// Writes a message's arrays in the conversation's encoding: base64 strings, or references
// into the payload it builds.
class ArrayWriter {
 public:
  explicit ArrayWriter(ArrayEncoding arrays) : arrays_(arrays) {}

  ojson operator()(std::span<const float> values) {
    if (arrays_ == ArrayEncoding::base64) return encode_floats(values);
    const std::size_t offset = payload_.size();
    append_float_bytes(payload_, values);
    return ojson{{"offset", offset}, {"count", values.size()}};
  }

  // The finished frame: `j` as the line, ending with "payload" when binary.
  Frame frame(ojson j) && {
    if (arrays_ == ArrayEncoding::binary) j["payload"] = payload_.size();
    return Frame{j.dump(), std::move(payload_)};
  }

 private:
  ArrayEncoding arrays_;
  std::string payload_;
};

const json& required(const json& j, const char* key, const char* capability) {
  const auto it = j.find(key);
  if (it == j.end()) {
    bad(fmt::format("answer lacks {}, which capability \"{}\" promises", key, capability));
  }
  return *it;
}

// The largest shards count the suite reads: more elements than any answer can carry (a
// result's arrays fit in a 256 MiB payload), and small enough that the placement check's
// sums over the shards cannot overflow.
constexpr std::int64_t max_shard_count = std::numeric_limits<std::int32_t>::max();

std::vector<reference::ShardPart> shards(const json& v) {
  if (!v.is_array()) bad(fmt::format("shards is not a list: {}", show_json(v)));
  std::vector<reference::ShardPart> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& s = v[i];
    if (!s.is_object()) bad(fmt::format("shards[{}] is not an object: {}", i, show_json(s)));
    auto count = [&](const char* key) -> std::optional<std::int64_t> {
      const auto it = s.find(key);
      if (it == s.end()) return std::nullopt;
      if (it->is_number_unsigned() &&
          it->get<std::uint64_t>() > static_cast<std::uint64_t>(max_shard_count))
        bad(fmt::format("shards[{}].{} is {}, more than the largest count, 2^31 - 1", i, key,
                        show_json(*it)));
      const auto value = as_int64(*it);
      if (!value || *value < 0)
        bad(fmt::format("shards[{}].{} is not a non-negative integer: {}", i, key, show_json(*it)));
      return value;
    };
    reference::ShardPart part;
    for (auto [key, field] : {std::pair{"kernel", &part.kernel}, {"bias", &part.bias}}) {
      const auto value = count(key);
      if (!value) bad(fmt::format("shards[{}] has no {}", i, key));
      *field = *value;
    }
    // Optional: where the shard keeps its optimizer state.
    part.state_kernel = count("state_kernel");
    part.state_bias = count("state_bias");
    out.push_back(part);
  }
  return out;
}

// The optional field `key`, a positive integer (1 when absent), capped at 2^20: an
// integer beyond int64 counts as 2^20 too.
int positive_count(const json& j, const char* key) {
  constexpr int cap = 1 << 20;
  const auto m = j.find(key);
  if (m == j.end()) return 1;
  if (m->is_number_unsigned() && m->get<std::uint64_t>() > std::uint64_t{cap}) return cap;
  const auto value = as_int64(*m);
  if (!value || *value < 1)
    bad(fmt::format("{} is not a positive integer: {}", key, show_json(*m)));
  return static_cast<int>(std::min<std::int64_t>(*value, cap));
}

// The hello reply's "counter": {"dtype": ..., "at_end": "wrap" | "saturate"}.
reference::Counter counter(const json& v) {
  if (!v.is_object())
    bad(fmt::format("counter is not an object {{\"dtype\":..,\"at_end\":..}}: {}", show_json(v)));
  reference::Counter out;
  const auto dtype = v.find("dtype");
  const auto type = dtype != v.end() && dtype->is_string()
                        ? reference::parse_counter_type(dtype->get_ref<const std::string&>())
                        : std::nullopt;
  if (!type)
    bad(
        fmt::format("counter.dtype is {}, expected \"int32\", \"uint32\", \"int64\", "
                    "\"float32\" or \"float64\"",
                    dtype == v.end() ? std::string("missing") : show_json(*dtype)));
  out.type = *type;
  const auto end = v.find("at_end");
  const auto at_end = end != v.end() && end->is_string()
                          ? reference::parse_counter_end(end->get_ref<const std::string&>())
                          : std::nullopt;
  if (!at_end || *at_end == reference::CounterEnd::untested)
    bad(fmt::format("counter.at_end is {}, expected \"wrap\" or \"saturate\"",
                    end == v.end() ? std::string("missing") : show_json(*end)));
  if ((out.type == reference::CounterType::float32 ||
       out.type == reference::CounterType::float64) &&
      *at_end == reference::CounterEnd::wrap)
    bad(fmt::format("counter.at_end is \"wrap\" for a {} counter, which can only saturate",
                    to_string(out.type)));
  out.at_end = *at_end;
  return out;
}

// The hello reply's "momentum": {"dampening": bool, "nesterov": bool, "weight_decay":
// ["coupled", "decoupled"]} (each optional: false, false, none).
properties::MomentumSupport momentum_support(const json& v) {
  if (!v.is_object()) bad(fmt::format("momentum is not an object: {}", show_json(v)));
  properties::MomentumSupport out;
  for (auto [key, flag] : {std::pair{"dampening", &out.dampening}, {"nesterov", &out.nesterov}}) {
    const auto it = v.find(key);
    if (it == v.end()) continue;
    if (!it->is_boolean())
      bad(fmt::format("momentum.{} is not true or false: {}", key, show_json(*it)));
    *flag = it->get<bool>();
  }
  if (const auto it = v.find("weight_decay"); it != v.end()) {
    if (!it->is_array())
      bad(fmt::format("momentum.weight_decay is not a list: {}", show_json(*it)));
    for (const json& e : *it) {
      const auto decay =
          e.is_string() ? reference::parse_decay(e.get_ref<const std::string&>()) : std::nullopt;
      if (!decay)
        bad(fmt::format("momentum.weight_decay lists {}, expected \"coupled\" or \"decoupled\"",
                        show_json(e)));
      (*decay == reference::Optimizer::Decay::coupled ? out.coupled_decay : out.decoupled_decay) =
          true;
    }
  }
  return out;
}

// The hello reply's "adam" or "adagrad" (named `name`): {"weight_decay": ["coupled",
// "decoupled"], "eps_root": bool} (each optional: none, false).
template <class Support>
Support root_support(const json& v, const char* name) {
  if (!v.is_object()) bad(fmt::format("{} is not an object: {}", name, show_json(v)));
  Support out;
  if (const auto it = v.find("eps_root"); it != v.end()) {
    if (!it->is_boolean())
      bad(fmt::format("{}.eps_root is not true or false: {}", name, show_json(*it)));
    out.eps_root = it->get<bool>();
  }
  if (const auto it = v.find("weight_decay"); it != v.end()) {
    if (!it->is_array())
      bad(fmt::format("{}.weight_decay is not a list: {}", name, show_json(*it)));
    for (const json& e : *it) {
      const auto decay =
          e.is_string() ? reference::parse_decay(e.get_ref<const std::string&>()) : std::nullopt;
      if (!decay)
        bad(fmt::format("{}.weight_decay lists {}, expected \"coupled\" or \"decoupled\"", name,
                        show_json(e)));
      (*decay == reference::Optimizer::Decay::coupled ? out.coupled_decay : out.decoupled_decay) =
          true;
    }
  }
  return out;
}

// The same, as the hello reply writes it.
template <class Support>
ojson encode_root_support(const Support& s) {
  ojson decays = ojson::array();
  if (s.coupled_decay) decays.push_back("coupled");
  if (s.decoupled_decay) decays.push_back("decoupled");
  return {{"weight_decay", decays}, {"eps_root", s.eps_root}};
}

// The hello reply's "compute_format": a name ("tf32", ...) or {"fraction_bits": ..,
// "min_exponent": .., "max_exponent": ..}.
reference::Format decode_format(const json& v) {
  if (v.is_string()) {
    if (const auto f = reference::parse_format(v.get_ref<const std::string&>())) return *f;
    bad(fmt::format(
        "compute_format is {}, expected \"float32\", \"tf32\", \"bfloat16\", \"float16\" or "
        "{{\"fraction_bits\":..,\"min_exponent\":..,\"max_exponent\":..}}",
        show_json(v)));
  }
  if (!v.is_object())
    bad(fmt::format("compute_format is neither a format's name nor an object: {}", show_json(v)));
  reference::Format f;
  for (auto [key, field] : {std::pair{"fraction_bits", &f.fraction_bits},
                            {"min_exponent", &f.min_exponent},
                            {"max_exponent", &f.max_exponent}}) {
    const auto it = v.find(key);
    if (it == v.end()) bad(fmt::format("compute_format has no {}: {}", key, show_json(v)));
    const auto value = as_int64(*it);
    if (!value) bad(fmt::format("compute_format.{} is not an integer: {}", key, show_json(*it)));
    // Out of every format's range either way; format_problem names it.
    *field = static_cast<int>(std::clamp<std::int64_t>(*value, -100000, 100000));
  }
  if (const std::string problem = reference::format_problem(f); !problem.empty())
    bad("compute_format: " + problem);
  return f;
}

// The hello reply's "precision": {"param_dtype": NAME, "reduce_dtype": NAME,
// "master_dtype": NAME}, each optional; reduce_dtype defaults to param_dtype (as FSDP2's
// reduce_dtype=None), the others to float32.
reference::Stages decode_precision(const json& v) {
  if (!v.is_object()) bad(fmt::format("precision is not an object: {}", show_json(v)));
  // Not a structured binding: the lambda captures the key, which clang before 16 rejects.
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& key = it.key();
    if (std::none_of(std::begin(reference::stage_fields), std::end(reference::stage_fields),
                     [&](const reference::StageField& f) { return key == f.name; }))
      bad(
          fmt::format("precision has an unknown field {}: expected param_dtype, reduce_dtype, "
                      "master_dtype",
                      show_json(json(key))));
  }
  auto dtype = [&](const char* key) -> std::optional<reference::Format> {
    const auto it = v.find(key);
    if (it == v.end()) return std::nullopt;
    const std::optional<reference::Format> f =
        it->is_string() ? reference::parse_stage_format(it->get_ref<const std::string&>())
                        : std::nullopt;
    if (!f)
      bad(fmt::format("precision.{} is {}, expected \"float32\", \"bfloat16\" or \"float16\"", key,
                      show_json(*it)));
    return f;
  };
  reference::Stages s;
  if (const auto p = dtype("param_dtype")) s.param = *p;
  s.reduce = dtype("reduce_dtype").value_or(s.param);
  if (const auto m = dtype("master_dtype")) s.master = *m;
  if (const std::string problem = reference::stages_problem(s); !problem.empty())
    bad("precision." + problem);
  return s;
}

ojson encode_format(const reference::Format& f) {
  if (reference::parse_format(reference::to_string(f))) return reference::to_string(f);
  return {{"fraction_bits", f.fraction_bits},
          {"min_exponent", f.min_exponent},
          {"max_exponent", f.max_exponent}};
}

std::string string_field(const json& j, const char* key, std::string_view what) {
  const auto it = j.find(key);
  if (it == j.end()) bad(fmt::format("{} has no {}", what, key));
  if (!it->is_string()) bad(fmt::format("{} {} is not a string: {}", what, key, show_json(*it)));
  return it->get<std::string>();
}

}  // namespace

std::string encode_hello(bool offer_binary) {
  ojson j = {{"op", "hello"}, {"protocol", protocol_version}};
  if (offer_binary) j["array_encodings"] = {"base64", "binary"};
  return j.dump();
}

Frame encode_step(std::int64_t id, const reference::Case& c, ArrayEncoding arrays,
                  std::optional<BatchPosition> batch) {
  ArrayWriter write(arrays);
  ojson j = {
      {"op", "step"},   {"id", id}, {"n", c.n},
      {"d", c.d},       {"k", c.k}, {"num_shards", c.num_shards},
      {"step", c.step},
  };
  if (batch) {
    j["batch_index"] = batch->index;
    j["batch_size"] = batch->size;
  }
  j["lr"] = write(std::span<const float>(&c.lr, 1));
  const reference::Optimizer& o = c.optimizer;
  if (o.kind != reference::Optimizer::Kind::sgd) {
    // Sent only for another optimizer than plain SGD: a v1 step stays as it was.
    j["optimizer"] = to_string(o.kind);
    // Its hyperparameters as the reference's table lists them, one scalar array each, and
    // momentum's nesterov flag.
    for (const reference::OptimizerField& f : reference::optimizer_fields(o.kind)) {
      if (!f.hyperparameter) {
        j[f.name] = o.nesterov;
        continue;
      }
      const float v = f.hyperparameter->get(c);
      j[f.name] = write(std::span<const float>(&v, 1));
    }
    j["decay"] = to_string(o.decay);
  }
  if (c.bias_group) {
    // Sent only for a bias in a parameter group of its own, each value only where it
    // differs from the kernel's by declaration.
    if (c.bias_group->lr) j["bias_lr"] = write(std::span<const float>(&*c.bias_group->lr, 1));
    if (c.bias_group->weight_decay)
      j["bias_weight_decay"] = write(std::span<const float>(&*c.bias_group->weight_decay, 1));
  }
  if (c.clip) {
    // Sent only with clipping: its max_norm and the eps of the declared convention.
    j["clip_max_norm"] = write(std::span<const float>(&c.clip->max_norm, 1));
    j["clip_eps"] = write(std::span<const float>(&c.clip->eps, 1));
  }
  for (const reference::InputArray& in : reference::input_arrays) {
    if (in.state && (c.*in.member).empty()) continue;  // fresh state: no buffer
    j[in.name] = write(c.*in.member);
  }
  return std::move(write).frame(std::move(j));
}

std::string encode_step(std::int64_t id, const reference::Case& c) {
  return encode_step(id, c, ArrayEncoding::base64).line;
}

std::string encode_bye() { return ojson{{"op", "bye"}}.dump(); }

properties::Declaration decode_hello(std::string_view line) {
  return decode_hello_reply(line, false).declaration;
}

Hello decode_hello_reply(std::string_view line, bool binary_offered) {
  const json j = parse_object(line, "hello reply");
  const auto op = j.find("op");
  if (op == j.end() || !op->is_string() || op->get_ref<const std::string&>() != "hello") {
    bad(fmt::format("hello reply has op {}, expected \"hello\"",
                    op == j.end() ? std::string("missing") : show_json(*op)));
  }
  const auto protocol = j.find("protocol");
  if (protocol == j.end()) bad("hello reply has no protocol");
  const auto version = as_int64(*protocol);
  if (!version || *version != protocol_version) {
    bad(fmt::format("adapter speaks protocol {}, the suite speaks protocol {}",
                    show_json(*protocol), protocol_version));
  }

  properties::Declaration d;
  d.name = string_field(j, "name", "hello reply");
  d.version = string_field(j, "version", "hello reply");

  const auto caps = j.find("capabilities");
  if (caps == j.end()) bad("hello reply has no capabilities");
  if (!caps->is_array()) bad(fmt::format("capabilities is not a list: {}", show_json(*caps)));
  for (std::size_t i = 0; i < caps->size(); ++i) {
    const json& c = (*caps)[i];
    if (!c.is_string()) bad(fmt::format("capabilities[{}] is not a string: {}", i, show_json(c)));
    const auto& name = c.get_ref<const std::string&>();
    // Unknown names are ignored: later protocol versions may add capabilities.
    if (name == "grads") d.capabilities.grads = true;
    if (name == "step_counter") d.capabilities.step_counter = true;
    if (name == "shard_layout") d.capabilities.shard_layout = true;
  }

  // Extension fields (docs/spec/protocol.md).
  if (const auto s = j.find("subnormals"); s != j.end()) {
    if (!s->is_string()) bad(fmt::format("subnormals is not a string: {}", show_json(*s)));
    const auto& text = s->get_ref<const std::string&>();
    if (text == "ieee") {
      d.arithmetic.subnormals = reference::Subnormals::ieee;
    } else if (text == "ftz") {
      d.arithmetic.subnormals = reference::Subnormals::flush_to_zero;
    } else {
      bad(fmt::format("subnormals is {}, expected \"ieee\" or \"ftz\"", show_json(*s)));
    }
  }
  if (const auto u = j.find("unit_roundoff"); u != j.end()) {
    const double value = u->is_number() ? u->get<double>() : std::nan("");
    if (!(value > 0.0 && value < 1.0)) {
      bad(fmt::format("unit_roundoff is {}, expected a number between 0 and 1", show_json(*u)));
    }
    d.arithmetic.u = value;
  }
  if (const auto f = j.find("compute_format"); f != j.end()) {
    d.arithmetic.format = decode_format(*f);
    const double least = d.arithmetic.format.unit_roundoff();
    if (j.find("unit_roundoff") == j.end()) {
      d.arithmetic.u = least;
    } else if (d.arithmetic.u < least) {
      bad(fmt::format("unit_roundoff is {}, below compute_format {}'s own unit roundoff 2^{}",
                      d.arithmetic.u, reference::to_string(d.arithmetic.format),
                      -(d.arithmetic.format.fraction_bits + 1)));
    }
  }
  if (const auto p = j.find("precision"); p != j.end()) {
    d.arithmetic.stages = decode_precision(*p);
    if (d.arithmetic.stages.declared() && d.arithmetic.format.narrower_than_float32())
      bad(fmt::format("precision and compute_format {} both declared: declare one",
                      reference::to_string(d.arithmetic.format)));
    if (d.arithmetic.stages.declared() && d.arithmetic.subnormals != reference::Subnormals::ieee)
      bad("precision with subnormals \"ftz\": stages are modelled with gradual underflow only");
  }
  if (const auto s = j.find("sharded"); s != j.end()) {
    if (!s->is_boolean()) bad(fmt::format("sharded is not true or false: {}", show_json(*s)));
    d.capabilities.sharded = s->get<bool>();
  }
  if (const auto m = j.find("max_shards"); m != j.end()) {
    if (m->is_number_unsigned() &&
        m->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
      bad(fmt::format("max_shards is {}, more than the largest, 2^31 - 1", show_json(*m)));
    const auto value = as_int64(*m);
    if (!value || *value < 1)
      bad(fmt::format("max_shards is not a positive integer: {}", show_json(*m)));
    d.capabilities.max_shards = static_cast<int>(*value);
  }
  ArrayEncoding arrays = ArrayEncoding::base64;
  if (const auto a = j.find("array_encoding"); a != j.end()) {
    if (*a == "binary") {
      if (!binary_offered) bad("adapter chose binary arrays, which the suite did not offer");
      arrays = ArrayEncoding::binary;
    } else if (*a != "base64") {
      bad(fmt::format("array_encoding is {}, expected \"base64\" or \"binary\"", show_json(*a)));
    }
  }
  if (const auto p = j.find("placement"); p != j.end()) {
    const auto rule =
        p->is_string()
            ? properties::sharding::parse_placement_rule(p->get_ref<const std::string&>())
            : std::nullopt;
    if (!rule)
      bad(
          fmt::format("placement is {}, expected \"flat\", \"output_chunks\" or "
                      "\"input_chunks\"",
                      show_json(*p)));
    d.capabilities.placement = *rule;
  }
  if (const auto c = j.find("counter"); c != j.end()) d.counter = counter(*c);
  if (const auto m = j.find("momentum"); m != j.end())
    d.capabilities.momentum = momentum_support(*m);
  if (const auto a = j.find("adam"); a != j.end())
    d.capabilities.adam = root_support<properties::AdamSupport>(*a, "adam");
  if (const auto a = j.find("adagrad"); a != j.end())
    d.capabilities.adagrad = root_support<properties::AdagradSupport>(*a, "adagrad");
  if (const auto r = j.find("recipe"); r != j.end()) {
    try {
      d.recipe = decode_recipe(*r);
      properties::validate(d.recipe, d.capabilities);
    } catch (const std::invalid_argument& e) {
      bad(e.what());
    }
  }
  return Hello{std::move(d), arrays, positive_count(j, "max_in_flight"),
               positive_count(j, "max_batch")};
}

std::size_t payload_size(std::string_view line, std::size_t limit) {
  const json j = parse_object(line, "answer");
  const auto p = j.find("payload");
  if (p == j.end()) return 0;
  const auto bytes = as_int64(*p);
  if (!bytes || *bytes < 0)
    bad(fmt::format("payload is not a non-negative integer: {}", show_json(*p)));
  if (static_cast<std::uint64_t>(*bytes) > limit) {
    bad(fmt::format("payload of {} bytes exceeds the limit of {} bytes", *bytes, limit));
  }
  return static_cast<std::size_t>(*bytes);
}

namespace {

properties::StepOutcome decode_frame(std::string_view line, std::string_view payload,
                                     std::int64_t id, const reference::Case& c,
                                     const properties::Capabilities& promised,
                                     ArrayEncoding arrays) {
  const ArrayReader floats(arrays, payload);
  const json j = parse_object(line, "answer");

  const auto op_it = j.find("op");
  if (op_it == j.end())
    bad(fmt::format("answer has no op: '{}'", detail::printable(line, detail::quote_limit)));
  if (!op_it->is_string()) bad(fmt::format("answer's op is not a string: {}", show_json(*op_it)));
  const std::string& op = op_it->get_ref<const std::string&>();
  if (op != "result" && op != "error") {
    bad(fmt::format("answer has op {}, expected \"result\" or \"error\"", show_json(*op_it)));
  }

  const auto id_it = j.find("id");
  if (id_it == j.end()) bad("answer has no id");
  if (as_int64(*id_it) != id) {
    std::string what = fmt::format("answer has id {}, expected {}", show_json(*id_it), id);
    // The Python kit answers a message it could not parse with id null; say why.
    if (op == "error") {
      const auto m = j.find("message");
      if (m != j.end()) what += fmt::format(" (error: {})", show_json(*m));
    }
    bad(what);
  }

  if (op == "error") {
    const auto m = j.find("message");
    if (m == j.end()) bad("error answer has no message");
    if (!m->is_string()) bad(fmt::format("error message is not a string: {}", show_json(*m)));
    std::string message = m->get<std::string>();
    // A rejection is told apart from a result by its non-empty text.
    if (message.empty()) message = "(adapter rejected the case without a message)";
    return properties::StepOutcome{.result = std::nullopt, .rejection = std::move(message)};
  }

  reference::StepResult r;
  for (const reference::OutputInfo& out : reference::output_table) {
    // Outputs that are not part of this result (not promised, no momentum) are ignored,
    // like unknown fields.
    if (!reports(out, c, promised.grads)) continue;
    if (out.reported == reference::Reported::with_grads) required(j, out.name, "grads");
    if (out.reported == reference::Reported::with_buffer ||
        out.reported == reference::Reported::with_second_moment) {
      if (j.find(out.name) == j.end())
        bad(fmt::format("answer lacks {}, which a {} step returns", out.name,
                        to_string(c.optimizer.kind)));
    }
    const auto count =
        static_cast<std::int64_t>(reference::element_count(out.extent, c.n, c.d, c.k));
    r[out.output] = floats(j, out.name, count);
  }
  if (promised.step_counter) {
    const json& s = required(j, "step", "step_counter");
    const auto value = as_int64(s);
    if (!value) bad(fmt::format("step is not an integer: {}", show_json(s)));
    r.step = *value;
  }
  if (promised.shard_layout) {
    r.shards = shards(required(j, "shards", "shard_layout"));
  }
  return properties::StepOutcome{.result = std::move(r), .rejection = {}};
}

}  // namespace

properties::StepOutcome decode_answer(std::string_view line, std::int64_t id,
                                      const reference::Case& c,
                                      const properties::Capabilities& promised) {
  return decode_frame(line, {}, id, c, promised, ArrayEncoding::base64);
}

properties::StepOutcome decode_answer(const Frame& answer, std::int64_t id,
                                      const reference::Case& c,
                                      const properties::Capabilities& promised,
                                      ArrayEncoding arrays) {
  return decode_frame(answer.line, answer.payload, id, c, promised, arrays);
}

std::string encode_hello_reply(const properties::Declaration& d) {
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
  if (d.arithmetic.format != reference::formats::float32)
    j["compute_format"] = encode_format(d.arithmetic.format);
  if (const reference::Stages& st = d.arithmetic.stages; st.declared())
    j["precision"] = encode_precision(st);
  if (d.capabilities.max_shards > 0) j["max_shards"] = d.capabilities.max_shards;
  if (d.capabilities.shard_layout) j["placement"] = to_string(d.capabilities.placement);
  if (d.counter.at_end != reference::CounterEnd::untested)
    j["counter"] = {{"dtype", to_string(d.counter.type)}, {"at_end", to_string(d.counter.at_end)}};
  if (const auto& m = d.capabilities.momentum) {
    ojson decays = ojson::array();
    if (m->coupled_decay) decays.push_back("coupled");
    if (m->decoupled_decay) decays.push_back("decoupled");
    j["momentum"] = {
        {"dampening", m->dampening}, {"nesterov", m->nesterov}, {"weight_decay", decays}};
  }
  if (const auto& a = d.capabilities.adam) j["adam"] = encode_root_support(*a);
  if (const auto& a = d.capabilities.adagrad) j["adagrad"] = encode_root_support(*a);
  if (!d.recipe.empty()) j["recipe"] = encode_recipe(d.recipe);
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

Frame encode_result(std::int64_t id, const reference::StepResult& r, ArrayEncoding arrays) {
  ArrayWriter write(arrays);
  ojson j = {{"op", "result"}, {"id", id}};
  for (const reference::OutputInfo& out : reference::output_table)
    if (!r[out.output].empty()) j[out.name] = write(r[out.output]);
  if (r.step) j["step"] = *r.step;
  if (r.shards) {
    ojson list = ojson::array();
    for (const reference::ShardPart& s : *r.shards) {
      ojson part = {{"kernel", s.kernel}, {"bias", s.bias}};
      if (s.state_kernel) part["state_kernel"] = *s.state_kernel;
      if (s.state_bias) part["state_bias"] = *s.state_bias;
      list.push_back(std::move(part));
    }
    j["shards"] = std::move(list);
  }
  return std::move(write).frame(std::move(j));
}

std::string encode_result(std::int64_t id, const reference::StepResult& r) {
  return encode_result(id, r, ArrayEncoding::base64).line;
}

std::string encode_error(std::int64_t id, std::string_view message) {
  return ojson{{"op", "error"}, {"id", id}, {"message", std::string(message)}}.dump(
      -1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace sgdc::conformance::protocol