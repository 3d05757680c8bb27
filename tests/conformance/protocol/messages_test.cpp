#include "sgdc/conformance/protocol/messages.hpp"
#include "sgdc/reference/worked_example.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace sgdc::conformance::protocol {
namespace {

properties::Capabilities all_capabilities() {
  properties::Capabilities c;
  c.grads = c.step_counter = c.shard_layout = true;
  return c;
}

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

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
  EXPECT_EQ(bits(r.bias[0]), bits(-0.3f));
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
    const std::uint32_t u = bits(f);
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
  EXPECT_EQ(bits(out.result->bias.at(0)), bits(-0.3f));
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
  EXPECT_EQ(bits(back.kernel.at(0)), 0x7FC01234u);
  EXPECT_EQ(bits(back.bias.at(0)), bits(-0.0f));
  EXPECT_EQ(bits(back.loss.at(0)), 1u);
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

}  // namespace
}  // namespace sgdc::conformance::protocol