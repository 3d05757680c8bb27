#include "sgdc/conformance/protocol/messages.hpp"
#include "sgdc/properties/sharding/placement.hpp"
#include "sgdc/reference/counter.hpp"
#include "sgdc/reference/worked_example.hpp"

#include "support/float_bits.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sgdc::conformance::protocol {
namespace {

properties::Capabilities all_capabilities() {
  properties::Capabilities c;
  c.grads = c.step_counter = c.shard_layout = true;
  return c;
}

using test_support::float_bits;

// The spec's example answer, with `replace` spliced in for the part after the id.
std::string answer(const std::string& id = "7",
                   const std::string& rest =
                       R"("loss":"AAAgQA==","kernel":"AAAAPw==","bias":"mpmZvg==",)"
                       R"("step":1,"grad_kernel":"AACgQA==","grad_bias":"AABAQA==")") {
  return R"({"op":"result","id":)" + id + "," + rest + "}";
}

// decode_answer fails with a ProtocolError whose message contains `needle`.
void expect_protocol_error(const std::string& line, const std::string& needle,
                           properties::Capabilities promised = all_capabilities(),
                           const reference::Case& c = reference::worked_example()) {
  try {
    decode_answer(line, 7, c, promised);
    ADD_FAILURE() << "accepted: " << line;
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void expect_hello_error(const std::string& line, const std::string& needle) {
  try {
    decode_hello(line);
    ADD_FAILURE() << "accepted: " << line;
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Messages, HelloAndBye) {
  EXPECT_EQ(encode_hello(), R"({"op":"hello","protocol":1})");
  EXPECT_EQ(encode_bye(), R"({"op":"bye"})");
}

TEST(Messages, SpecExampleCaseEncodesExactly) {
  EXPECT_EQ(encode_step(7, reference::worked_example()),
            R"({"op":"step","id":7,"n":2,"d":1,"k":1,"num_shards":1,"step":0,)"
            R"("lr":"zczMPQ==","kernel":"AACAPw==","bias":"AAAAAA==","x":"AACAPwAAAEA=",)"
            R"("y":"AAAAAAAAAAA="})");
}

TEST(Messages, SpecExampleResultDecodes) {
  properties::Capabilities promised;
  promised.grads = promised.step_counter = true;
  const properties::StepOutcome out =
      decode_answer(answer(), 7, reference::worked_example(), promised);
  ASSERT_TRUE(out.result.has_value());
  EXPECT_TRUE(out.rejection.empty());
  const reference::StepResult& r = *out.result;
  EXPECT_EQ(r.loss, std::vector<float>{2.5f});
  EXPECT_EQ(r.kernel, std::vector<float>{0.5f});
  ASSERT_EQ(r.bias.size(), 1u);
  EXPECT_EQ(float_bits(r.bias[0]), float_bits(-0.3f));
  EXPECT_EQ(r.grad_kernel, std::vector<float>{5.0f});
  EXPECT_EQ(r.grad_bias, std::vector<float>{3.0f});
  EXPECT_EQ(r.step, 1);
  EXPECT_FALSE(r.shards.has_value()) << "shard_layout was not promised";
}

TEST(Messages, UnpromisedOutputsAreIgnored) {
  const properties::StepOutcome out =
      decode_answer(answer("7", R"("loss":"AAAgQA==","kernel":"AAAAPw==",)"
                                R"("bias":"mpmZvg==","step":"junk",)"
                                R"("grad_bias":"!","extra":[1,2])"),
                    7, reference::worked_example(), properties::Capabilities{});
  ASSERT_TRUE(out.result.has_value());
  EXPECT_FALSE(out.result->step.has_value());
  EXPECT_TRUE(out.result->grad_kernel.empty());
  EXPECT_TRUE(out.result->grad_bias.empty());
}

TEST(Messages, ShardsDecode) {
  properties::Capabilities promised;
  promised.shard_layout = true;
  const properties::StepOutcome out = decode_answer(
      answer("7", R"("loss":"AAAgQA==","kernel":"AAAAPw==","bias":"mpmZvg==",)"
                  R"("shards":[{"kernel":1,"bias":0},{"kernel":0,"bias":1,"device":"gpu:1"}])"),
      7, reference::worked_example(), promised);
  ASSERT_TRUE(out.result && out.result->shards);
  ASSERT_EQ(out.result->shards->size(), 2u);
  EXPECT_EQ((*out.result->shards)[0].kernel, 1);
  EXPECT_EQ((*out.result->shards)[0].bias, 0);
  EXPECT_EQ((*out.result->shards)[1].kernel, 0);
  EXPECT_EQ((*out.result->shards)[1].bias, 1);
}

TEST(Messages, ErrorAnswerIsARejection) {
  const properties::StepOutcome out =
      decode_answer(R"({"op":"error","id":7,"message":"lr must be finite"})", 7,
                    reference::worked_example(), all_capabilities());
  EXPECT_FALSE(out.result.has_value());
  EXPECT_EQ(out.rejection, "lr must be finite");
  const properties::StepOutcome empty = decode_answer(
      R"({"op":"error","id":7,"message":""})", 7, reference::worked_example(), all_capabilities());
  EXPECT_FALSE(empty.rejection.empty());
}

TEST(Messages, EncodersRoundTrip) {
  properties::Declaration d;
  d.name = "x";
  d.version = "1";
  d.capabilities = all_capabilities();
  d.capabilities.sharded = true;
  d.arithmetic.u = reference::unit_roundoff::bfloat16;
  d.arithmetic.subnormals = reference::Subnormals::flush_to_zero;
  const properties::Declaration back = decode_hello(encode_hello_reply(d));
  EXPECT_EQ(back.name, "x");
  EXPECT_TRUE(back.capabilities.grads && back.capabilities.step_counter &&
              back.capabilities.shard_layout && back.capabilities.sharded);
  EXPECT_EQ(back.arithmetic.u, reference::unit_roundoff::bfloat16);
  EXPECT_EQ(back.arithmetic.subnormals, reference::Subnormals::flush_to_zero);

  reference::StepResult r;
  r.loss = {2.5f};
  r.kernel = {0.5f};
  r.bias = {-0.3f};
  r.step = 1;
  r.grad_kernel = std::vector<float>{5.0f};
  r.grad_bias = std::vector<float>{3.0f};
  // The spec's answer, field order aside.
  EXPECT_EQ(nlohmann::json::parse(encode_result(7, r)), nlohmann::json::parse(answer()));
  r.shards = std::vector<reference::ShardPart>{{1, 1}};
  const properties::StepOutcome out =
      decode_answer(encode_result(7, r), 7, reference::worked_example(), all_capabilities());
  ASSERT_TRUE(out.result && out.result->shards);
  EXPECT_EQ(out.result->shards->at(0).kernel, 1);

  EXPECT_EQ(decode_answer(encode_error(7, "no"), 7, reference::worked_example(), {}).rejection,
            "no");
}

TEST(Messages, HelloReplyOfTheSpec) {
  const properties::Declaration d = decode_hello(
      R"({"op":"hello","protocol":1,"name":"flax-nnx","version":"0.12.12",)"
      R"("capabilities":["grads","step_counter","shard_layout","telepathy"],"extra":{}})");
  EXPECT_EQ(d.name, "flax-nnx");
  EXPECT_EQ(d.version, "0.12.12");
  EXPECT_TRUE(d.capabilities.grads);
  EXPECT_TRUE(d.capabilities.step_counter);
  EXPECT_TRUE(d.capabilities.shard_layout);
  // Extension defaults.
  EXPECT_FALSE(d.capabilities.sharded);
  EXPECT_EQ(d.arithmetic.u, 0x1p-24);
  EXPECT_EQ(d.arithmetic.subnormals, reference::Subnormals::ieee);
}

TEST(Messages, HelloExtensionFieldsOfThePythonKit) {
  const properties::Declaration d =
      decode_hello(R"({"op":"hello","protocol":1,"name":"torch","version":"2.3","capabilities":[],)"
                   R"("subnormals":"ftz","unit_roundoff":0.00048828125,"sharded":true})");
  EXPECT_EQ(d.arithmetic.subnormals, reference::Subnormals::flush_to_zero);
  EXPECT_EQ(d.arithmetic.u, 0x1p-11);
  EXPECT_TRUE(d.capabilities.sharded);
  EXPECT_FALSE(d.capabilities.grads);
}

TEST(Messages, HelloReplyRejections) {
  expect_hello_error("hello", "hello reply is not JSON");
  expect_hello_error("[1]", "hello reply is not a JSON object");
  expect_hello_error(R"({"op":"result","protocol":1})", R"(op "result", expected "hello")");
  expect_hello_error(R"({"op":"hello","protocol":2,"name":"a","version":"1","capabilities":[]})",
                     "adapter speaks protocol 2, the suite speaks protocol 1");
  expect_hello_error(R"({"op":"hello","protocol":"1","name":"a","version":"1","capabilities":[]})",
                     "protocol \"1\"");
  expect_hello_error(R"({"op":"hello","name":"a","version":"1","capabilities":[]})", "no protocol");
  expect_hello_error(R"({"op":"hello","protocol":1,"version":"1","capabilities":[]})", "no name");
  expect_hello_error(R"({"op":"hello","protocol":1,"name":"a","version":1,"capabilities":[]})",
                     "version is not a string");
  expect_hello_error(R"({"op":"hello","protocol":1,"name":"a","version":"1"})", "no capabilities");
  expect_hello_error(
      R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":"grads"})",
      "capabilities is not a list");
  expect_hello_error(R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":[1]})",
                     "capabilities[0] is not a string");
  const std::string base =
      R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":[],)";
  expect_hello_error(base + R"("subnormals":"daz"})", R"(expected "ieee" or "ftz")");
  expect_hello_error(base + R"("unit_roundoff":0})", "unit_roundoff is 0");
  expect_hello_error(base + R"("unit_roundoff":"2^-24"})", "unit_roundoff");
  expect_hello_error(base + R"("sharded":"yes"})", "sharded is not true or false");
}

TEST(Messages, AnswerRejections) {
  expect_protocol_error("loading weights...", "answer is not JSON");
  expect_protocol_error("", "answer is not JSON");
  expect_protocol_error(R"("result")", "answer is not a JSON object");
  expect_protocol_error(R"({"id":7})", "answer has no op");
  expect_protocol_error(R"({"op":"hello","id":7})", R"(op "hello", expected "result" or "error")");
  expect_protocol_error(answer("8"), "answer has id 8, expected 7");
  expect_protocol_error(answer("\"7\""), "answer has id \"7\", expected 7");
  expect_protocol_error(R"({"op":"error","id":null,"message":"malformed message"})",
                        "answer has id null, expected 7 (error: \"malformed message\")");
  expect_protocol_error(R"({"op":"result"})", "answer has no id");
  expect_protocol_error(R"({"op":"error","id":7})", "error answer has no message");
}

TEST(Messages, ArrayRejections) {
  const std::string head = R"("loss":"AAAgQA==",)";
  expect_protocol_error(answer("7", head + R"("bias":"mpmZvg==")"), "answer has no kernel");
  expect_protocol_error(answer("7", head + R"("kernel":[0.5],"bias":"mpmZvg==")"),
                        "kernel is not a base64 string");
  expect_protocol_error(answer("7", head + R"("kernel":"AAAAP!==","bias":"mpmZvg==")"),
                        "kernel is not valid base64: invalid character '!' at offset 5");
  expect_protocol_error(answer("7", head + R"("kernel":"AAAAPwAAAD8=","bias":"mpmZvg==")"),
                        "kernel has 2 values, expected 1");
  expect_protocol_error(answer("7", R"("loss":"","kernel":"AAAAPw==","bias":"mpmZvg==")"),
                        "loss has 0 values, expected 1");
  expect_protocol_error(answer("7", head + R"("kernel":"AAAAPw==","bias":"mpmZ")"),
                        "bias is not valid base64: 3 bytes is not a whole number");

  reference::Case two_by_two = reference::worked_example();
  two_by_two.d = 2;
  two_by_two.k = 2;
  expect_protocol_error(answer("7", head + R"("kernel":"AAAAAAAAAAAAAAAA","bias":"AAAAAAAAAAA=")"),
                        "kernel has 3 values, expected 4", {}, two_by_two);
}

TEST(Messages, PromisedOutputsAreRequiredAndChecked) {
  const std::string base = R"("loss":"AAAgQA==","kernel":"AAAAPw==","bias":"mpmZvg==")";
  properties::Capabilities grads;
  grads.grads = true;
  expect_protocol_error(answer("7", base + R"(,"grad_kernel":"AACgQA==")"),
                        R"(answer lacks grad_bias, which capability "grads" promises)", grads);
  expect_protocol_error(answer("7", base + R"(,"grad_kernel":"AACgQA==","grad_bias":"")"),
                        "grad_bias has 0 values, expected 1", grads);

  properties::Capabilities counter;
  counter.step_counter = true;
  expect_protocol_error(answer("7", base), R"(answer lacks step, which capability "step_counter")",
                        counter);
  expect_protocol_error(answer("7", base + R"(,"step":"1")"), R"(step is not an integer: "1")",
                        counter);
  expect_protocol_error(answer("7", base + R"(,"step":1.5)"), "step is not an integer: 1.5",
                        counter);
  expect_protocol_error(answer("7", base + R"(,"step":1.0)"), "step is not an integer", counter);
  expect_protocol_error(answer("7", base + R"(,"step":true)"), "step is not an integer: true",
                        counter);
  expect_protocol_error(answer("7", base + R"(,"step":NaN)"), "answer is not JSON", counter);
  expect_protocol_error(answer("7", base + R"(,"step":18446744073709551615)"),
                        "step is not an integer", counter);

  properties::Capabilities layout;
  layout.shard_layout = true;
  expect_protocol_error(answer("7", base), "answer lacks shards", layout);
  expect_protocol_error(answer("7", base + R"(,"shards":{"kernel":1})"), "shards is not a list",
                        layout);
  expect_protocol_error(answer("7", base + R"(,"shards":[3])"), "shards[0] is not an object",
                        layout);
  expect_protocol_error(answer("7", base + R"(,"shards":[{"kernel":1,"bias":0},{"kernel":1}])"),
                        "shards[1] has no bias", layout);
  expect_protocol_error(answer("7", base + R"(,"shards":[{"kernel":1,"bias":-1}])"),
                        "shards[0].bias is not a non-negative integer: -1", layout);
  expect_protocol_error(answer("7", base + R"(,"shards":[{"kernel":0.5,"bias":0}])"),
                        "shards[0].kernel is not a non-negative integer: 0.5", layout);
}

TEST(Messages, QuotedAdapterOutputIsValidUtf8) {
  try {
    decode_answer("\xff\xfe garbage \x01", 7, reference::worked_example(), {});
    FAIL();
  } catch (const ProtocolError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\xff'), std::string::npos) << what;
    EXPECT_NE(what.find("\\x01"), std::string::npos) << what;
  }
}

// --- binary arrays (docs/spec/protocol.md) ---

// Little-endian bytes of `values`, spelled out byte by byte (independent of the encoder).
std::string le_bytes(const std::vector<float>& values) {
  std::string out;
  for (const float f : values) {
    const std::uint32_t u = float_bits(f);
    for (int b = 0; b < 4; ++b) out += static_cast<char>(u >> (8 * b) & 0xFF);
  }
  return out;
}

// The spec's example answer with binary arrays: loss, kernel, bias, grad_kernel, grad_bias.
Frame binary_answer() {
  return Frame{R"({"op":"result","id":7,"loss":{"offset":0,"count":1},)"
               R"("kernel":{"offset":4,"count":1},"bias":{"offset":8,"count":1},"step":1,)"
               R"("grad_kernel":{"offset":12,"count":1},"grad_bias":{"offset":16,"count":1},)"
               R"("payload":20})",
               le_bytes({2.5f, 0.5f, -0.3f, 5.0f, 3.0f})};
}

void expect_binary_error(const std::string& line, const std::string& payload,
                         const std::string& needle) {
  properties::Capabilities promised;
  promised.grads = promised.step_counter = true;
  try {
    decode_answer(Frame{line, payload}, 7, reference::worked_example(), promised,
                  ArrayEncoding::binary);
    ADD_FAILURE() << "accepted: " << line;
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Messages, HelloOffersBinaryArrays) {
  EXPECT_EQ(encode_hello(true),
            R"({"op":"hello","protocol":1,"array_encodings":["base64","binary"]})");
  const std::string reply =
      R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":[])";
  EXPECT_EQ(decode_hello_reply(reply + "}", true).arrays, ArrayEncoding::base64);
  EXPECT_EQ(decode_hello_reply(reply + R"(,"array_encoding":"base64"})", true).arrays,
            ArrayEncoding::base64);
  EXPECT_EQ(decode_hello_reply(reply + R"(,"array_encoding":"binary"})", true).arrays,
            ArrayEncoding::binary);
  EXPECT_THROW(decode_hello_reply(reply + R"(,"array_encoding":"binary"})", false), ProtocolError);
  expect_hello_error(reply + R"(,"array_encoding":"binary"})", "which the suite did not offer");
  expect_hello_error(reply + R"(,"array_encoding":"raw"})",
                     R"(array_encoding is "raw", expected "base64" or "binary")");
}

TEST(Messages, HelloMaxInFlight) {
  const std::string reply =
      R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":[])";
  EXPECT_EQ(decode_hello_reply(reply + "}", false).max_in_flight, 1);
  EXPECT_EQ(decode_hello_reply(reply + R"(,"max_in_flight":64})", false).max_in_flight, 64);
  for (const std::string bad : {"0", "-3", "2.5", "\"8\"", "true"}) {
    expect_hello_error(reply + R"(,"max_in_flight":)" + bad + "}",
                       "max_in_flight is not a positive integer: " + bad);
  }
}

TEST(Messages, BinaryCaseLaysOutEveryArrayInOrder) {
  const Frame f = encode_step(7, reference::worked_example(), ArrayEncoding::binary);
  EXPECT_EQ(f.line, R"({"op":"step","id":7,"n":2,"d":1,"k":1,"num_shards":1,"step":0,)"
                    R"("lr":{"offset":0,"count":1},"kernel":{"offset":4,"count":1},)"
                    R"("bias":{"offset":8,"count":1},"x":{"offset":12,"count":2},)"
                    R"("y":{"offset":20,"count":2},"payload":28})");
  EXPECT_EQ(f.payload, le_bytes({0.1f, 1.0f, 0.0f, 1.0f, 2.0f, 0.0f, 0.0f}));
  // The base64 frame is the published message, with nothing after the line.
  const Frame text = encode_step(7, reference::worked_example(), ArrayEncoding::base64);
  EXPECT_EQ(text.line, encode_step(7, reference::worked_example()));
  EXPECT_TRUE(text.payload.empty());
}

TEST(Messages, BinaryResultDecodesBitForBit) {
  properties::Capabilities promised;
  promised.grads = promised.step_counter = true;
  const properties::StepOutcome out = decode_answer(binary_answer(), 7, reference::worked_example(),
                                                    promised, ArrayEncoding::binary);
  ASSERT_TRUE(out.result.has_value());
  EXPECT_EQ(out.result->loss[0], 2.5f);
  EXPECT_EQ(out.result->kernel, std::vector<float>{0.5f});
  EXPECT_EQ(float_bits(out.result->bias.at(0)), float_bits(-0.3f));
  EXPECT_EQ(out.result->grad_kernel, std::vector<float>{5.0f});
  EXPECT_EQ(out.result->grad_bias, std::vector<float>{3.0f});
  EXPECT_EQ(out.result->step, 1);
  // Every bit pattern survives: NaN payloads, -0, subnormals.
  reference::StepResult r = *out.result;
  r.kernel = {std::bit_cast<float>(0x7FC01234u)};
  r.bias = {-0.0f};
  r.loss = {std::bit_cast<float>(0x00000001u)};
  const Frame again = encode_result(7, r, ArrayEncoding::binary);
  const reference::StepResult back =
      *decode_answer(again, 7, reference::worked_example(), promised, ArrayEncoding::binary).result;
  EXPECT_EQ(float_bits(back.kernel.at(0)), 0x7FC01234u);
  EXPECT_EQ(float_bits(back.bias.at(0)), float_bits(-0.0f));
  EXPECT_EQ(float_bits(back.loss.at(0)), 1u);
  EXPECT_EQ(payload_size(again.line, 1 << 20), again.payload.size());
}

TEST(Messages, BinaryRejectionHasNoPayload) {
  const Frame e{R"({"op":"error","id":7,"message":"no"})", {}};
  EXPECT_EQ(payload_size(e.line, 100), 0u);
  EXPECT_EQ(decode_answer(e, 7, reference::worked_example(), {}, ArrayEncoding::binary).rejection,
            "no");
}

TEST(Messages, BinaryFaultsAreNamed) {
  const Frame good = binary_answer();
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string line = good.line;
    line.replace(line.find(from), from.size(), to);
    return line;
  };
  expect_binary_error(good.line, good.payload.substr(0, 19),
                      "grad_bias (bytes 16 to 20) lies outside the 19-byte payload");
  expect_binary_error(with(R"("kernel":{"offset":4,"count":1})", R"("kernel":"AAAAPw==")"),
                      good.payload, "kernel is not a binary array reference");
  expect_binary_error(with(R"("offset":4,)", R"("offset":-4,)"), good.payload,
                      "kernel.offset is not a non-negative integer: -4");
  expect_binary_error(with(R"("offset":4,)", R"("offset":4.0,)"), good.payload,
                      "kernel.offset is not a non-negative integer: 4.0");
  expect_binary_error(with(R"("offset":4,)", R"("offset":18446744073709551615,)"), good.payload,
                      "kernel.offset is not a non-negative integer");
  expect_binary_error(with(R"("offset":4,)", R"("offset":9223372036854775807,)"), good.payload,
                      "lies outside the 20-byte payload");
  expect_binary_error(with(R"("kernel":{"offset":4,"count":1})", R"("kernel":{"offset":4})"),
                      good.payload, "kernel has no count");
  expect_binary_error(with(R"("offset":4,"count":1)", R"("offset":4,"count":2)"), good.payload,
                      "kernel has 2 values, expected 1");

  EXPECT_EQ(payload_size(R"({"op":"result","payload":20})", 20), 20u);
  for (const auto& [line, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"({"op":"result","payload":21})", "payload of 21 bytes exceeds the limit of 20"},
           {R"({"op":"result","payload":-1})", "payload is not a non-negative integer: -1"},
           {R"({"op":"result","payload":"20"})", "payload is not a non-negative integer"},
           {"[20]", "answer is not a JSON object"},
           {"{", "answer is not JSON"}}) {
    try {
      payload_size(line, 20);
      ADD_FAILURE() << "accepted: " << line;
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
}

// "compute_format": a name or fraction bits and exponent range; the unit roundoff follows
// it unless declared, and may not be smaller than the format's.
TEST(Messages, HelloComputeFormat) {
  const std::string head =
      R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":[],)";
  for (const auto& [text, format] : {std::pair{R"("float32")", reference::formats::float32},
                                     {R"("tf32")", reference::formats::tf32},
                                     {R"("bfloat16")", reference::formats::bfloat16},
                                     {R"("float16")", reference::formats::float16},
                                     {R"({"fraction_bits":5,"min_exponent":-20,"max_exponent":20})",
                                      reference::Format{5, -20, 20}}}) {
    const properties::Declaration d = decode_hello(head + R"("compute_format":)" + text + "}");
    EXPECT_EQ(d.arithmetic.format, format) << text;
    EXPECT_EQ(d.arithmetic.u, format.unit_roundoff()) << text;
    // What the suite writes reads back the same.
    EXPECT_EQ(decode_hello(encode_hello_reply(d)).arithmetic.format, format) << text;
  }
  EXPECT_EQ(decode_hello(head + R"("compute_format":"tf32","unit_roundoff":0.001})").arithmetic.u,
            0.001);
  for (const auto& [field, needle] : {
           std::pair{R"("fp8")", "compute_format is \"fp8\""},
           {"7", "compute_format is neither a format's name nor an object"},
           {R"({"fraction_bits":10,"min_exponent":-14})", "compute_format has no max_exponent"},
           {R"({"fraction_bits":1.5,"min_exponent":-14,"max_exponent":15})",
            "compute_format.fraction_bits is not an integer"},
           {R"({"fraction_bits":52,"min_exponent":-1022,"max_exponent":1023})",
            "fraction_bits is 52, expected 1 to 23"},
           {R"({"fraction_bits":10,"min_exponent":-140,"max_exponent":15})",
            "expected -126 <= min_exponent < max_exponent <= 127"},
           {R"({"fraction_bits":10,"min_exponent":15,"max_exponent":15})",
            "expected -126 <= min_exponent < max_exponent <= 127"},
       })
    expect_hello_error(head + R"("compute_format":)" + field + "}", needle);
  expect_hello_error(head + R"("compute_format":"tf32","unit_roundoff":5.960464477539063e-08})",
                     "below compute_format tf32's own unit roundoff 2^-11");
}

// "precision" (protocol 1.13): the stages by name; reduce_dtype follows param_dtype,
// master_dtype defaults to float32; a bad one is named by its field.
TEST(Messages, HelloPrecision) {
  const std::string head =
      R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":[],)";
  using reference::formats::bfloat16, reference::formats::float16, reference::formats::float32;
  for (const auto& [text, stages] :
       {std::pair{R"({"param_dtype":"bfloat16","reduce_dtype":"float32"})",
                  reference::Stages{.param = bfloat16}},
        {R"({"param_dtype":"bfloat16"})", reference::Stages{.param = bfloat16, .reduce = bfloat16}},
        {R"({"param_dtype":"float16","reduce_dtype":"float32","master_dtype":"float16"})",
         reference::Stages{.param = float16, .master = float16}},
        {R"({})", reference::Stages{}},
        {R"({"param_dtype":"float32"})", reference::Stages{}}}) {
    const properties::Declaration d = decode_hello(head + R"("precision":)" + text + "}");
    EXPECT_EQ(d.arithmetic.stages, stages) << text;
    EXPECT_EQ(d.arithmetic.u, 0x1p-24) << text;  // float32's accumulations
    EXPECT_EQ(decode_hello(encode_hello_reply(d)).arithmetic.stages, stages) << text;
  }
  for (const auto& [field, needle] : {
           std::pair{R"("bfloat16")", "precision is not an object"},
           {R"({"param":"bfloat16"})", "precision has an unknown field \"param\""},
           {R"({"param_dtype":"fp8"})", "precision.param_dtype is \"fp8\""},
           {R"({"param_dtype":"tf32"})", "precision.param_dtype is \"tf32\""},
           {R"({"param_dtype":"bfloat16","reduce_dtype":16})", "precision.reduce_dtype is 16"},
           {R"({"param_dtype":"bfloat16","master_dtype":"half"})",
            "precision.master_dtype is \"half\""},
           {R"({"reduce_dtype":"bfloat16"})", "param_dtype float32 with reduce_dtype bfloat16"},
           {R"({"param_dtype":"bfloat16","reduce_dtype":"float16"})",
            "reduce_dtype float16 with param_dtype bfloat16"},
           {R"({"param_dtype":"float16","master_dtype":"bfloat16"})",
            "master_dtype bfloat16 with param_dtype float16"},
       })
    expect_hello_error(head + R"("precision":)" + field + "}", needle);
  expect_hello_error(head + R"("precision":{"param_dtype":"bfloat16"},"compute_format":"tf32"})",
                     "precision and compute_format tf32 both declared");
  expect_hello_error(head + R"("precision":{"param_dtype":"bfloat16"},"subnormals":"ftz"})",
                     "precision with subnormals \"ftz\"");
}

// --- protocol 1.2 to 1.6: max_shards, max_batch, placement, counter, momentum ---

// The minimal hello reply, with `fields` (",..." or "") before its closing brace.
std::string hello_with(const std::string& fields) {
  return R"({"op":"hello","protocol":1,"name":"a","version":"1","capabilities":[])" + fields + "}";
}

// --- protocol 1.9: the declared recipe ---

TEST(Messages, HelloRecipe) {
  const std::string adam = R"(,"adam":{"weight_decay":["decoupled"]})";
  const properties::Declaration d = decode_hello(hello_with(
      adam + R"(,"recipe":{"optimizers":["adam"],"hyperparameters":{"lr":0.0003,"b1":0.9,)"
             R"("weight_decay":[0,0.1]},"even_batches":true})"));
  ASSERT_EQ(d.recipe.optimizers.size(), 1u);
  EXPECT_EQ(d.recipe.optimizers[0], reference::Optimizer::Kind::adam);
  EXPECT_EQ(d.recipe.range("lr"), (properties::ValueRange{0.0003f, 0.0003f}));
  EXPECT_EQ(d.recipe.range("b1"), (properties::ValueRange{0.9f, 0.9f}));
  EXPECT_EQ(d.recipe.range("weight_decay"), (properties::ValueRange{0.0f, 0.1f}));
  EXPECT_FALSE(d.recipe.range("b2"));
  EXPECT_TRUE(d.recipe.even_batches);
  // Encoded and decoded again: the same recipe.
  EXPECT_EQ(decode_hello(encode_hello_reply(d)).recipe, d.recipe);
  EXPECT_TRUE(decode_hello(hello_with("")).recipe.empty()) << "undeclared: as before";
}

TEST(Messages, HelloRecipeBiasGroup) {
  const std::string mom = R"(,"momentum":{"weight_decay":["coupled"]})";
  const properties::Declaration d = decode_hello(
      hello_with(mom + R"(,"recipe":{"bias_group":{"weight_decay":0,"lr":[0.001,0.1]}})"));
  ASSERT_TRUE(d.recipe.bias_group);
  EXPECT_EQ(d.recipe.bias_group->weight_decay, (properties::ValueRange{0.0f, 0.0f}));
  EXPECT_EQ(d.recipe.bias_group->lr, (properties::ValueRange{0.001f, 0.1f}));
  EXPECT_EQ(decode_hello(encode_hello_reply(d)).recipe, d.recipe);
}

// A step of a case whose bias has its own group carries bias_lr and bias_weight_decay,
// each only when the group sets it; a case without one carries neither.
TEST(Messages, StepCarriesTheBiasGroup) {
  reference::Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {1.0f};
  c.bias = {2.0f};
  c.x = {3.0f};
  c.y = {4.0f};
  c.lr = 0.5f;
  EXPECT_EQ(encode_step(1, c).find("bias_lr"), std::string::npos);
  EXPECT_EQ(encode_step(1, c).find("bias_weight_decay"), std::string::npos);
  c.bias_group = reference::ParamGroup{.lr = 0.25f};
  // Scalars travel as arrays do: 0.25f is the bytes 00 00 80 3e, 0 is four zero bytes.
  const auto j = nlohmann::json::parse(encode_step(1, c));
  EXPECT_EQ(j.at("bias_lr"), "AACAPg==");
  EXPECT_FALSE(j.contains("bias_weight_decay"));
  c.optimizer.kind = reference::Optimizer::Kind::momentum;
  c.bias_group = reference::ParamGroup{.weight_decay = 0.0f};
  const auto k = nlohmann::json::parse(encode_step(1, c));
  EXPECT_EQ(k.at("bias_weight_decay"), "AAAAAA==");
  EXPECT_FALSE(k.contains("bias_lr"));
}

// A bad recipe value is quoted as every field of a message is (show_json): a long one
// cut at the quoting limit, saying how much was left out.
TEST(Messages, ALongBadRecipeValueIsQuotedShort) {
  const std::string name(1000, 'a');
  try {
    decode_hello(hello_with(R"(,"recipe":{"optimizers":")" + name + R"("})"));
    ADD_FAILURE() << "accepted";
  } catch (const ProtocolError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("recipe.optimizers: is not a non-empty list of names: \"aaa"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(" more bytes left out]"), std::string::npos) << what;
    EXPECT_LT(what.size(), 400u) << what;
  }
}

// Clipping: declared in the recipe (max_norm a value or a range, eps the convention's),
// read back the same; each step then carries clip_max_norm and clip_eps, a step of a case
// without clipping neither.
TEST(Messages, HelloRecipeClipping) {
  const properties::Declaration d =
      decode_hello(hello_with(R"(,"recipe":{"clipping":{"max_norm":[0.5,2],"eps":1e-6}})"));
  ASSERT_TRUE(d.recipe.clipping);
  EXPECT_EQ(d.recipe.clipping->max_norm, (properties::ValueRange{0.5f, 2.0f}));
  EXPECT_EQ(d.recipe.clipping->eps, 1e-6f);
  EXPECT_EQ(decode_hello(encode_hello_reply(d)).recipe, d.recipe);
  const properties::Declaration fixed =
      decode_hello(hello_with(R"(,"recipe":{"clipping":{"max_norm":1,"eps":0}})"));
  ASSERT_TRUE(fixed.recipe.clipping);
  EXPECT_TRUE(fixed.recipe.clipping->max_norm.fixed());
  EXPECT_EQ(fixed.recipe.clipping->eps, 0.0f);
}

TEST(Messages, StepCarriesTheClipping) {
  reference::Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {1.0f};
  c.bias = {2.0f};
  c.x = {3.0f};
  c.y = {4.0f};
  c.lr = 0.5f;
  EXPECT_EQ(encode_step(1, c).find("clip_"), std::string::npos);
  c.clip = reference::Clipping{1.0f, 0.0f};
  const auto j = nlohmann::json::parse(encode_step(1, c));
  EXPECT_EQ(j.at("clip_max_norm"), "AACAPw==");
  EXPECT_EQ(j.at("clip_eps"), "AAAAAA==");
}

TEST(Messages, HelloRecipeFaultsNameTheField) {
  const std::string mom = R"(,"momentum":{"nesterov":true})";
  const std::pair<std::string, std::string> faults[] = {
      {R"("recipe":[])", "recipe is not an object"},
      {R"("recipe":{"optimiser":["sgd"]})", "recipe.optimiser: is not a recipe field"},
      {R"("recipe":{"optimizers":[]})", "recipe.optimizers: is not a non-empty list"},
      {R"("recipe":{"optimizers":["adamw"]})", "recipe.optimizers: lists \"adamw\""},
      {R"("recipe":{"optimizers":["adam"]})", "recipe.optimizers: lists \"adam\", which the "},
      {R"("recipe":{"hyperparameters":{"learning_rate":0.1}})",
       "recipe.learning_rate: is not a hyperparameter; known: lr, momentum"},
      {R"("recipe":{"hyperparameters":{"lr":"0.1"}})", "recipe.lr: is not a number"},
      {R"("recipe":{"hyperparameters":{"lr":[0.1]}})", "recipe.lr: is not [lo, hi]"},
      {R"("recipe":{"hyperparameters":{"lr":[0.5,0.1]}})", "recipe.lr: is an empty range"},
      {R"("recipe":{"hyperparameters":{"lr":-1}})", "recipe.lr: -1 lies outside"},
      {R"("recipe":{"hyperparameters":{"lr":1e39}})", "recipe.lr: 1e+39 is not a finite float32"},
      {R"("recipe":{"hyperparameters":{"lr":1e-40}})", "neither 0 nor a normal float32"},
      {R"("recipe":{"hyperparameters":{"momentum":1.5}})", "recipe.momentum: 1.5 lies outside"},
      {R"("recipe":{"hyperparameters":{"b1":0.9}})", "recipe.b1: no optimizer the recipe runs"},
      {R"("recipe":{"hyperparameters":{"dampening":0.5}})",
       "recipe.dampening: is above 0, but momentum.dampening is not declared"},
      {R"("recipe":{"hyperparameters":{"weight_decay":0.1}})",
       "recipe.weight_decay: is above 0, but momentum.weight_decay declares no convention"},
      {R"("recipe":{"even_batches":1})", "recipe.even_batches: is not true or false"},
      {R"("recipe":{"bias_group":[]})", "recipe.bias_group: is not an object"},
      {R"("recipe":{"bias_group":{}})", "recipe.bias_group: declares neither lr nor weight_decay"},
      {R"("recipe":{"bias_group":{"wd":0}})",
       "recipe.bias_group.wd: is not a parameter group's hyperparameter; known: lr, weight_decay"},
      {R"("recipe":{"bias_group":{"lr":"0.1"}})", "recipe.bias_group.lr: is not a number"},
      {R"("recipe":{"bias_group":{"lr":-1}})", "recipe.bias_group.lr: -1 lies outside"},
      {R"("recipe":{"bias_group":{"weight_decay":[0.1,0]}})",
       "recipe.bias_group.weight_decay: is an empty range"},
      {R"("recipe":{"bias_group":{"weight_decay":0.1}})",
       "recipe.bias_group.weight_decay: is above 0, but momentum.weight_decay declares no "
       "convention"},
      {R"("recipe":{"clipping":1})", "recipe.clipping: is not an object"},
      {R"("recipe":{"clipping":{"eps":0}})", "recipe.clipping.max_norm: is missing"},
      {R"("recipe":{"clipping":{"max_norm":1}})", "recipe.clipping.eps: is missing"},
      {R"("recipe":{"clipping":{"max_norm":1,"eps":0,"norm_type":2}})",
       "recipe.clipping.norm_type: is not a clipping field; known: max_norm, eps"},
      {R"("recipe":{"clipping":{"max_norm":"1","eps":0}})",
       "recipe.clipping.max_norm: is not a number"},
      {R"("recipe":{"clipping":{"max_norm":0,"eps":0}})",
       "recipe.clipping.max_norm: 0 must be a normal float32 > 0"},
      {R"("recipe":{"clipping":{"max_norm":[2,1],"eps":0}})",
       "recipe.clipping.max_norm: is an empty range"},
      {R"("recipe":{"clipping":{"max_norm":1e39,"eps":0}})",
       "recipe.clipping.max_norm: 1e+39 is not a finite float32"},
      {R"("recipe":{"clipping":{"max_norm":1,"eps":-1e-6}})",
       "recipe.clipping.eps: -9.99999997e-07 must be 0 or a finite normal float32 > 0"},
      {R"("recipe":{"clipping":{"max_norm":1,"eps":[0,1]}})",
       "recipe.clipping.eps: is not a number"},
  };
  for (const auto& [field, needle] : faults)
    expect_hello_error(hello_with(mom + "," + field), needle);
}

// --- Adagrad: hello field "adagrad", its step's fields ---

TEST(Messages, HelloAdagrad) {
  const properties::Declaration d = decode_hello(hello_with(
      R"(,"adagrad":{"weight_decay":["coupled"],"eps_root":true},"recipe":{"optimizers":)"
      R"(["adagrad"],"hyperparameters":{"initial_accumulator_value":0.1,"eps_root":1e-7}})"));
  ASSERT_TRUE(d.capabilities.adagrad);
  EXPECT_TRUE(d.capabilities.adagrad->coupled_decay);
  EXPECT_FALSE(d.capabilities.adagrad->decoupled_decay);
  EXPECT_TRUE(d.capabilities.adagrad->eps_root);
  EXPECT_FALSE(d.capabilities.adam);
  EXPECT_EQ(d.recipe.range("initial_accumulator_value"), (properties::ValueRange{0.1f, 0.1f}));
  const properties::Declaration again = decode_hello(encode_hello_reply(d));
  ASSERT_TRUE(again.capabilities.adagrad);
  EXPECT_TRUE(again.capabilities.adagrad->eps_root);
  EXPECT_EQ(again.recipe, d.recipe);
  const std::pair<std::string, std::string> faults[] = {
      {R"(,"adagrad":[])", "adagrad is not an object"},
      {R"(,"adagrad":{"eps_root":"yes"})", "adagrad.eps_root is not true or false"},
      {R"(,"adagrad":{"weight_decay":"coupled"})", "adagrad.weight_decay is not a list"},
      {R"(,"adagrad":{"weight_decay":["both"]})",
       "adagrad.weight_decay lists \"both\", expected \"coupled\" or \"decoupled\""},
      {R"(,"recipe":{"optimizers":["adagrad"]})",
       "recipe.optimizers: lists \"adagrad\", which the implementation does not declare"},
      {R"(,"adagrad":{},"recipe":{"hyperparameters":{"initial_accumulator_value":-1}})",
       "recipe.initial_accumulator_value: -1 lies outside"},
      {R"(,"recipe":{"hyperparameters":{"initial_accumulator_value":0.1}})",
       "recipe.initial_accumulator_value: no optimizer the recipe runs takes it"},
  };
  for (const auto& [fields, needle] : faults) expect_hello_error(hello_with(fields), needle);
}

TEST(Messages, StepAdagrad) {
  reference::Case c = reference::worked_example();
  c.optimizer.kind = reference::Optimizer::Kind::adagrad;
  c.optimizer.eps = 1e-10f;
  c.optimizer.initial_accumulator_value = 0.5f;
  const auto fresh = nlohmann::json::parse(encode_step(1, c));
  EXPECT_EQ(fresh.at("optimizer"), "adagrad");
  for (const char* key : {"eps", "eps_root", "initial_accumulator_value", "weight_decay", "decay"})
    EXPECT_TRUE(fresh.contains(key)) << key;
  for (const char* key : {"b1", "b2", "momentum", "second_moment_kernel", "momentum_kernel"})
    EXPECT_FALSE(fresh.contains(key)) << key;
  c.second_moment_kernel.assign(c.kernel.size(), 1.0f);
  c.second_moment_bias.assign(c.bias.size(), 1.0f);
  const auto carried = nlohmann::json::parse(encode_step(1, c));
  EXPECT_TRUE(carried.contains("second_moment_kernel"));
  EXPECT_FALSE(carried.contains("momentum_kernel"));
  // Its answer returns the sum as the second moment, and no buffer.
  reference::StepResult r;
  r.loss = {1.0f};
  r.kernel = r.grad_kernel = r.second_moment_kernel = c.kernel;
  r.bias = r.grad_bias = r.second_moment_bias = c.bias;
  const std::string answer = encode_result(7, r);
  properties::Capabilities promised;
  promised.grads = true;
  const properties::StepOutcome back = decode_answer(answer, 7, c, promised);
  ASSERT_TRUE(back.result);
  EXPECT_EQ(back.result->second_moment_kernel, r.second_moment_kernel);
  EXPECT_TRUE(back.result->momentum_kernel.empty());
  nlohmann::json lacking = nlohmann::json::parse(answer);
  lacking.erase("second_moment_bias");
  expect_protocol_error(lacking.dump(), "answer lacks second_moment_bias, which a adagrad step",
                        promised, c);
}

TEST(Messages, HelloMaxShards) {
  EXPECT_EQ(decode_hello(hello_with("")).capabilities.max_shards, 0) << "no limit";
  EXPECT_EQ(decode_hello(hello_with(R"(,"max_shards":1)")).capabilities.max_shards, 1);
  EXPECT_EQ(decode_hello(hello_with(R"(,"max_shards":8)")).capabilities.max_shards, 8);
  EXPECT_EQ(decode_hello(hello_with(R"(,"max_shards":2147483647)")).capabilities.max_shards,
            2147483647);
  for (const std::string bad : {"0", "-1", "2.5", "8.0", "\"8\"", "true", "null", "[8]"}) {
    expect_hello_error(hello_with(R"(,"max_shards":)" + bad),
                       "max_shards is not a positive integer: " + bad);
  }
  for (const std::string big : {"2147483648", "9223372036854775807", "18446744073709551615"}) {
    expect_hello_error(hello_with(R"(,"max_shards":)" + big),
                       "max_shards is " + big + ", more than the largest, 2^31 - 1");
  }
}

TEST(Messages, HelloMaxBatch) {
  EXPECT_EQ(decode_hello_reply(hello_with(""), false).max_batch, 1);
  EXPECT_EQ(decode_hello_reply(hello_with(R"(,"max_batch":1)"), false).max_batch, 1);
  EXPECT_EQ(decode_hello_reply(hello_with(R"(,"max_batch":4)"), false).max_batch, 4);
  // Values above 2^20 count as 2^20, however large.
  for (const std::string big :
       {"1048576", "1048577", "2147483648", "9223372036854775807", "18446744073709551615"}) {
    EXPECT_EQ(decode_hello_reply(hello_with(R"(,"max_batch":)" + big), false).max_batch, 1 << 20)
        << big;
    EXPECT_EQ(decode_hello_reply(hello_with(R"(,"max_in_flight":)" + big), false).max_in_flight,
              1 << 20)
        << big;
  }
  for (const std::string bad :
       {"0", "-1", "-9223372036854775808", "2.5", "4.0", "\"4\"", "false", "null", "{}"}) {
    expect_hello_error(hello_with(R"(,"max_batch":)" + bad),
                       "max_batch is not a positive integer: " + bad);
  }
  expect_hello_error(hello_with(R"(,"max_batch":1e3)"),
                     "max_batch is not a positive integer: 1000.0");
  // Each field is read for itself: a bad max_batch is not blamed on max_in_flight.
  expect_hello_error(hello_with(R"(,"max_in_flight":8,"max_batch":0)"),
                     "max_batch is not a positive integer: 0");
}

TEST(Messages, HelloPlacement) {
  namespace sharding = properties::sharding;
  EXPECT_EQ(decode_hello(hello_with("")).capabilities.placement, sharding::PlacementRule::flat);
  for (const auto rule : {sharding::PlacementRule::flat, sharding::PlacementRule::output_chunks,
                          sharding::PlacementRule::input_chunks}) {
    const std::string name = sharding::to_string(rule);
    EXPECT_EQ(decode_hello(hello_with(R"(,"placement":")" + name + "\"")).capabilities.placement,
              rule)
        << name;
  }
  for (const std::string bad : {R"("rows")", R"("")", R"("Flat")", R"(" flat")", "1", "null",
                                "true", R"(["flat"])", R"({"rule":"flat"})"}) {
    expect_hello_error(
        hello_with(R"(,"placement":)" + bad),
        "placement is " + bad + R"(, expected "flat", "output_chunks" or "input_chunks")");
  }
}

TEST(Messages, HelloCounter) {
  using reference::CounterEnd;
  using reference::CounterType;
  const properties::Declaration plain = decode_hello(hello_with(""));
  EXPECT_EQ(plain.counter.type, CounterType::int64);
  EXPECT_EQ(plain.counter.at_end, CounterEnd::untested);
  // Every type with every end it can have; unknown keys inside are ignored.
  for (const auto type : {CounterType::int32, CounterType::uint32, CounterType::int64,
                          CounterType::float32, CounterType::float64}) {
    const bool is_float = type == CounterType::float32 || type == CounterType::float64;
    for (const auto end : {CounterEnd::wrap, CounterEnd::saturate}) {
      const std::string reply =
          hello_with(R"(,"counter":{"dtype":")" + std::string(to_string(type)) + R"(","at_end":")" +
                     to_string(end) + R"(","bits":64})");
      if (is_float && end == CounterEnd::wrap) {
        expect_hello_error(reply, std::string(R"(counter.at_end is "wrap" for a )") +
                                      to_string(type) + " counter, which can only saturate");
        continue;
      }
      const properties::Declaration d = decode_hello(reply);
      EXPECT_EQ(d.counter.type, type) << reply;
      EXPECT_EQ(d.counter.at_end, end) << reply;
    }
  }
  const std::string shape = R"(counter is not an object {"dtype":..,"at_end":..}: )";
  for (const std::string bad : {R"("int64")", "null", "64", "[]", R"(["int64","wrap"])"})
    expect_hello_error(hello_with(R"(,"counter":)" + bad), shape + bad);
  const std::string types = R"(expected "int32", "uint32", "int64", "float32" or "float64")";
  expect_hello_error(hello_with(R"(,"counter":{"at_end":"wrap"})"),
                     "counter.dtype is missing, " + types);
  expect_hello_error(hello_with(R"(,"counter":{})"), "counter.dtype is missing, " + types);
  for (const std::string bad : {R"("int16")", R"("INT64")", R"("")", "64", "null", R"(["int64"])"})
    expect_hello_error(hello_with(R"(,"counter":{"dtype":)" + bad + R"(,"at_end":"wrap"})"),
                       "counter.dtype is " + bad + ", " + types);
  const std::string ends = R"(expected "wrap" or "saturate")";
  expect_hello_error(hello_with(R"(,"counter":{"dtype":"int32"})"),
                     "counter.at_end is missing, " + ends);
  // "untested" names the suite's own default; an adapter declares what its counter does.
  for (const std::string bad : {R"("untested")", R"("clamp")", R"("Wrap")", "true", "null", "0"})
    expect_hello_error(hello_with(R"(,"counter":{"dtype":"int32","at_end":)" + bad + "}"),
                       "counter.at_end is " + bad + ", " + ends);
}

TEST(Messages, HelloMomentum) {
  EXPECT_FALSE(decode_hello(hello_with("")).capabilities.momentum.has_value()) << "plain SGD";
  // Each key may be left out: false, false, no weight decay.
  const auto none = decode_hello(hello_with(R"(,"momentum":{})")).capabilities.momentum;
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->dampening || none->nesterov || none->coupled_decay || none->decoupled_decay);
  const auto all =
      decode_hello(hello_with(R"(,"momentum":{"dampening":true,"nesterov":true,)"
                              R"("weight_decay":["decoupled","coupled"],"lars":true})"))
          .capabilities.momentum;
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(all->dampening && all->nesterov && all->coupled_decay && all->decoupled_decay);
  const auto some = decode_hello(hello_with(R"(,"momentum":{"dampening":false,"nesterov":true,)"
                                            R"("weight_decay":["coupled","coupled"]})"))
                        .capabilities.momentum;
  ASSERT_TRUE(some.has_value());
  EXPECT_FALSE(some->dampening || some->decoupled_decay);
  EXPECT_TRUE(some->nesterov && some->coupled_decay);
  const auto empty_list =
      decode_hello(hello_with(R"(,"momentum":{"weight_decay":[]})")).capabilities.momentum;
  ASSERT_TRUE(empty_list.has_value());
  EXPECT_FALSE(empty_list->coupled_decay || empty_list->decoupled_decay);

  for (const std::string bad : {"true", "false", "null", R"("sgd")", "0.9", "[]"})
    expect_hello_error(hello_with(R"(,"momentum":)" + bad), "momentum is not an object: " + bad);
  for (const std::string key : {"dampening", "nesterov"}) {
    for (const std::string bad : {R"("yes")", "1", "0", "null", "[]"})
      expect_hello_error(hello_with(R"(,"momentum":{")" + key + R"(":)" + bad + "}"),
                         "momentum." + key + " is not true or false: " + bad);
  }
  for (const std::string bad : {R"("coupled")", "true", "null", R"({"coupled":true})"})
    expect_hello_error(hello_with(R"(,"momentum":{"weight_decay":)" + bad + "}"),
                       "momentum.weight_decay is not a list: " + bad);
  for (const std::string bad : {R"("l2")", R"("Coupled")", R"("")", "1", "null", R"(["coupled"])"})
    expect_hello_error(
        hello_with(R"(,"momentum":{"weight_decay":["coupled",)" + bad + "]}"),
        "momentum.weight_decay lists " + bad + R"(, expected "coupled" or "decoupled")");
}

TEST(Messages, HelloReplyEncodesEveryDeclarationBack) {
  properties::Declaration d;
  d.name = "x";
  d.version = "1";
  d.capabilities = all_capabilities();
  d.capabilities.max_shards = 4;
  d.capabilities.placement = properties::sharding::PlacementRule::input_chunks;
  d.counter = {reference::CounterType::uint32, reference::CounterEnd::saturate};
  d.capabilities.momentum = properties::MomentumSupport{.nesterov = true, .decoupled_decay = true};
  const properties::Declaration back = decode_hello(encode_hello_reply(d));
  EXPECT_EQ(back.capabilities.max_shards, 4);
  EXPECT_EQ(back.capabilities.placement, properties::sharding::PlacementRule::input_chunks);
  EXPECT_EQ(back.counter.type, reference::CounterType::uint32);
  EXPECT_EQ(back.counter.at_end, reference::CounterEnd::saturate);
  ASSERT_TRUE(back.capabilities.momentum.has_value());
  EXPECT_TRUE(back.capabilities.momentum->nesterov && back.capabilities.momentum->decoupled_decay);
  EXPECT_FALSE(back.capabilities.momentum->dampening || back.capabilities.momentum->coupled_decay);
}

// The worked example as a momentum step (the spec's step-momentum example).
reference::Case momentum_case() {
  reference::Case c = reference::worked_example();
  c.optimizer.kind = reference::Optimizer::Kind::momentum;
  c.optimizer.momentum = 0.5f;
  c.optimizer.nesterov = true;
  c.optimizer.weight_decay = 0.25f;
  c.momentum_kernel = {1.0f};
  c.momentum_bias = {2.0f};
  return c;
}

// An answer to the momentum case: loss, kernel and bias, then `buffer`.
std::string momentum_answer(const std::string& buffer) {
  return answer("7", R"("loss":"AAAgQA==","kernel":"AAAAPw==","bias":"mpmZvg==")" + buffer);
}

// The buffer of a momentum answer: 4 (0x40800000) for the kernel, -0.5 for the bias.
const std::string momentum_buffer = R"(,"momentum_kernel":"AACAQA==","momentum_bias":"AAAAvw==")";

TEST(Messages, MomentumResultDecodes) {
  const properties::StepOutcome out =
      decode_answer(momentum_answer(momentum_buffer), 7, momentum_case(), {});
  ASSERT_TRUE(out.result.has_value());
  EXPECT_EQ(out.result->momentum_kernel, std::vector<float>{4.0f});
  EXPECT_EQ(out.result->momentum_bias, std::vector<float>{-0.5f});
  // In fresh state (no buffer sent) the answer still carries the buffer after the step.
  reference::Case fresh = momentum_case();
  fresh.momentum_kernel.clear();
  fresh.momentum_bias.clear();
  EXPECT_EQ(decode_answer(momentum_answer(momentum_buffer), 7, fresh, {}).result->momentum_bias,
            std::vector<float>{-0.5f});
  // A plain SGD step has no buffer: one in its answer is ignored, like an unknown field.
  const properties::StepOutcome plain =
      decode_answer(momentum_answer(R"(,"momentum_kernel":[1],"momentum_bias":"!")"), 7,
                    reference::worked_example(), {});
  ASSERT_TRUE(plain.result.has_value());
  EXPECT_TRUE(plain.result->momentum_kernel.empty());
  EXPECT_TRUE(plain.result->momentum_bias.empty());
  // Encoded again, the buffer decodes again.
  EXPECT_EQ(
      decode_answer(encode_result(7, *out.result), 7, momentum_case(), {}).result->momentum_kernel,
      std::vector<float>{4.0f});
}

TEST(Messages, MomentumResultRejections) {
  const reference::Case c = momentum_case();
  const auto expect = [&](const std::string& buffer, const std::string& needle) {
    expect_protocol_error(momentum_answer(buffer), needle, {}, c);
  };
  expect("", "answer lacks momentum_kernel, which a momentum step returns");
  expect(R"(,"momentum_kernel":"AACAQA==")",
         "answer lacks momentum_bias, which a momentum step returns");
  expect(R"(,"momentum_bias":"AAAAvw==")", "answer lacks momentum_kernel");
  for (const auto& [key, other] :
       {std::pair<std::string, std::string>{"momentum_kernel", R"("momentum_bias":"AAAAvw==")"},
        {"momentum_bias", R"("momentum_kernel":"AACAQA==")"}}) {
    const auto with = [&](const std::string& value) {
      return ",\"" + key + "\":" + value + "," + other;
    };
    expect(with(R"("AACAQAAAgEA=")"), key + " has 2 values, expected 1");
    expect(with(R"("")"), key + " has 0 values, expected 1");
    expect(with("[4.0]"), key + " is not a base64 string: [4.0]");
    expect(with("4.0"), key + " is not a base64 string: 4.0");
    expect(with("null"), key + " is not a base64 string: null");
    expect(with(R"({"offset":0,"count":1})"), key + " is not a base64 string");
    // NaN as text is not base64 (NaN's bits are, e.g. "AADAfw=="); a bare NaN is not JSON.
    expect(with(R"("NaN")"), key + " is not valid base64");
    expect(with(R"("nan=")"), key + " is not valid base64");
    expect(with("NaN"), "answer is not JSON");
    expect(with(R"("AACAQA=")"), key + " is not valid base64");
  }
  // Every bit pattern is a value, NaN included.
  const properties::StepOutcome nan = decode_answer(
      momentum_answer(R"(,"momentum_kernel":"AADAfw==","momentum_bias":"AAAAvw==")"), 7, c, {});
  ASSERT_TRUE(nan.result.has_value());
  EXPECT_EQ(float_bits(nan.result->momentum_kernel.at(0)), 0x7FC00000u);
}

TEST(Messages, BinaryMomentumResult) {
  const reference::Case c = momentum_case();
  const std::string head =
      R"({"op":"result","id":7,"loss":{"offset":0,"count":1},"kernel":{"offset":4,"count":1},)"
      R"("bias":{"offset":8,"count":1},)";
  const std::string payload = le_bytes({2.5f, 0.5f, -0.3f, 4.0f, -0.5f});
  const std::string good = head + R"("momentum_kernel":{"offset":12,"count":1},)"
                                  R"("momentum_bias":{"offset":16,"count":1},"payload":20})";
  const properties::StepOutcome out =
      decode_answer(Frame{good, payload}, 7, c, {}, ArrayEncoding::binary);
  ASSERT_TRUE(out.result.has_value());
  EXPECT_EQ(out.result->momentum_kernel, std::vector<float>{4.0f});
  EXPECT_EQ(out.result->momentum_bias, std::vector<float>{-0.5f});
  const Frame again = encode_result(7, *out.result, ArrayEncoding::binary);
  EXPECT_EQ(decode_answer(again, 7, c, {}, ArrayEncoding::binary).result->momentum_bias,
            std::vector<float>{-0.5f});

  const auto expect = [&](const std::string& line, const std::string& bytes,
                          const std::string& needle) {
    try {
      decode_answer(Frame{line, bytes}, 7, c, {}, ArrayEncoding::binary);
      ADD_FAILURE() << "accepted: " << line;
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string line = good;
    line.replace(line.find(from), from.size(), to);
    return line;
  };
  expect(good, payload.substr(0, 17),
         "momentum_bias (bytes 16 to 20) lies outside the 17-byte payload");
  expect(with(R"("momentum_bias":{"offset":16,"count":1},)", ""), payload,
         "answer lacks momentum_bias, which a momentum step returns");
  expect(with(R"({"offset":12,"count":1})", R"({"offset":12,"count":2})"), payload,
         "momentum_kernel has 2 values, expected 1");
  expect(with(R"({"offset":12,"count":1})", R"({"offset":12})"), payload,
         "momentum_kernel has no count");
  expect(with(R"({"offset":12,"count":1})", R"({"offset":-12,"count":1})"), payload,
         "momentum_kernel.offset is not a non-negative integer: -12");
  expect(with(R"({"offset":16,"count":1})", R"({"offset":16,"count":1.0})"), payload,
         "momentum_bias.count is not a non-negative integer: 1.0");
  expect(with(R"({"offset":12,"count":1})", R"("AACAQA==")"), payload,
         "momentum_kernel is not a binary array reference");
}

// An answer with grads and step, and the shard list `shards`.
std::string shards_answer(const std::string& shards) {
  return answer("7", R"("loss":"AAAgQA==","kernel":"AAAAPw==","bias":"mpmZvg==","step":1,)"
                     R"("grad_kernel":"AACgQA==","grad_bias":"AABAQA==","shards":)" +
                         shards);
}

TEST(Messages, ShardsWithOptimizerState) {
  const properties::StepOutcome out =
      decode_answer(shards_answer(R"([{"kernel":1,"bias":1,"state_kernel":1,"state_bias":1},)"
                                  R"({"kernel":0,"bias":0,"state_kernel":0,"state_bias":0},)"
                                  R"({"kernel":0,"bias":0,"state_kernel":2147483647}])"),
                    7, reference::worked_example(), all_capabilities());
  ASSERT_TRUE(out.result && out.result->shards);
  const std::vector<reference::ShardPart>& s = *out.result->shards;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].state_kernel, 1);
  EXPECT_EQ(s[0].state_bias, 1);
  EXPECT_EQ(s[1].state_kernel, 0);
  EXPECT_EQ(s[2].state_kernel, 2147483647);
  EXPECT_FALSE(s[2].state_bias.has_value()) << "reported alone; the placement property asks";
  // Without state counts (plain SGD) both stay empty.
  const properties::StepOutcome plain =
      decode_answer(shards_answer(R"([{"kernel":1,"bias":1}])"), 7, reference::worked_example(),
                    all_capabilities());
  EXPECT_FALSE(plain.result->shards->at(0).state_kernel.has_value());
  EXPECT_FALSE(plain.result->shards->at(0).state_bias.has_value());
  // Encoded again, the state counts decode again.
  const properties::StepOutcome again = decode_answer(
      encode_result(7, *out.result), 7, reference::worked_example(), all_capabilities());
  EXPECT_EQ(again.result->shards->at(0).state_kernel, 1);
  EXPECT_EQ(again.result->shards->at(2).state_kernel, 2147483647);
  EXPECT_FALSE(again.result->shards->at(2).state_bias.has_value());
}

TEST(Messages, ShardCountRejections) {
  for (const std::string key : {"kernel", "bias", "state_kernel", "state_bias"}) {
    const auto with = [&](const std::string& value) {
      std::string entry = R"({"kernel":1,"bias":1,"state_kernel":1,"state_bias":1})";
      const std::string field = "\"" + key + "\":1";
      entry.replace(entry.find(field), field.size(), "\"" + key + "\":" + value);
      return shards_answer(R"([{"kernel":0,"bias":0},)" + entry + "]");
    };
    for (const std::string bad :
         {"-1", "-9223372036854775808", "0.5", "1.0", "\"1\"", "true", "null", "[1]", "{}"}) {
      expect_protocol_error(with(bad),
                            "shards[1]." + key + " is not a non-negative integer: " + bad);
    }
    expect_protocol_error(with("1e3"),
                          "shards[1]." + key + " is not a non-negative integer: 1000.0");
    for (const std::string big : {"2147483648", "9223372036854775807", "18446744073709551615"}) {
      expect_protocol_error(with(big),
                            "shards[1]." + key + " is " + big + ", more than the largest count");
    }
  }
  expect_protocol_error(shards_answer(R"([{"bias":0,"state_kernel":1,"state_bias":1}])"),
                        "shards[0] has no kernel");
  expect_protocol_error(shards_answer(R"([{"kernel":1,"bias":1},null])"),
                        "shards[1] is not an object: null");
  expect_protocol_error(shards_answer("null"), "shards is not a list: null");
}

TEST(Messages, WrongShardCountIsLeftToThePlacementProperty) {
  // The decoder reads every entry; the placement property names the wrong count.
  for (const std::string list : {"[]", R"([{"kernel":1,"bias":1},{"kernel":0,"bias":0}])"}) {
    const properties::StepOutcome out =
        decode_answer(shards_answer(list), 7, reference::worked_example(), all_capabilities());
    ASSERT_TRUE(out.result && out.result->shards) << list;
    const auto why = properties::sharding::layout_violation(*out.result->shards, 1, 1, 1);
    ASSERT_TRUE(why.has_value()) << list;
    EXPECT_NE(
        why->find(std::to_string(out.result->shards->size()) + " shards reported for num_shards=1"),
        std::string::npos)
        << *why;
  }
  // Counts at the largest the decoder reads keep the placement check's sums in range.
  const properties::StepOutcome huge =
      decode_answer(shards_answer(R"([{"kernel":2147483647,"bias":2147483647,)"
                                  R"("state_kernel":2147483647,"state_bias":2147483647}])"),
                    7, reference::worked_example(), all_capabilities());
  const auto why = properties::sharding::layout_violation(
      *huge.result->shards, 1, 1, 1, properties::sharding::PlacementRule::flat, 1);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("stored 2147483647 times over"), std::string::npos) << *why;
}

}  // namespace
}  // namespace sgdc::conformance::protocol