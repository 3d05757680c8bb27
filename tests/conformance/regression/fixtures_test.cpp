// The fixture format, its validation, the oracle check, generation and replay.
#include <gtest/gtest.h>

#include <algorithm>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "protocol/base64.hpp"
#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/regression/canonical.hpp"
#include "sgdc/conformance/regression/counterexample.hpp"
#include "sgdc/conformance/regression/derive.hpp"
#include "sgdc/conformance/regression/exact_value.hpp"
#include "sgdc/conformance/regression/fixture_error.hpp"
#include "sgdc/conformance/regression/fixture_json.hpp"
#include "sgdc/conformance/regression/generate.hpp"
#include "sgdc/conformance/regression/replay.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/reference/float32.hpp"
#include "sgdc/reference/worked_example.hpp"

namespace sgdc::conformance::regression {
namespace {

using Json = nlohmann::ordered_json;

Fixture canonical(const std::string& name) {
  for (Fixture& f : canonical_fixtures())
    if (f.name == name) return f;
  throw std::invalid_argument(name);
}

std::unique_ptr<properties::Implementation> builtin(const char* name) {
  return builtin::make(builtin::find(name));
}

TEST(ExactValue, TerminatingDecimalsKeepEveryDigit) {
  EXPECT_EQ(decimal_text(reference::Rational(5, 2)), "2.5");
  EXPECT_EQ(decimal_text(reference::Rational(-40265319, 134217728)),
            "-0.300000004470348358154296875");
  EXPECT_EQ(decimal_text(reference::Rational(0)), "0");
  EXPECT_EQ(decimal_text(reference::Rational(1000)), "1000");
  reference::Rational tiny(1);
  for (int i = 0; i < 149; ++i) tiny /= 2;
  EXPECT_EQ(decimal_text(tiny),
            "1.40129846432481707092372958328991613128026194187651577175706828388979108268586060"
            "148663818836212158203125e-45");
  reference::Rational big(1);
  for (int i = 0; i < 70; ++i) big *= 2;
  EXPECT_EQ(decimal_text(big), "1.180591620717411303424e+21");
  EXPECT_TRUE(decimal_terminates(tiny));
}

TEST(ExactValue, OtherValuesRoundTo40SignificantDigits) {
  EXPECT_EQ(decimal_text(reference::Rational(1, 3)), "0.3333333333333333333333333333333333333333");
  EXPECT_EQ(decimal_text(reference::Rational(-2, 3)),
            "-0.6666666666666666666666666666666666666667");
  EXPECT_FALSE(decimal_terminates(reference::Rational(1, 3)));
  EXPECT_EQ(rational_text(reference::Rational(-6, 4)), "-3/2");
  EXPECT_EQ(rational_text(reference::Rational(3)), "3");
}

TEST(FixtureJson, WorkedExampleMatchesTheSpec) {
  const Fixture f = canonical("worked-example");
  EXPECT_EQ(f.outputs.loss.expected[0], 2.5f);
  EXPECT_EQ(f.outputs.grad_kernel.expected[0], 5.0f);
  EXPECT_EQ(f.outputs.grad_bias.expected[0], 3.0f);
  EXPECT_EQ(f.outputs.kernel.expected[0], 0.5f);
  EXPECT_EQ(f.outputs.bias.expected[0], -0.3f);
  EXPECT_EQ(f.step, 1);
  const std::string text = to_json_text(f);
  EXPECT_NE(text.find("\"lr\": {\n      \"shape\": [],\n      \"float32\": \"zczMPQ==\""),
            std::string::npos)
      << text;
}

TEST(FixtureJson, EveryCanonicalFixtureRoundTrips) {
  for (const Fixture& f : canonical_fixtures()) {
    const std::string text = to_json_text(f);
    const Fixture back = parse_fixture(text, f.name);
    EXPECT_EQ(to_json_text(back), text) << f.name;
    EXPECT_NO_THROW(verify_against_oracle(back, f.name));
  }
}

TEST(FixtureJson, CommittedCanonicalFilesAreUpToDate) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(SGDC_FIXTURES_DIR) / "canonical";
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".json";
  const auto list = canonical_fixtures();
  EXPECT_EQ(files, list.size()) << "regenerate with: sgd-conformance fixtures generate "
                                   "--canonical --out fixtures/canonical";
  for (const Fixture& f : list) {
    std::ifstream in(dir / (f.name + ".json"), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), to_json_text(f)) << f.name << " differs from canonical_fixtures()";
  }
}

TEST(Generate, SameOptionsSameBytes) {
  GenerateOptions o;
  o.seed = 7;
  o.count = 8;
  const auto a = generate_fixtures(o), b = generate_fixtures(o);
  ASSERT_EQ(a.size(), 8u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(to_json_text(a[i]), to_json_text(b[i]));
  // Fixture i does not depend on how many were asked for; another seed gives others.
  o.count = 3;
  const Fixture again = generate_fixtures(o)[2];
  EXPECT_EQ(again.inputs.x, a[2].inputs.x);
  EXPECT_EQ(again.inputs.kernel, a[2].inputs.kernel);
  EXPECT_EQ(again.inputs.lr, a[2].inputs.lr);
  o.seed = 8;
  EXPECT_NE(generate_fixtures(o)[0].inputs.x, a[0].inputs.x);
}

// --optimizer and --recipe: each optimizer in turn, every fixture inside the recipe and
// agreeing with the oracle, the same bytes for the same options; plain SGD's inputs as
// without them.
TEST(Generate, OptimizersAndRecipe) {
  using Kind = reference::Optimizer::Kind;
  GenerateOptions o;
  o.seed = 5;
  o.count = 9;
  o.magnitudes = Magnitudes::extreme;
  o.optimizers = {Kind::sgd, Kind::momentum, Kind::adam};
  const auto a = generate_fixtures(o);
  GenerateOptions plain = o;
  plain.optimizers.clear();
  const auto p = generate_fixtures(plain);
  int carried = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].inputs.optimizer.kind, o.optimizers[i % 3]) << i;
    EXPECT_NO_THROW(verify_against_oracle(parse_fixture(to_json_text(a[i]), "g.json"), "g.json"));
    carried += !a[i].inputs.fresh_state();
    if (i % 3 == 0) EXPECT_EQ(a[i].inputs.x, p[i].inputs.x) << "plain SGD drawn as before";
  }
  EXPECT_GT(carried, 0);
  const auto again = generate_fixtures(o);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(to_json_text(a[i]), to_json_text(again[i]));

  GenerateOptions r;
  r.count = 8;
  r.recipe.optimizers = {Kind::adam};
  r.recipe.ranges[0] = properties::ValueRange{3e-4f, 3e-4f};  // lr
  r.recipe.even_batches = true;
  r.recipe.bias_group = properties::DeclaredGroup{.weight_decay = {{0.0f, 0.0f}}};
  for (const Fixture& f : generate_fixtures(r)) {
    EXPECT_TRUE(r.recipe.admits(f.inputs)) << f.name;
    EXPECT_EQ(f.inputs.lr, 3e-4f);
    EXPECT_EQ(f.inputs.n % f.inputs.num_shards, 0) << f.name;
    ASSERT_TRUE(f.inputs.bias_group);
  }
  r.optimizers = {Kind::momentum};
  EXPECT_THROW(generate_fixtures(r), std::invalid_argument) << "outside the recipe's optimizers";
}

// `fixtures generate --param-dtype bfloat16 ...`: every fixture under the stages, version
// 2, agreeing with the oracle, passed by the step they describe.
TEST(Generate, PrecisionStages) {
  GenerateOptions o;
  o.seed = 3;
  o.count = 6;
  o.optimizers = {reference::Optimizer::Kind::sgd, reference::Optimizer::Kind::adam};
  o.arithmetic.stages = {.param = reference::formats::bfloat16};
  const auto bf16 = builtin("bf16-params");
  for (const Fixture& f : generate_fixtures(o)) {
    const std::string text = to_json_text(f);
    EXPECT_NE(text.find(R"("version": 2)"), std::string::npos) << f.name;
    const Fixture back = parse_fixture(text, "g.json");
    EXPECT_EQ(back.arithmetic, o.arithmetic) << f.name;
    EXPECT_NO_THROW(verify_against_oracle(back, "g.json"));
    EXPECT_TRUE(replay(back, *bf16).passed) << f.name;
  }
}

TEST(Generate, ShapeAndMagnitudeOptionsApply) {
  GenerateOptions o;
  o.count = 4;
  o.n = 5;
  o.d = 2;
  o.k = 3;
  o.magnitudes = Magnitudes::extreme;
  for (const Fixture& f : generate_fixtures(o)) {
    EXPECT_EQ(f.inputs.n, 5);
    EXPECT_EQ(f.inputs.d, 2);
    EXPECT_EQ(f.inputs.k, 3);
    EXPECT_EQ(f.provenance.parameters["case_magnitudes"], "extreme");
  }
}

// Mutates a fixture's JSON and expects a malformed-fixture error.
void expect_malformed(const Fixture& base, const std::function<void(Json&)>& mutate,
                      const std::string& field, const std::string& reason) {
  Json j = Json::parse(to_json_text(base));
  mutate(j);
  try {
    parse_fixture(j.dump(), "x.json");
    ADD_FAILURE() << "accepted; expected an error at " << field;
  } catch (const FixtureError& e) {
    EXPECT_EQ(e.kind(), FixtureError::Kind::malformed);
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.reason().find(reason), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("x.json: " + field + ": ", 0), 0u) << e.what();
  }
}

// The same for a canonical fixture, by name.
void expect_malformed(const char* base, const std::function<void(Json&)>& mutate,
                      const std::string& field, const std::string& reason) {
  expect_malformed(canonical(base), mutate, field, reason);
}

TEST(Validation, MalformedFixturesNameFileFieldAndReason) {
  expect_malformed(
      "uneven-shards",
      [](Json& j) {
        j["outputs"]["kernel"]["expected"] = protocol::encode_floats(std::vector<float>(5, 1.0f));
      },
      "outputs.kernel.expected", "5 values, expected 6");
  expect_malformed(
      "worked-example", [](Json& j) { j["outputs"].erase("bias"); }, "outputs.bias",
      "required field is missing");
  expect_malformed(
      "worked-example", [](Json& j) { j["version"] = 3; }, "version",
      "version 3 is not supported (this reader knows versions 1 to 2)");
  expect_malformed(
      "momentum-bias-group", [](Json& j) { j["version"] = 1; }, "inputs.bias_group",
      "a version 2 field in a version 1 fixture");
  expect_malformed(
      "momentum-bias-group", [](Json& j) { j["inputs"]["bias_group"] = Json::object(); },
      "inputs.bias_group", "declares neither lr nor weight_decay");
  expect_malformed(
      "momentum-bias-group", [](Json& j) { j["inputs"]["bias_group"]["wd"] = 0; },
      "inputs.bias_group.wd", "unknown field");
  expect_malformed(
      "momentum-bias-group", [](Json& j) { j["inputs"]["bias_group"]["lr"]["decimal"][0] = "0.5"; },
      "inputs.bias_group.lr.decimal[0]", "the bits say 0.25");

  expect_malformed(
      "momentum-clipped-torch", [](Json& j) { j["version"] = 1; }, "inputs.clip",
      "a version 2 field in a version 1 fixture");
  expect_malformed(
      "momentum-clipped-torch", [](Json& j) { j["inputs"]["clip"].erase("eps"); },
      "inputs.clip.eps", "required field is missing");
  expect_malformed(
      "momentum-clipped-torch", [](Json& j) { j["inputs"]["clip"]["norm_type"] = 2; },
      "inputs.clip.norm_type", "unknown field");
  expect_malformed(
      "momentum-clipped-torch",
      [](Json& j) {
        j["inputs"]["clip"]["max_norm"]["float32"] =
            protocol::encode_floats(std::vector<float>{0.0f});
        j["inputs"]["clip"]["max_norm"]["decimal"][0] = "0";
      },
      "inputs.clip.max_norm", "is not a finite normal float32 > 0");
  expect_malformed(
      "momentum-clipped-torch",
      [](Json& j) {
        j["inputs"]["clip"]["eps"]["float32"] = protocol::encode_floats(std::vector<float>{-1e-6f});
        j["inputs"]["clip"]["eps"]["decimal"][0] = "-9.99999997e-07";
      },
      "inputs.clip.eps", "is neither 0 nor a finite normal float32 > 0");
  expect_malformed(
      "momentum-clipped-torch",
      [](Json& j) { j["inputs"]["clip"]["max_norm"]["decimal"][0] = "0.25"; },
      "inputs.clip.max_norm.decimal[0]", "the bits say 0.5");

  expect_malformed(
      "worked-example", [](Json& j) { j["inputs"]["lr"]["float32"] = "zczMPQ="; },
      "inputs.lr.float32", "multiple of 4");
  expect_malformed(
      "worked-example", [](Json& j) { j["inputs"]["x"]["decimal"][1] = "2.5"; },
      "inputs.x.decimal[1]", "the bits say 2");
  expect_malformed(
      "worked-example",
      [](Json& j) {
        j["inputs"]["kernel"]["shape"] = {2, 1};
      },
      "inputs.kernel.shape", "expected [1, 1]");
  expect_malformed(
      "worked-example", [](Json& j) { j["inputs"]["n"] = "2"; }, "inputs.n",
      "expected an integer, got a string");
  expect_malformed(
      "worked-example", [](Json& j) { j["outputs"]["loss"]["bound"][0] = -1.0; },
      "outputs.loss.bound[0]", "not a bound");
  expect_malformed(
      "worked-example", [](Json& j) { j["outputs"]["loss"]["exact"][0] = "2,5"; },
      "outputs.loss.exact[0]", "not a decimal");
  expect_malformed(
      "worked-example", [](Json& j) { j["outputs"]["kernel"]["may_overflow"] = {1}; },
      "outputs.kernel.may_overflow[0]", "outside 0 .. 0");
  expect_malformed(
      "worked-example", [](Json& j) { j["provenence"] = Json::object(); }, "provenence",
      "unknown field");
  expect_malformed(
      "worked-example", [](Json& j) { j["property"] = "acuracy"; }, "property",
      "no property named");
}

// A fixture derived under a declared compute format keeps it: its bounds are that
// format's, it reads back the same, and the format's own steps pass it on replay.
TEST(FixtureJson, ComputeFormatIsKeptAndDrivesTheBounds) {
  const Fixture plain = canonical("worked-example");
  const reference::ErrorModel tf32{.u = reference::formats::tf32.unit_roundoff(),
                                   .format = reference::formats::tf32};
  const Fixture f =
      derive_fixture("tf32", "the worked example under TF32", plain.inputs, plain.provenance, tf32);
  const std::string text = to_json_text(f);
  EXPECT_NE(text.find(R"("compute_format": "tf32")"), std::string::npos) << text;
  const Fixture back = parse_fixture(text, "tf32.json");
  EXPECT_EQ(back.arithmetic.format, reference::formats::tf32);
  EXPECT_NO_THROW(verify_against_oracle(back, "tf32.json"));
  EXPECT_GT(f.outputs.kernel.bound[0], 100 * plain.outputs.kernel.bound[0]);
  EXPECT_TRUE(replay(back, *builtin("tf32-matmul")).passed);

  Fixture custom = f;
  custom.arithmetic.format = {12, -30, 30};
  custom.arithmetic.u = custom.arithmetic.format.unit_roundoff();
  custom = derive_fixture("custom", "a custom format", plain.inputs, plain.provenance,
                          custom.arithmetic);
  EXPECT_EQ(parse_fixture(to_json_text(custom), "custom.json").arithmetic.format,
            (reference::Format{12, -30, 30}));
}

TEST(Validation, MalformedComputeFormatIsNamed) {
  expect_malformed(
      "worked-example", [](Json& j) { j["arithmetic"]["compute_format"] = "fp8"; },
      "arithmetic.compute_format", "\"fp8\" is not");
  expect_malformed(
      "worked-example",
      [](Json& j) {
        j["arithmetic"]["compute_format"] = {{"fraction_bits", 10}, {"min_exponent", -14}};
      },
      "arithmetic.compute_format.max_exponent", "required field is missing");
  expect_malformed(
      "worked-example",
      [](Json& j) {
        j["arithmetic"]["compute_format"] = {
            {"fraction_bits", 30}, {"min_exponent", -14}, {"max_exponent", 15}};
      },
      "arithmetic.compute_format.fraction_bits", "outside 1 .. 23");
  expect_malformed(
      "worked-example",
      [](Json& j) {
        j["arithmetic"]["compute_format"] = {
            {"fraction_bits", 10}, {"min_exponent", 15}, {"max_exponent", 15}};
      },
      "arithmetic.compute_format", "min_exponent < max_exponent");
}

// Precision stages (format version 2): kept, driving the expectations, the nearest wrong
// stages rejected on replay; every malformed stage named.
TEST(FixtureJson, PrecisionStagesAreKeptAndDriveTheExpectations) {
  const Fixture f = canonical("momentum-bf16-params");
  EXPECT_EQ(f.arithmetic.stages, (reference::Stages{.param = reference::formats::bfloat16}));
  const std::string text = to_json_text(f);
  EXPECT_NE(text.find(R"("param_dtype": "bfloat16")"), std::string::npos) << text;
  EXPECT_EQ(text.find("exact_rational"), std::string::npos) << text;
  const Fixture back = parse_fixture(text, "staged.json");
  EXPECT_EQ(back.arithmetic, f.arithmetic);
  EXPECT_NO_THROW(verify_against_oracle(back, "staged.json"));
  EXPECT_TRUE(replay(back, *builtin("bf16-params")).passed);
  for (const char* wrong :
       {"bf16-reduce-undeclared", "bf16-master-undeclared", "bf16-params-not-applied"})
    EXPECT_FALSE(replay(back, *builtin(wrong)).passed) << wrong;
  // Judged under a float32 implementation's own arithmetic, the same inputs pass.
  EXPECT_TRUE(replay(back, *builtin("float32")).passed);
}

TEST(Validation, MalformedPrecisionIsNamed) {
  expect_malformed(
      "momentum-bf16-params", [](Json& j) { j["version"] = 1; }, "arithmetic.precision",
      "a version 2 field in a version 1 fixture");
  expect_malformed(
      "momentum-bf16-params", [](Json& j) { j["arithmetic"]["precision"].erase("master_dtype"); },
      "arithmetic.precision.master_dtype", "required field is missing");
  expect_malformed(
      "momentum-bf16-params", [](Json& j) { j["arithmetic"]["precision"]["output_dtype"] = "x"; },
      "arithmetic.precision.output_dtype", "unknown field");
  expect_malformed(
      "momentum-bf16-params", [](Json& j) { j["arithmetic"]["precision"]["reduce_dtype"] = "fp8"; },
      "arithmetic.precision.reduce_dtype", "\"fp8\" is not");
  expect_malformed(
      "momentum-bf16-params",
      [](Json& j) {
        j["arithmetic"]["precision"]["param_dtype"] = "float32";
        j["arithmetic"]["precision"]["reduce_dtype"] = "bfloat16";
      },
      "arithmetic.precision", "param_dtype float32 with reduce_dtype bfloat16");
  expect_malformed(
      "momentum-bf16-params",
      [](Json& j) {
        j["arithmetic"]["precision"] = {
            {"param_dtype", "float32"}, {"reduce_dtype", "float32"}, {"master_dtype", "float32"}};
      },
      "arithmetic.precision", "every stage float32");
  expect_malformed(
      "momentum-bf16-params", [](Json& j) { j["arithmetic"]["compute_format"] = "tf32"; },
      "arithmetic.precision", "declare one");
}

TEST(Validation, NotJsonIsMalformed) {
  try {
    parse_fixture("{\"format\": ", "broken.json");
    ADD_FAILURE();
  } catch (const FixtureError& e) {
    EXPECT_EQ(e.kind(), FixtureError::Kind::malformed);
    EXPECT_NE(std::string(e.what()).find("broken.json: not JSON"), std::string::npos);
  }
}

// A well-formed fixture whose stored expectation is not the oracle's.
void expect_corrupt(const std::function<void(Fixture&)>& mutate, const std::string& field,
                    const char* base = "uneven-shards") {
  Fixture f = canonical(base);
  mutate(f);
  try {
    verify_against_oracle(parse_fixture(to_json_text(f), "c.json"), "c.json");
    ADD_FAILURE() << "accepted; expected corruption at " << field;
  } catch (const FixtureError& e) {
    EXPECT_EQ(e.kind(), FixtureError::Kind::corrupt);
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("corrupt fixture: c.json: " + field, 0), 0u);
  }
}

// A bias group's outputs are the oracle's for the group: a fixture whose group was
// dropped, or whose bias outputs are the kernel group's, is corrupt.
TEST(Validation, ABiasGroupsOutputsAreTheGroups) {
  expect_corrupt([](Fixture& f) { f.inputs.bias_group->lr.reset(); }, "outputs.bias.expected[0]",
                 "momentum-bias-group");
  expect_corrupt(
      [](Fixture& f) {
        Fixture without = f;
        without.inputs.bias_group.reset();
        f.outputs.bias = derive_fixture("x", "", without.inputs, f.provenance).outputs.bias;
      },
      "outputs.bias.expected[0]", "momentum-bias-group");
}

// A clipped fixture's outputs are the oracle's for its clipping: the same fixture with
// another max_norm, or without clipping, is corrupt; the loss and gradients do not read it.
TEST(Validation, AClippedFixturesOutputsAreTheClippedStep) {
  expect_corrupt([](Fixture& f) { f.inputs.clip->max_norm = 0.25f; }, "outputs.kernel.expected[0]",
                 "momentum-clipped-torch");
  expect_corrupt([](Fixture& f) { f.inputs.clip->eps = 0.0f; }, "outputs.kernel.exact[0]",
                 "momentum-clipped-torch");
  expect_corrupt(
      [](Fixture& f) {
        Fixture without = f;
        without.inputs.clip.reset();
        f.outputs.kernel = derive_fixture("x", "", without.inputs, f.provenance).outputs.kernel;
        f.outputs.kernel.exact_rational.clear();  // as a clipped fixture holds it
      },
      "outputs.kernel.expected[0]", "momentum-clipped-torch");
}

// A counter beyond what a fixture holds is refused by the writer, naming the field,
// rather than written to a file no reader takes.
TEST(Validation, ACounterBeyondTheFormatIsNotWritten) {
  Fixture f = canonical("worked-example");
  f.inputs.step = max_fixture_step;
  try {
    to_json_text(f);
    ADD_FAILURE() << "a step of 2^53 - 1 was written";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("inputs.step: 9007199254740991 is beyond", 0), 0u)
        << e.what();
  }
  f.inputs.step = max_fixture_step - 1;
  EXPECT_NO_THROW(to_json_text(f));
}

TEST(Validation, DisagreementWithTheOracleIsCorruption) {
  expect_corrupt(
      [](Fixture& f) {
        f.outputs.kernel.expected[3] = std::nextafter(f.outputs.kernel.expected[3], 9.f);
      },
      "outputs.kernel.expected[3]");
  expect_corrupt([](Fixture& f) { f.outputs.loss.bound[0] *= 2; }, "outputs.loss.bound[0]");
  expect_corrupt([](Fixture& f) { f.outputs.grad_bias.exact_rational[1] = "1/3"; },
                 "outputs.grad_bias.exact_rational[1]");
  expect_corrupt([](Fixture& f) { f.outputs.bias.may_overflow = {0}; },
                 "outputs.bias.may_overflow");
  expect_corrupt([](Fixture& f) { f.step += 1; }, "outputs.step");
  // The inputs are authoritative: changing one makes every expectation stale.
  expect_corrupt([](Fixture& f) { f.inputs.lr = 0.5f; }, "outputs.kernel.expected[0]");
}

TEST(Replay, ConformingBuiltinsPassAndMutantsFail) {
  for (const char* name :
       {"float32", "sequential", "pairwise", "sharded", "float64", "fma-update", "scale-first"}) {
    auto impl = builtin(name);
    for (const Fixture& f : canonical_fixtures()) {
      const ReplayOutcome r = replay(f, *impl);
      EXPECT_TRUE(r.passed) << name << " on " << f.name << ": "
                            << (r.failures.empty() ? "" : r.failures[0]);
    }
  }
  auto wrong_sign = builtin("wrong-sign");
  const ReplayOutcome r = replay(canonical("worked-example"), *wrong_sign);
  EXPECT_FALSE(r.passed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_EQ(r.failures[0].rfind("kernel[0]: got 1.5", 0), 0u) << r.failures[0];
}

// A refusal replays as the suite judges it: accepted where an output may overflow (torch
// raises where Adam's step size passes float32's range), a failure on a finite fixture
// that cannot overflow.
TEST(Replay, ARefusalPassesOnlyWhereTheStepMayOverflow) {
  const properties::Declaration d = builtin("adam-torch")->declaration();
  const properties::StepOutcome refused{
      .result = std::nullopt,
      .rejection = "RuntimeError: value cannot be converted to type float without overflow"};
  EXPECT_TRUE(judge_replay(canonical("adam-step-size-overflows"), refused, d).passed);
  const ReplayOutcome r = judge_replay(canonical("adamw-carried-state"), refused, d);
  EXPECT_FALSE(r.passed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_EQ(r.failures[0].rfind("rejected a case with finite inputs that cannot overflow", 0), 0u)
      << r.failures[0];
}

// Flushes subnormal outputs to zero, declaring `declared`.
class Flushing : public properties::Implementation {
 public:
  explicit Flushing(reference::Subnormals declared) : inner_(builtin("float32")) {
    decl_ = inner_->declaration();
    decl_.arithmetic.subnormals = declared;
  }
  const properties::Declaration& declaration() const override { return decl_; }
  properties::StepOutcome step(const reference::Case& c) override {
    properties::StepOutcome out = inner_->step(c);
    auto flush = [](std::vector<float>& v) {
      for (float& f : v)
        if (std::fpclassify(f) == FP_SUBNORMAL) f = 0.0f;
    };
    flush(out.result->kernel);
    flush(out.result->bias);
    flush(out.result->grad_kernel);
    flush(out.result->grad_bias);
    return out;
  }

 private:
  std::unique_ptr<properties::Implementation> inner_;
  properties::Declaration decl_;
};

TEST(Replay, JudgedWithTheBoundOfTheDeclaredArithmetic) {
  const Fixture f = canonical("subnormal-outputs");
  Flushing honest(reference::Subnormals::flush_to_zero), dishonest(reference::Subnormals::ieee);
  EXPECT_TRUE(replay(f, honest).passed);
  EXPECT_FALSE(replay(f, dishonest).passed);
}

TEST(Counterexample, CapturedFailuresFailAgainOnReplay) {
  auto mutant = builtin("mean-over-batch");
  properties::RunOptions options;
  options.seed = 1;
  const properties::PropertyReport report =
      properties::run_property(properties::find_property("accuracy"), *mutant, options);
  ASSERT_TRUE(report.counterexample);
  const Fixture f = counterexample_fixture("accuracy", *report.counterexample,
                                           mutant->declaration(), options.seed);
  EXPECT_EQ(f.name, counterexample_name("accuracy", *report.counterexample, mutant->declaration(),
                                        options.seed));
  EXPECT_EQ(f.name.rfind("builtin-mean-over-batch.accuracy.seed-1.case-", 0), 0u) << f.name;
  const Fixture back = parse_fixture(to_json_text(f), f.name);
  verify_against_oracle(back, f.name);
  EXPECT_EQ(back.property, "accuracy");
  EXPECT_FALSE(replay(back, *mutant).passed);
  auto reference = builtin("float32");
  EXPECT_TRUE(replay(back, *reference).passed);
}

TEST(Counterexample, PropertyOnlyFailuresReplayThroughTheProperty) {
  // Every output is right; only the counter is wrong, which the step_counter property
  // checks through its own rule.
  auto mutant = builtin("step-not-advanced");
  properties::RunOptions options;
  options.seed = 1;
  const properties::PropertyReport report =
      properties::run_property(properties::find_property("step_counter"), *mutant, options);
  ASSERT_TRUE(report.counterexample);
  const Fixture f = counterexample_fixture("step_counter", *report.counterexample,
                                           mutant->declaration(), options.seed);
  const ReplayOutcome r = replay(f, *mutant);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failures.back().find("step_counter: "), std::string::npos) << r.failures.back();
}

// --- SGD with momentum: inputs.optimizer, the buffers in inputs and outputs ---

// The worked example as a Nesterov momentum step with coupled decay and a buffer (the
// protocol's step-momentum example), or in fresh state.
reference::Case momentum_inputs(bool fresh = false) {
  reference::Case c = reference::worked_example();
  c.optimizer.kind = reference::Optimizer::Kind::momentum;
  c.optimizer.momentum = 0.5f;
  c.optimizer.nesterov = true;
  c.optimizer.weight_decay = 0.25f;
  if (!fresh) {
    c.momentum_kernel = {1.0f};
    c.momentum_bias = {2.0f};
  }
  return c;
}

Fixture momentum_fixture(const reference::Case& c = momentum_inputs()) {
  Provenance p;
  p.generator_version = "test";
  p.mode = "generate";
  return derive_fixture("momentum", "a momentum step", c, p);
}

// `{"shape": [], "float32": ..., "decimal": [...]}` of one float32.
Json scalar_json(float v) {
  char decimal[64];
  const auto end = std::to_chars(decimal, decimal + sizeof decimal, v).ptr;
  return Json{{"shape", Json::array()},
              {"float32", protocol::encode_floats(std::vector<float>{v})},
              {"decimal", Json::array({std::string(decimal, end)})}};
}

TEST(Momentum, FixturesRoundTripAndAgreeWithTheOracle) {
  for (const bool fresh : {false, true}) {
    reference::Case c = momentum_inputs(fresh);
    for (const auto decay :
         {reference::Optimizer::Decay::coupled, reference::Optimizer::Decay::decoupled}) {
      c.optimizer.decay = decay;
      const Fixture f = momentum_fixture(c);
      const std::string text = to_json_text(f);
      const Fixture back = parse_fixture(text, "m.json");
      EXPECT_EQ(to_json_text(back), text);
      EXPECT_EQ(back.inputs.optimizer, c.optimizer);
      EXPECT_EQ(back.inputs.momentum_kernel, c.momentum_kernel);
      EXPECT_EQ(back.inputs.momentum_bias, c.momentum_bias);
      EXPECT_EQ(back.outputs.momentum_kernel.expected.size(), 1u);
      EXPECT_EQ(back.outputs.momentum_bias.expected.size(), 1u);
      EXPECT_NO_THROW(verify_against_oracle(back, "m.json"));
      EXPECT_EQ(Json::parse(text)["inputs"].contains("momentum_kernel"), !fresh);
    }
  }
}

TEST(Momentum, HyperparametersAsTheSpecAllows) {
  // 0 and any normal float32, negative too (docs/spec/step.md), load and agree with the
  // oracle.
  for (const float v : {0.0f, -0.0f, 0x1p-126f, -0x1p-126f, -0.5f, 3.0f, 0x1.fffffep127f}) {
    reference::Case c = momentum_inputs();
    c.optimizer.nesterov = false;
    c.optimizer.dampening = v;
    const Fixture f = momentum_fixture(c);
    const Fixture back = parse_fixture(to_json_text(f), "h.json");
    EXPECT_TRUE(reference::same_bits(back.inputs.optimizer.dampening, v)) << v;
    EXPECT_NO_THROW(verify_against_oracle(back, "h.json")) << v;
  }
}

TEST(Momentum, MalformedOptimizerNamesTheField) {
  const Fixture f = momentum_fixture();
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["kind"] = "adam"; }, "inputs.optimizer.kind",
      "\"adam\" is a version 2 kind in a version 1 fixture");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["kind"] = "sgd"; }, "inputs.optimizer.kind",
      "\"sgd\" is not one of \"momentum\", \"adam\", \"adagrad\" (plain SGD has no "
      "inputs.optimizer)");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["kind"] = "lamb"; }, "inputs.optimizer.kind",
      "\"lamb\" is not one of");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["kind"] = 1; }, "inputs.optimizer.kind",
      "expected a string, got an integer");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"] = "momentum"; }, "inputs.optimizer",
      "expected an object, got a string");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"].erase("decay"); }, "inputs.optimizer.decay",
      "required field is missing");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"].erase("momentum"); }, "inputs.optimizer.momentum",
      "required field is missing");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["lars"] = true; }, "inputs.optimizer.lars",
      "unknown field");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["decay"] = "l2"; }, "inputs.optimizer.decay",
      "\"l2\" is neither \"coupled\" nor \"decoupled\"");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["decay"] = nullptr; }, "inputs.optimizer.decay",
      "expected a string, got null");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["nesterov"] = "yes"; }, "inputs.optimizer.nesterov",
      "expected true or false, got a string");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["nesterov"] = 1; }, "inputs.optimizer.nesterov",
      "expected true or false, got an integer");
  for (const char* key : {"momentum", "dampening", "weight_decay"}) {
    const std::string path = std::string("inputs.optimizer.") + key;
    expect_malformed(
        f, [&](Json& j) { j["inputs"]["optimizer"][key] = 0.5; }, path,
        "expected an object, got a number");
    expect_malformed(
        f, [&](Json& j) { j["inputs"]["optimizer"][key]["shape"] = {1}; }, path + ".shape",
        "[1], expected [] (a scalar)");
    expect_malformed(
        f,
        [&](Json& j) {
          j["inputs"]["optimizer"][key]["float32"] =
              protocol::encode_floats(std::vector<float>{0.5f, 0.5f});
        },
        path + ".float32", "2 values, expected 1");
    expect_malformed(
        f, [&](Json& j) { j["inputs"]["optimizer"][key]["float32"] = "NaN"; }, path + ".float32",
        "multiple of 4");
    expect_malformed(
        f, [&](Json& j) { j["inputs"]["optimizer"][key]["decimal"] = {"0.75"}; },
        path + ".decimal[0]", "\"0.75\" reads as 0.75");
    expect_malformed(
        f, [&](Json& j) { j["inputs"]["optimizer"][key]["decimal"] = Json::array(); },
        path + ".decimal", "0 values, expected 1");
    // Neither 0 nor a normal float32 (docs/spec/step.md): subnormal or not finite.
    expect_malformed(
        f, [&](Json& j) { j["inputs"]["optimizer"][key] = scalar_json(-0x1p-140f); },
        path + ".float32",
        "-7.17464814e-43 (-0x1p-140) is subnormal; a hyperparameter is 0 or a normal float32");
    expect_malformed(
        f,
        [&](Json& j) {
          j["inputs"]["optimizer"][key] = scalar_json(std::numeric_limits<float>::quiet_NaN());
        },
        path + ".float32", "NaN (bits 0x7fc00000) is not finite; a hyperparameter is 0");
    expect_malformed(
        f,
        [&](Json& j) {
          j["inputs"]["optimizer"][key] = scalar_json(-std::numeric_limits<float>::infinity());
        },
        path + ".float32", "-infinity is not finite; a hyperparameter is 0");
  }
}

// A fixture of a step whose parameters go through a square root (Adam, Adagrad), written,
// read back and checked against the oracle: version 2, the parameters without
// exact_rational and the second moment with it, the decided decimal rounding to the
// expected float32. Returns the fixture read back and whether the kernel's exact value
// has 40 significant digits (does not terminate).
std::pair<Fixture, bool> root_fixture_round_trip(const reference::Case& c, const char* file) {
  const std::string text = to_json_text(momentum_fixture(c));
  const Json j = Json::parse(text);
  EXPECT_EQ(j["version"], 2);
  EXPECT_FALSE(j["outputs"]["kernel"].contains("exact_rational"));
  EXPECT_TRUE(j["outputs"]["second_moment_kernel"].contains("exact_rational"));
  const std::string exact = j["outputs"]["kernel"]["exact"][0];
  Fixture back = parse_fixture(text, file);
  EXPECT_EQ(to_json_text(back), text);
  EXPECT_EQ(back.inputs.optimizer, c.optimizer);
  EXPECT_EQ(back.inputs.second_moment_kernel, c.second_moment_kernel);
  EXPECT_NO_THROW(verify_against_oracle(back, file));
  // The decided decimal and the correctly rounded float32 agree.
  EXPECT_EQ(static_cast<float>(std::stod(exact)), back.outputs.kernel.expected[0]) << exact;
  return {std::move(back), std::count_if(exact.begin(), exact.end(), ::isdigit) >= 40};
}

// Adam (format version 2): the parameters' exact values are decimals the enclosure
// decides, without exact_rational; the moments are rational as before. Round trip,
// agreement with the oracle, and the faults named.
TEST(Adam, FixturesRoundTripAndAgreeWithTheOracle) {
  int irrational = 0;
  for (const bool fresh : {false, true}) {
    for (const auto decay :
         {reference::Optimizer::Decay::coupled, reference::Optimizer::Decay::decoupled}) {
      reference::Case c = momentum_inputs(fresh);
      c.optimizer = {};
      c.optimizer.kind = reference::Optimizer::Kind::adam;
      c.optimizer.b1 = 0.875f;
      c.optimizer.b2 = 0.9375f;
      c.optimizer.eps = 0x1p-10f;
      c.optimizer.eps_root = fresh ? 0x1p-20f : 0.0f;
      c.optimizer.weight_decay = 0.125f;
      c.optimizer.decay = decay;
      if (!fresh) c.second_moment_kernel = {0.25f}, c.second_moment_bias = {0.5f};
      irrational += root_fixture_round_trip(c, "a.json").second;
    }
  }
  EXPECT_GT(irrational, 0);
  reference::Case c = momentum_inputs(false);
  c.optimizer = {};
  c.optimizer.kind = reference::Optimizer::Kind::adam;
  c.optimizer.b1 = 0.875f;
  c.optimizer.b2 = 0.9375f;
  c.optimizer.eps = 0x1p-10f;
  c.second_moment_kernel = {0.25f};
  c.second_moment_bias = {0.5f};
  const Fixture f = momentum_fixture(c);
  expect_malformed(
      f, [](Json& j) { j["version"] = 1; }, "inputs.optimizer.kind",
      "\"adam\" is a version 2 kind in a version 1 fixture");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"].erase("b2"); }, "inputs.optimizer.b2",
      "required field is missing");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"]["nesterov"] = true; }, "inputs.optimizer.nesterov",
      "unknown field");
  expect_malformed(
      f, [](Json& j) { j["inputs"].erase("second_moment_bias"); }, "inputs.second_moment_bias",
      "required field is missing");
  expect_malformed(
      f, [](Json& j) { j["outputs"]["kernel"]["exact_rational"] = {"1"}; },
      "outputs.kernel.exact_rational", "unknown field");
  expect_malformed(
      f, [](Json& j) { j["outputs"]["second_moment_bias"].erase("exact_rational"); },
      "outputs.second_moment_bias.exact_rational", "required field is missing");
  Fixture wrong = f;
  wrong.outputs.kernel.exact[0] = "0.5";
  try {
    verify_against_oracle(wrong, "a.json");
    ADD_FAILURE() << "a wrong decided decimal was accepted";
  } catch (const FixtureError& e) {
    EXPECT_EQ(e.field(), "outputs.kernel.exact[0]") << e.what();
  }
}

// Adagrad (format version 2): the sum of squares is its state, carried as the second
// moment; its parameters, through a square root, are decimals the enclosure decides.
// Both eps conventions (torch outside the root, optax inside), both decay conventions,
// fresh (from initial_accumulator_value) and carried sums.
reference::Case adagrad_inputs(bool fresh, bool optax) {
  reference::Case c = reference::worked_example();
  c.optimizer.kind = reference::Optimizer::Kind::adagrad;
  (optax ? c.optimizer.eps_root : c.optimizer.eps) = 0x1p-10f;
  c.optimizer.initial_accumulator_value = optax ? 0.1f : 0.0f;
  c.optimizer.weight_decay = 0.125f;
  if (!fresh) c.second_moment_kernel = {0.25f}, c.second_moment_bias = {0.5f};
  return c;
}

TEST(Adagrad, FixturesRoundTripAndAgreeWithTheOracle) {
  int irrational = 0;
  for (const bool fresh : {false, true}) {
    for (const bool optax : {false, true}) {
      for (const auto decay :
           {reference::Optimizer::Decay::coupled, reference::Optimizer::Decay::decoupled}) {
        reference::Case c = adagrad_inputs(fresh, optax);
        c.optimizer.decay = decay;
        const Json j = Json::parse(to_json_text(momentum_fixture(c)));
        EXPECT_EQ(j["inputs"]["optimizer"]["kind"], "adagrad");
        EXPECT_TRUE(j["inputs"]["optimizer"].contains("initial_accumulator_value"));
        EXPECT_FALSE(j["outputs"].contains("momentum_kernel"));
        EXPECT_EQ(j["inputs"].contains("second_moment_kernel"), !fresh);
        const auto [back, digits40] = root_fixture_round_trip(c, "g.json");
        irrational += digits40;
        // The sum after the step, exactly: the initial value or the carried sum, plus
        // the square of the (coupled: decayed) gradient; worked example gW = 5, W = 1.
        const double ge = decay == reference::Optimizer::Decay::coupled ? 5.125 : 5.0;
        const double before = fresh ? static_cast<double>(0.1f) * optax : 0.25;
        EXPECT_EQ(std::stod(back.outputs.second_moment_kernel.exact[0]), before + ge * ge)
            << back.outputs.second_moment_kernel.exact[0];
      }
    }
  }
  EXPECT_GT(irrational, 0);
}

TEST(Adagrad, MalformedAdagradNamesTheField) {
  const Fixture f = momentum_fixture(adagrad_inputs(false, false));
  expect_malformed(
      f, [](Json& j) { j["version"] = 1; }, "inputs.optimizer.kind",
      "\"adagrad\" is a version 2 kind in a version 1 fixture");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["optimizer"].erase("initial_accumulator_value"); },
      "inputs.optimizer.initial_accumulator_value", "required field is missing");
  for (const char* foreign : {"b1", "momentum", "nesterov"})
    expect_malformed(
        f, [&](Json& j) { j["inputs"]["optimizer"][foreign] = j["inputs"]["optimizer"]["eps"]; },
        std::string("inputs.optimizer.") + foreign, "unknown field");
  expect_malformed(
      f,
      [](Json& j) {
        j["inputs"]["optimizer"]["initial_accumulator_value"] = scalar_json(0x1p-130f);
      },
      "inputs.optimizer.initial_accumulator_value.float32",
      "is subnormal; a hyperparameter is 0 or a normal float32");
  // Adagrad keeps no momentum buffer; its sum comes whole.
  expect_malformed(
      f, [](Json& j) { j["inputs"]["momentum_kernel"] = j["inputs"]["second_moment_kernel"]; },
      "inputs.momentum_kernel", "the optimizer \"adagrad\" keeps no momentum buffer");
  expect_malformed(
      f, [](Json& j) { j["inputs"].erase("second_moment_bias"); }, "inputs.second_moment_bias",
      "required field is missing: the optimizer state comes whole");
  expect_malformed(
      f, [](Json& j) { j["outputs"]["kernel"]["exact_rational"] = {"1"}; },
      "outputs.kernel.exact_rational", "unknown field");
  expect_malformed(
      f, [](Json& j) { j["outputs"]["momentum_kernel"] = j["outputs"]["second_moment_kernel"]; },
      "outputs.momentum_kernel", "unknown field");
  expect_malformed(
      f, [](Json& j) { j["outputs"].erase("second_moment_kernel"); },
      "outputs.second_moment_kernel", "required field is missing");
  // A momentum step's fixture given a sum: plain SGD and momentum keep no second moment.
  expect_malformed(
      momentum_fixture(),
      [](Json& j) { j["inputs"]["second_moment_kernel"] = j["inputs"]["momentum_kernel"]; },
      "inputs.second_moment_kernel", "the optimizer \"momentum\" keeps no second moment");
  // A sum the oracle does not derive, and a parameter digit it does not decide.
  Fixture wrong = f;
  wrong.outputs.second_moment_bias.exact_rational[0] = "1/3";
  EXPECT_THROW(verify_against_oracle(wrong, "g.json"), FixtureError);
  wrong = f;
  wrong.outputs.bias.exact[0] = "0.5";
  try {
    verify_against_oracle(wrong, "g.json");
    ADD_FAILURE() << "a wrong decided decimal was accepted";
  } catch (const FixtureError& e) {
    EXPECT_EQ(e.field(), "outputs.bias.exact[0]") << e.what();
  }
}

TEST(Momentum, NonFiniteBufferElementsAreInputs) {
  // Like a NaN or infinite parameter, a non-finite buffer element is an input whose
  // outputs are due non-finite; the others are checked as usual.
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
    reference::Case c = momentum_inputs();
    c.momentum_kernel = {bad};
    const Fixture f = momentum_fixture(c);
    EXPECT_EQ(f.outputs.kernel.must_be_nonfinite, std::vector<std::size_t>{0});
    EXPECT_EQ(f.outputs.momentum_kernel.must_be_nonfinite, std::vector<std::size_t>{0});
    EXPECT_TRUE(f.outputs.bias.must_be_nonfinite.empty());
    EXPECT_TRUE(f.outputs.loss.must_be_nonfinite.empty());
    const Fixture back = parse_fixture(to_json_text(f), "n.json");
    EXPECT_TRUE(reference::same_bits(back.inputs.momentum_kernel.at(0), bad));
    EXPECT_NO_THROW(verify_against_oracle(back, "n.json"));
    EXPECT_TRUE(replay(back, *builtin("float32")).passed);
  }
}

TEST(Momentum, MalformedBuffersNameTheField) {
  const Fixture f = momentum_fixture();
  expect_malformed(
      f, [](Json& j) { j["inputs"].erase("optimizer"); }, "inputs.momentum_kernel",
      "plain SGD keeps no momentum buffer");
  expect_malformed(
      f,
      [](Json& j) {
        j["inputs"].erase("optimizer");
        j["inputs"].erase("momentum_kernel");
      },
      "inputs.momentum_bias", "plain SGD keeps no momentum buffer");
  expect_malformed(
      f, [](Json& j) { j["inputs"].erase("momentum_bias"); }, "inputs.momentum_bias",
      "the optimizer state comes whole (inputs.momentum_kernel is present)");
  expect_malformed(
      f, [](Json& j) { j["inputs"].erase("momentum_kernel"); }, "inputs.momentum_kernel",
      "the optimizer state comes whole (inputs.momentum_bias is present)");
  expect_malformed(
      f,
      [](Json& j) {
        j["inputs"]["momentum_kernel"]["shape"] = {2, 1};
      },
      "inputs.momentum_kernel.shape", "[2, 1], expected [1, 1]");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["momentum_bias"]["shape"] = Json::array(); },
      "inputs.momentum_bias.shape", "[], expected [1]");
  expect_malformed(
      f,
      [](Json& j) {
        j["inputs"]["momentum_bias"]["float32"] = protocol::encode_floats(std::vector<float>{});
      },
      "inputs.momentum_bias.float32", "0 values, expected 1");
  expect_malformed(
      f,
      [](Json& j) {
        j["inputs"]["momentum_kernel"]["float32"] =
            protocol::encode_floats(std::vector<float>{1.0f, 1.0f});
      },
      "inputs.momentum_kernel.float32", "2 values, expected 1");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["momentum_kernel"]["decimal"] = {"nan"}; },
      "inputs.momentum_kernel.decimal[0]", "the bits say 1");
  expect_malformed(
      f, [](Json& j) { j["inputs"]["momentum_kernel"] = {1.0}; }, "inputs.momentum_kernel",
      "expected an object, got an array");

  // The buffer after the step: exactly in a momentum fixture's outputs.
  expect_malformed(
      f, [](Json& j) { j["outputs"].erase("momentum_kernel"); }, "outputs.momentum_kernel",
      "required field is missing");
  expect_malformed(
      f, [](Json& j) { j["outputs"].erase("momentum_bias"); }, "outputs.momentum_bias",
      "required field is missing");
  expect_malformed(
      f,
      [](Json& j) {
        j["outputs"]["momentum_bias"]["expected"] =
            protocol::encode_floats(std::vector<float>{1.0f, 2.0f});
      },
      "outputs.momentum_bias.expected", "2 values, expected 1");
  expect_malformed(
      f, [](Json& j) { j["outputs"]["momentum_kernel"]["bound"][0] = -1.0; },
      "outputs.momentum_kernel.bound[0]", "not a bound");
  expect_malformed(
      f, [](Json& j) { j["outputs"]["momentum_kernel"]["shape"] = {1}; },
      "outputs.momentum_kernel.shape", "[1], expected [1, 1]");
  const Json buffer_after = Json::parse(to_json_text(f))["outputs"]["momentum_kernel"];
  expect_malformed(
      "worked-example", [&](Json& j) { j["outputs"]["momentum_kernel"] = buffer_after; },
      "outputs.momentum_kernel", "unknown field");
}

TEST(Momentum, DisagreementWithTheOracleIsCorruption) {
  const auto expect = [](const std::function<void(Fixture&)>& mutate, const std::string& field) {
    Fixture f = momentum_fixture();
    mutate(f);
    try {
      verify_against_oracle(parse_fixture(to_json_text(f), "c.json"), "c.json");
      ADD_FAILURE() << "accepted; expected corruption at " << field;
    } catch (const FixtureError& e) {
      EXPECT_EQ(e.kind(), FixtureError::Kind::corrupt);
      EXPECT_EQ(e.field(), field) << e.what();
    }
  };
  expect(
      [](Fixture& f) {
        f.outputs.momentum_kernel.expected[0] =
            std::nextafter(f.outputs.momentum_kernel.expected[0], 9.f);
      },
      "outputs.momentum_kernel.expected[0]");
  expect([](Fixture& f) { f.outputs.momentum_bias.exact_rational[0] = "1/3"; },
         "outputs.momentum_bias.exact_rational[0]");
  // The inputs are authoritative: another buffer, decay or Nesterov flag makes the
  // expectations stale.
  expect([](Fixture& f) { f.inputs.momentum_bias = {3.0f}; }, "outputs.bias.expected[0]");
  expect([](Fixture& f) { f.inputs.optimizer.nesterov = false; }, "outputs.kernel.expected[0]");
  expect([](Fixture& f) { f.inputs.optimizer.decay = reference::Optimizer::Decay::decoupled; },
         "outputs.kernel.expected[0]");
}

TEST(Momentum, InputsTheOracleRefusesNameTheFile) {
  // Past the reader (built in memory), a subnormal hyperparameter is refused by the
  // oracle: still an error naming the file, not an exception of another kind.
  Fixture f = momentum_fixture();
  f.inputs.optimizer.momentum = 0x1p-140f;
  try {
    verify_against_oracle(f, "o.json");
    ADD_FAILURE() << "accepted";
  } catch (const FixtureError& e) {
    EXPECT_EQ(e.kind(), FixtureError::Kind::malformed);
    EXPECT_EQ(e.field(), "inputs");
    EXPECT_NE(std::string(e.what()).find("o.json: inputs: momentum: "), std::string::npos)
        << e.what();
  }
}

TEST(Momentum, ReplayChecksTheBuffer) {
  const Fixture f = momentum_fixture();
  EXPECT_TRUE(replay(f, *builtin("float32")).passed);
  const ReplayOutcome r = replay(f, *builtin("nesterov-without-lookahead"));
  EXPECT_FALSE(r.passed);
}

}  // namespace
}  // namespace sgdc::conformance::regression