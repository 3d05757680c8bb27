// Reading fixture files (fixture_json.hpp). Every rule of
// fixtures/schema/fixture-v1.schema.json is checked here by hand, in the same order,
// so that an error names the first offending field; keep the two in sync.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "fixture_optimizer.hpp"
#include "protocol/base64.hpp"
#include "sgdc/conformance/regression/fixture_error.hpp"
#include "sgdc/conformance/regression/fixture_json.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/reference/float32.hpp"
#include "sgdc/reference/hyperparameters.hpp"

namespace sgdc::conformance::regression {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::int64_t max_step = max_fixture_step;
constexpr std::int64_t max_dim = 65536;

const char* type_name(const Json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "null";
  if (j.is_array()) return "an array";
  return "an object";
}

// The shortest round-trip decimal (std::to_chars), "inf", "-inf", or "nan".
const std::regex float_pattern("-?(inf|[0-9]+(\\.[0-9]+)?(e[-+]?[0-9]+)?)|nan");

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& reason) const {
    throw FixtureError(FixtureError::Kind::malformed, file_, path, reason);
  }

  void expect_type(const Json& j, const std::string& path, bool ok, const char* what) const {
    if (!ok) fail(path, fmt::format("expected {}, got {}", what, type_name(j)));
  }

  // An object with exactly the `required` members, plus any of `optional`.
  const Json& object(const Json& j, const std::string& path,
                     const std::vector<std::string>& required,
                     const std::vector<std::string>& optional = {}) const {
    expect_type(j, path, j.is_object(), "an object");
    for (const std::string& key : required)
      if (!j.contains(key)) fail(join(path, key), "required field is missing");
    for (const auto& item : j.items()) {
      // Not a structured binding: clang before 16 cannot capture one in a lambda.
      const std::string& key = item.key();
      const auto known = [&](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), key) != list.end();
      };
      if (!known(required) && !known(optional))
        fail(join(path, key), "unknown field (no version of the format has such a field)");
    }
    return j;
  }

  std::int64_t integer(const Json& j, const std::string& path, std::int64_t lo,
                       std::int64_t hi) const {
    expect_type(j, path, j.is_number_integer(), "an integer");
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      fail(path, fmt::format("{} is outside {} .. {}", j.get<std::uint64_t>(), lo, hi));
    const auto v = j.get<std::int64_t>();
    if (v < lo || v > hi) fail(path, fmt::format("{} is outside {} .. {}", v, lo, hi));
    return v;
  }

  std::string string(const Json& j, const std::string& path) const {
    expect_type(j, path, j.is_string(), "a string");
    return j.get<std::string>();
  }

  std::string matching(const Json& j, const std::string& path, const std::regex& pattern,
                       const char* what) const {
    std::string s = string(j, path);
    if (!std::regex_match(s, pattern)) fail(path, fmt::format("\"{}\" is not {}", s, what));
    return s;
  }

  const Json& array(const Json& j, const std::string& path, std::size_t count) const {
    expect_type(j, path, j.is_array(), "an array");
    if (j.size() != count) fail(path, fmt::format("{} values, expected {}", j.size(), count));
    return j;
  }

  void shape(const Json& j, const std::string& path, const std::vector<std::int64_t>& want,
             const char* dims) const {
    expect_type(j, path, j.is_array(), "an array");
    std::vector<std::int64_t> got;
    for (const Json& e : j) {
      if (!e.is_number_integer()) fail(path, "expected an array of integers");
      got.push_back(e.get<std::int64_t>());
    }
    if (got != want)
      fail(path, fmt::format("[{}], expected [{}] ({})", fmt::join(got, ", "),
                             fmt::join(want, ", "), dims));
  }

  std::vector<float> floats(const Json& j, const std::string& path, std::size_t count) const {
    const std::string text = string(j, path);
    std::vector<float> v;
    try {
      v = protocol::decode_floats(text);
    } catch (const std::invalid_argument& e) {
      fail(path, e.what());
    }
    if (v.size() != count) fail(path, fmt::format("{} values, expected {}", v.size(), count));
    return v;
  }

  // The readable decimals must say what the bits say (the bits are authoritative).
  void decimals(const Json& j, const std::string& path, const std::vector<float>& bits) const {
    array(j, path, bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const std::string item = fmt::format("{}[{}]", path, i);
      const std::string s = matching(j[i], item, float_pattern, "a decimal float32");
      float v = 0.0f;
      const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        fail(item, fmt::format("\"{}\" is not a decimal float32", s));
      if (!reference::same_bits(v, bits[i]))
        fail(item, fmt::format("\"{}\" reads as {}, but the bits say {}", s, reference::describe(v),
                               reference::describe(bits[i])));
    }
  }

  std::vector<std::size_t> indices(const Json& j, const std::string& path,
                                   std::size_t count) const {
    expect_type(j, path, j.is_array(), "an array");
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
      const auto v = static_cast<std::size_t>(
          integer(j[i], fmt::format("{}[{}]", path, i), 0, static_cast<std::int64_t>(count) - 1));
      if (!out.empty() && v <= out.back())
        fail(fmt::format("{}[{}]", path, i), "indices must be strictly increasing");
      out.push_back(v);
    }
    return out;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string file_;
};

const std::regex name_pattern("[A-Za-z0-9._-]+");
const std::regex decimal_pattern("-?[0-9]+(\\.[0-9]+)?(e[-+][0-9]+)?");
const std::regex rational_pattern("-?[0-9]+(/[1-9][0-9]*)?");

// inputs.clip (version 2): {"max_norm", "eps"}, each a scalar array, both required: max_norm
// a finite normal float32 > 0, eps 0 or a finite normal float32 > 0.
reference::Clipping clipping(const Reader& r, const Json& j) {
  const Json& g = r.object(j, "inputs.clip", {"max_norm", "eps"});
  auto scalar = [&](const char* key) {
    const std::string path = std::string("inputs.clip.") + key;
    const Json& a = r.object(g[key], path, {"shape", "float32", "decimal"});
    r.shape(a["shape"], path + ".shape", {}, "a scalar");
    std::vector<float> v = r.floats(a["float32"], path + ".float32", 1);
    r.decimals(a["decimal"], path + ".decimal", v);
    return v[0];
  };
  reference::Clipping out{scalar("max_norm"), scalar("eps")};
  if (!std::isfinite(out.max_norm) || !(out.max_norm >= 0x1p-126f))
    r.fail("inputs.clip.max_norm",
           fmt::format("{} is not a finite normal float32 > 0", reference::describe(out.max_norm)));
  if (!std::isfinite(out.eps) || (out.eps != 0.0f && !(out.eps >= 0x1p-126f)))
    r.fail("inputs.clip.eps", fmt::format("{} is neither 0 nor a finite normal float32 > 0",
                                          reference::describe(out.eps)));
  return out;
}

std::vector<float> input_array(const Reader& r, const Json& parent, const char* key,
                               const std::vector<std::int64_t>& shape, const char* dims);

// inputs.optimizer: {"kind", then the optimizer's fields (reference::optimizer_fields:
// its hyperparameters but lr as scalar arrays, momentum's "nesterov" as a bool), "decay"
// ("coupled" | "decoupled")}: {"kind": "momentum", "momentum", "dampening", "nesterov",
// "weight_decay", "decay"}; version 2 also {"kind": "adam", "b1", "b2", "eps", "eps_root", ...} and
// {"kind": "adagrad", "eps", "eps_root", "initial_accumulator_value", ...}.
reference::Optimizer optimizer(const Reader& r, const Json& j, std::int64_t version) {
  r.expect_type(j, "inputs.optimizer", j.is_object(), "an object");
  if (!j.contains("kind")) r.fail("inputs.optimizer.kind", "required field is missing");
  const std::string kind = r.string(j["kind"], "inputs.optimizer.kind");
  const auto parsed = reference::parse_optimizer_kind(kind);
  if (!parsed || *parsed == reference::Optimizer::Kind::sgd) {
    std::vector<std::string> kinds;
    for (const reference::OptimizerInfo& o : reference::optimizer_table)
      if (o.kind != reference::Optimizer::Kind::sgd) kinds.push_back(fmt::format("\"{}\"", o.name));
    r.fail("inputs.optimizer.kind",
           fmt::format("\"{}\" is not one of {} (plain SGD has no inputs.optimizer)", kind,
                       fmt::join(kinds, ", ")));
  }
  if (detail::first_version(*parsed) > version)
    r.fail("inputs.optimizer.kind",
           fmt::format("\"{}\" is a version {} kind in a version {} fixture", kind,
                       detail::first_version(*parsed), version));
  const std::vector<reference::OptimizerField> fields = reference::optimizer_fields(*parsed);
  std::vector<std::string> keys = {"kind"};
  for (const reference::OptimizerField& f : fields) keys.push_back(f.name);
  keys.push_back("decay");
  r.object(j, "inputs.optimizer", keys);
  const Json& o = j;
  reference::Case holder;  // the table's setters write a case's optimizer
  holder.optimizer.kind = *parsed;
  auto scalar = [&](const char* key) {
    const Json& a =
        r.object(o[key], std::string("inputs.optimizer.") + key, {"shape", "float32", "decimal"});
    const std::string path = std::string("inputs.optimizer.") + key;
    r.shape(a["shape"], path + ".shape", {}, "a scalar");
    std::vector<float> v = r.floats(a["float32"], path + ".float32", 1);
    r.decimals(a["decimal"], path + ".decimal", v);
    // docs/spec/step.md: each hyperparameter is 0 or a normal float32.
    if (const int kind = std::fpclassify(v[0]); kind != FP_ZERO && kind != FP_NORMAL)
      r.fail(path + ".float32", fmt::format("{} is {}; a hyperparameter is 0 or a normal float32",
                                            reference::describe(v[0]),
                                            kind == FP_SUBNORMAL ? "subnormal" : "not finite"));
    return v[0];
  };
  for (const reference::OptimizerField& f : fields) {
    if (f.hyperparameter) {
      f.hyperparameter->set(holder, scalar(f.name));
      continue;
    }
    r.expect_type(o["nesterov"], "inputs.optimizer.nesterov", o["nesterov"].is_boolean(),
                  "true or false");
    holder.optimizer.nesterov = o["nesterov"].get<bool>();
  }
  reference::Optimizer out = holder.optimizer;
  const std::string decay = r.string(o["decay"], "inputs.optimizer.decay");
  const auto d = reference::parse_decay(decay);
  if (!d)
    r.fail("inputs.optimizer.decay",
           fmt::format("\"{}\" is neither \"coupled\" nor \"decoupled\"", decay));
  out.decay = *d;
  return out;
}

// inputs.bias_group (version 2): {"lr", "weight_decay"}, each a scalar array, at least
// one; a weight decay only with an optimizer that decays.
reference::ParamGroup bias_group(const Reader& r, const Json& j, const reference::Optimizer& o) {
  const Json& g = r.object(j, "inputs.bias_group", {}, {"lr", "weight_decay"});
  if (g.empty()) r.fail("inputs.bias_group", "declares neither lr nor weight_decay");
  reference::ParamGroup out;
  auto scalar = [&](const char* key) {
    const std::string path = std::string("inputs.bias_group.") + key;
    const Json& a = r.object(g[key], path, {"shape", "float32", "decimal"});
    r.shape(a["shape"], path + ".shape", {}, "a scalar");
    std::vector<float> v = r.floats(a["float32"], path + ".float32", 1);
    r.decimals(a["decimal"], path + ".decimal", v);
    return v[0];
  };
  if (g.contains("lr")) out.lr = scalar("lr");
  if (g.contains("weight_decay")) {
    if (o.kind == reference::Optimizer::Kind::sgd)
      r.fail("inputs.bias_group.weight_decay", "plain SGD takes no weight decay");
    out.weight_decay = scalar("weight_decay");
  }
  return out;
}

std::vector<float> input_array(const Reader& r, const Json& parent, const char* key,
                               const std::vector<std::int64_t>& shape, const char* dims) {
  const std::string path = std::string("inputs.") + key;
  const Json& a = r.object(parent[key], path, {"shape", "float32", "decimal"});
  r.shape(a["shape"], path + ".shape", shape, dims);
  std::size_t count = 1;
  for (auto d : shape) count *= static_cast<std::size_t>(d);
  std::vector<float> v = r.floats(a["float32"], path + ".float32", count);
  r.decimals(a["decimal"], path + ".decimal", v);
  return v;
}

// `rational`: the output carries exact_rational (fixture_optimizer.hpp: all but the
// parameters of Adam and Adagrad, irrational in general, which carry their decided
// decimals alone).
ExpectedOutput output(const Reader& r, const Json& parent, reference::Output o,
                      const std::vector<std::int64_t>& shape, const char* dims, bool rational) {
  const std::string path = std::string("outputs.") + to_string(o);
  std::vector<std::string> keys = {"shape", "expected",     "expected_decimal", "exact",
                                   "bound", "may_overflow", "must_be_nonfinite"};
  if (rational) keys.push_back("exact_rational");
  const Json& j = r.object(parent[to_string(o)], path, keys);
  r.shape(j["shape"], path + ".shape", shape, dims);
  std::size_t count = 1;
  for (auto d : shape) count *= static_cast<std::size_t>(d);
  ExpectedOutput e;
  e.expected = r.floats(j["expected"], path + ".expected", count);
  r.decimals(j["expected_decimal"], path + ".expected_decimal", e.expected);
  r.array(j["exact"], path + ".exact", count);
  if (rational) r.array(j["exact_rational"], path + ".exact_rational", count);
  r.array(j["bound"], path + ".bound", count);
  for (std::size_t i = 0; i < count; ++i) {
    e.exact.push_back(r.matching(j["exact"][i], fmt::format("{}.exact[{}]", path, i),
                                 decimal_pattern, "a decimal number"));
    if (rational)
      e.exact_rational.push_back(r.matching(j["exact_rational"][i],
                                            fmt::format("{}.exact_rational[{}]", path, i),
                                            rational_pattern, "an integer or a fraction p/q"));
    const Json& b = j["bound"][i];
    const std::string item = fmt::format("{}.bound[{}]", path, i);
    r.expect_type(b, item, b.is_number(), "a number");
    const double v = b.get<double>();
    if (!(v >= 0.0) || !std::isfinite(v)) r.fail(item, fmt::format("{} is not a bound (>= 0)", v));
    e.bound.push_back(v);
  }
  e.may_overflow = r.indices(j["may_overflow"], path + ".may_overflow", count);
  e.must_be_nonfinite = r.indices(j["must_be_nonfinite"], path + ".must_be_nonfinite", count);
  return e;
}

}  // namespace

Fixture parse_fixture(std::string_view text, const std::string& file) {
  const Reader r(file);
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    // Not only parse_error: a number beyond double's range is out_of_range.406.
    r.fail("", fmt::format("not JSON: {}", e.what()));
  }
  r.object(j, "", {"format", "version", "name", "inputs", "arithmetic", "outputs", "provenance"},
           {"description", "property"});
  if (r.string(j["format"], "format") != format_name)
    r.fail("format", fmt::format("expected \"{}\"", format_name));
  const auto version = r.integer(j["version"], "version", 0, std::numeric_limits<int>::max());
  if (version < format_version || version > format_version_latest)
    r.fail("version",
           fmt::format("version {} is not supported (this reader knows versions {} to {})", version,
                       format_version, format_version_latest));
  Fixture f;
  f.name = r.matching(j["name"], "name", name_pattern, "a file stem ([A-Za-z0-9._-]+)");
  if (j.contains("description")) f.description = r.string(j["description"], "description");
  if (j.contains("property")) {
    f.property = r.string(j["property"], "property");
    try {
      properties::find_property(*f.property);
    } catch (const std::invalid_argument& e) {
      r.fail("property", e.what());
    }
  }

  const Json& a = r.object(j["arithmetic"], "arithmetic", {"unit_roundoff", "subnormals"},
                           {"compute_format", "precision"});
  r.expect_type(a["unit_roundoff"], "arithmetic.unit_roundoff", a["unit_roundoff"].is_number(),
                "a number");
  f.arithmetic.u = a["unit_roundoff"].get<double>();
  if (!(f.arithmetic.u > 0.0 && f.arithmetic.u < 1.0))
    r.fail("arithmetic.unit_roundoff", fmt::format("{} is outside (0, 1)", f.arithmetic.u));
  const std::string sub = r.string(a["subnormals"], "arithmetic.subnormals");
  if (sub != "ieee" && sub != "ftz")
    r.fail("arithmetic.subnormals", fmt::format("\"{}\" is neither \"ieee\" nor \"ftz\"", sub));
  f.arithmetic.subnormals = reference::parse_subnormals(sub.c_str());
  if (a.contains("compute_format")) {
    const Json& cf = a["compute_format"];
    const std::string path = "arithmetic.compute_format";
    if (cf.is_string()) {
      const auto named = reference::parse_format(cf.get<std::string>());
      if (!named)
        r.fail(path, fmt::format("\"{}\" is not \"float32\", \"tf32\", \"bfloat16\" or \"float16\"",
                                 cf.get<std::string>()));
      f.arithmetic.format = *named;
    } else {
      r.object(cf, path, {"fraction_bits", "min_exponent", "max_exponent"});
      f.arithmetic.format = {
          static_cast<int>(r.integer(cf["fraction_bits"], path + ".fraction_bits", 1, 23)),
          static_cast<int>(r.integer(cf["min_exponent"], path + ".min_exponent", -126, 127)),
          static_cast<int>(r.integer(cf["max_exponent"], path + ".max_exponent", -126, 127))};
    }
    if (const std::string problem = reference::format_problem(f.arithmetic.format);
        !problem.empty())
      r.fail(path, problem);
  }

  if (a.contains("precision")) {
    // Version 2: mixed precision by stage, every stage named (docs/fixtures.md).
    const std::string path = "arithmetic.precision";
    if (version < 2) r.fail(path, "a version 2 field in a version 1 fixture");
    std::vector<std::string> keys;
    for (const reference::StageField& field : reference::stage_fields)
      keys.emplace_back(field.name);
    const Json& st = r.object(a["precision"], path, keys);
    for (const reference::StageField& field : reference::stage_fields) {
      const std::string where = path + "." + field.name;
      const std::string name = r.string(st[field.name], where);
      const std::optional<reference::Format> named = reference::parse_stage_format(name);
      if (!named)
        r.fail(where, fmt::format("\"{}\" is not \"float32\", \"bfloat16\" or \"float16\"", name));
      f.arithmetic.stages.*field.format = *named;
    }
    if (const std::string problem = reference::stages_problem(f.arithmetic.stages);
        !problem.empty())
      r.fail(path, problem);
    if (!f.arithmetic.stages.declared()) r.fail(path, "every stage float32: leave it out");
    if (f.arithmetic.format.narrower_than_float32())
      r.fail(path, "with a compute_format too: declare one");
    if (f.arithmetic.subnormals != reference::Subnormals::ieee)
      r.fail(path, "with subnormals \"ftz\": stages are modelled with gradual underflow only");
  }

  const Json& in = r.object(j["inputs"], "inputs",
                            {"n", "d", "k", "num_shards", "step", "lr", "kernel", "bias", "x", "y"},
                            {"optimizer", "momentum_kernel", "momentum_bias",
                             "second_moment_kernel", "second_moment_bias", "bias_group", "clip"});
  reference::Case& c = f.inputs;
  c.n = static_cast<int>(r.integer(in["n"], "inputs.n", 1, max_dim));
  c.d = static_cast<int>(r.integer(in["d"], "inputs.d", 1, max_dim));
  c.k = static_cast<int>(r.integer(in["k"], "inputs.k", 1, max_dim));
  c.num_shards = static_cast<int>(r.integer(in["num_shards"], "inputs.num_shards", 1, max_dim));
  c.step = r.integer(in["step"], "inputs.step", 0, max_step - 1);
  c.lr = input_array(r, in, "lr", {}, reference::dimension_names(reference::Extent::one))[0];
  if (in.contains("optimizer")) c.optimizer = optimizer(r, in["optimizer"], version);
  if (in.contains("bias_group")) {
    if (version < 2) r.fail("inputs.bias_group", "a version 2 field in a version 1 fixture");
    c.bias_group = bias_group(r, in["bias_group"], c.optimizer);
  }
  if (in.contains("clip")) {
    if (version < 2) r.fail("inputs.clip", "a version 2 field in a version 1 fixture");
    c.clip = clipping(r, in["clip"]);
  }
  const reference::OptimizerInfo& kept = reference::info(c.optimizer.kind);
  for (const reference::InputArray& a : reference::input_arrays) {
    // The state before the step: present, all of it, exactly for a stateful step that is
    // not the first (a momentum buffer or Adam's first moment; Adam's second moment,
    // Adagrad's sum).
    if (a.state && !in.contains(a.name)) continue;
    if (!a.kept_by(c.optimizer.kind))
      r.fail(std::string("inputs.") + a.name,
             fmt::format("{} keeps no {}",
                         c.optimizer.kind == reference::Optimizer::Kind::sgd
                             ? std::string("plain SGD")
                             : fmt::format("the optimizer \"{}\"", kept.name),
                         a.second_moment ? "second moment" : "momentum buffer"));
    c.*a.member = input_array(r, in, a.name, reference::dimensions(a.extent, c.n, c.d, c.k),
                              reference::dimension_names(a.extent));
  }
  // Carried state comes whole: every array the optimizer keeps, or none.
  std::vector<const reference::InputArray*> present, absent;
  for (const reference::InputArray& a : reference::input_arrays)
    if (a.state && a.kept_by(c.optimizer.kind))
      (in.contains(a.name) ? present : absent).push_back(&a);
  if (!present.empty() && !absent.empty())
    r.fail(std::string("inputs.") + absent.front()->name,
           fmt::format("required field is missing: the optimizer state comes whole (inputs.{} "
                       "is present)",
                       present.front()->name));

  std::vector<std::string> output_keys;
  for (const reference::OutputInfo& o : reference::output_table)
    if (reports(o, c, true)) output_keys.push_back(o.name);
  output_keys.push_back("step");
  const Json& out = r.object(j["outputs"], "outputs", output_keys);
  for (const reference::OutputInfo& o : reference::output_table)
    if (reports(o, c, true))
      f.outputs[o.output] = output(r, out, o.output, reference::dimensions(o.extent, c.n, c.d, c.k),
                                   reference::dimension_names(o.extent),
                                   detail::has_exact_rational(c, f.arithmetic, o.output));
  f.step = r.integer(out["step"], "outputs.step", 1, max_step);

  const Json& p =
      r.object(j["provenance"], "provenance",
               {"generator", "generator_version", "mode", "parameters", "oracle"}, {"seed"});
  f.provenance.generator = r.string(p["generator"], "provenance.generator");
  f.provenance.generator_version = r.string(p["generator_version"], "provenance.generator_version");
  f.provenance.mode = r.string(p["mode"], "provenance.mode");
  if (f.provenance.mode != "canonical" && f.provenance.mode != "generate" &&
      f.provenance.mode != "counterexample")
    r.fail("provenance.mode",
           fmt::format("\"{}\" is not canonical, generate or counterexample", f.provenance.mode));
  if (p.contains("seed")) {
    const Json& seed = p["seed"];
    r.expect_type(seed, "provenance.seed", seed.is_number_unsigned(), "a non-negative integer");
    f.provenance.seed = seed.get<std::uint64_t>();
  }
  r.expect_type(p["parameters"], "provenance.parameters", p["parameters"].is_object(), "an object");
  f.provenance.parameters = p["parameters"];
  f.provenance.oracle = r.string(p["oracle"], "provenance.oracle");
  return f;
}

Fixture read_fixture(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FixtureError(FixtureError::Kind::malformed, path.string(), "", "cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_fixture(text.str(), path.string());
}

}  // namespace sgdc::conformance::regression