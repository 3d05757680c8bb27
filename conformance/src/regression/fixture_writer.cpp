// Writing fixture files (fixture_json.hpp): the text is a pure function of the fixture.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fixture_optimizer.hpp"
#include "protocol/base64.hpp"
#include "sgdc/conformance/protocol/precision_json.hpp"
#include "sgdc/conformance/regression/fixture_json.hpp"
#include "sgdc/reference/hyperparameters.hpp"

namespace sgdc::conformance::regression {

namespace {

using Json = nlohmann::ordered_json;

// Shortest decimal that reads back as the same float32; "nan" for every NaN.
std::string float_decimal(float v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

Json decimals(const std::vector<float>& v) {
  Json out = Json::array();
  for (float f : v) out.push_back(float_decimal(f));
  return out;
}

Json shape_of(reference::Extent extent, const reference::Case& c) {
  Json out = Json::array();
  for (std::int64_t d : reference::dimensions(extent, c.n, c.d, c.k)) out.push_back(d);
  return out;
}

Json input_array(Json shape, const std::vector<float>& values) {
  Json a = Json::object();
  a["shape"] = std::move(shape);
  a["float32"] = protocol::encode_floats(values);
  a["decimal"] = decimals(values);
  return a;
}

Json output_object(Json shape, const ExpectedOutput& e) {
  Json o = Json::object();
  o["shape"] = std::move(shape);
  o["expected"] = protocol::encode_floats(e.expected);
  o["expected_decimal"] = decimals(e.expected);
  o["exact"] = e.exact;
  // Absent where the values are irrational in general (Adam's parameters, version 2).
  if (!e.exact_rational.empty()) o["exact_rational"] = e.exact_rational;
  o["bound"] = e.bound;
  o["may_overflow"] = e.may_overflow;
  o["must_be_nonfinite"] = e.must_be_nonfinite;
  return o;
}

Json to_json(const Fixture& f) {
  const reference::Case& c = f.inputs;
  if (c.step >= max_fixture_step)
    throw std::invalid_argument(fmt::format(
        "inputs.step: {} is beyond the largest counter a fixture holds, 2^53 - 2 (every JSON "
        "reader holds it exactly)",
        c.step));
  Json j = Json::object();
  j["format"] = format_name;
  // Version 2 only where a version-2 field is needed: every other file reads as before,
  // byte for byte.
  j["version"] = detail::needs_version_2(c, f.arithmetic) ? format_version_latest : format_version;
  j["name"] = f.name;
  j["description"] = f.description;
  if (f.property) j["property"] = *f.property;
  j["arithmetic"] = {{"unit_roundoff", f.arithmetic.u},
                     {"subnormals", to_string(f.arithmetic.subnormals)}};
  if (const reference::Format& cf = f.arithmetic.format; cf != reference::formats::float32) {
    if (reference::parse_format(reference::to_string(cf)))
      j["arithmetic"]["compute_format"] = reference::to_string(cf);
    else
      j["arithmetic"]["compute_format"] = {{"fraction_bits", cf.fraction_bits},
                                           {"min_exponent", cf.min_exponent},
                                           {"max_exponent", cf.max_exponent}};
  }
  if (const reference::Stages& st = f.arithmetic.stages; st.declared())
    j["arithmetic"]["precision"] = protocol::encode_precision(st);
  Json in = Json::object();
  in["n"] = c.n;
  in["d"] = c.d;
  in["k"] = c.k;
  in["num_shards"] = c.num_shards;
  in["step"] = c.step;
  in["lr"] = input_array(Json::array(), {c.lr});
  if (const reference::Optimizer& o = c.optimizer; o.kind != reference::Optimizer::Kind::sgd) {
    Json opt = Json::object();
    opt["kind"] = to_string(o.kind);
    for (const reference::OptimizerField& f : reference::optimizer_fields(o.kind))
      opt[f.name] = f.hyperparameter ? input_array(Json::array(), {f.hyperparameter->get(c)})
                                     : Json(o.nesterov);
    opt["decay"] = to_string(o.decay);
    in["optimizer"] = std::move(opt);
  }
  if (c.bias_group) {
    Json g = Json::object();
    if (c.bias_group->lr) g["lr"] = input_array(Json::array(), {*c.bias_group->lr});
    if (c.bias_group->weight_decay)
      g["weight_decay"] = input_array(Json::array(), {*c.bias_group->weight_decay});
    in["bias_group"] = std::move(g);
  }
  if (c.clip) {
    Json clip = Json::object();
    clip["max_norm"] = input_array(Json::array(), {c.clip->max_norm});
    clip["eps"] = input_array(Json::array(), {c.clip->eps});
    in["clip"] = std::move(clip);
  }
  for (const reference::InputArray& a : reference::input_arrays)
    if (!a.state || !(c.*a.member).empty())
      in[a.name] = input_array(shape_of(a.extent, c), c.*a.member);
  j["inputs"] = std::move(in);
  Json out = Json::object();
  for (const reference::OutputInfo& o : reference::output_table)
    if (reports(o, c, true))
      out[o.name] = output_object(shape_of(o.extent, c), f.outputs[o.output]);
  out["step"] = f.step;
  j["outputs"] = std::move(out);
  Json p = Json::object();
  p["generator"] = f.provenance.generator;
  p["generator_version"] = f.provenance.generator_version;
  p["mode"] = f.provenance.mode;
  if (f.provenance.seed) p["seed"] = *f.provenance.seed;
  p["parameters"] = f.provenance.parameters;
  p["oracle"] = f.provenance.oracle;
  j["provenance"] = std::move(p);
  return j;
}

bool scalar(const Json& j) { return !j.is_object() && !j.is_array(); }

// Objects one member per line; arrays of scalars on one line, so that a fixture reads
// as a table rather than a column of numbers.
void print(std::string& out, const Json& j, int indent) {
  const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    std::size_t i = 0;
    for (const auto& [key, value] : j.items()) {
      out += pad + Json(key).dump() + ": ";
      print(out, value, indent + 2);
      out += ++i < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<std::size_t>(indent), ' ') + "}";
  } else if (j.is_array() && !std::all_of(j.begin(), j.end(), scalar)) {
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
      out += pad;
      print(out, j[i], indent + 2);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<std::size_t>(indent), ' ') + "]";
  } else if (j.is_array()) {
    out += "[";
    for (std::size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + j[i].dump();
    out += "]";
  } else {
    out += j.dump();
  }
}

}  // namespace

std::string to_json_text(const Fixture& f) {
  std::string out;
  print(out, to_json(f), 0);
  return out + "\n";
}

std::filesystem::path write_fixture(const Fixture& f, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / (f.name + ".json");
  const std::string text = to_json_text(f);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  return path;
}

std::vector<std::filesystem::path> fixture_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(p)) {
        const std::string name = entry.path().filename().string();
        const auto ends_with = [&](std::string_view s) {
          return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
        };
        if (entry.is_regular_file() && ends_with(".json") && !ends_with(".schema.json"))
          found.push_back(entry.path());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p)) {
      out.emplace_back(p);
    } else {
      throw std::invalid_argument(fmt::format("{}: no such file or directory", p));
    }
  }
  return out;
}

}  // namespace sgdc::conformance::regression