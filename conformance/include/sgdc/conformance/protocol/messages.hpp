#pragma once
/// \file
/// Protocol v1 messages (docs/spec/protocol.md): encoding what the suite sends and strictly
/// decoding what the adapter answers. Each message is one JSON object, without the trailing
/// newline; with binary arrays, a step or result also has the payload that follows it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sgdc/conformance/protocol/array_encoding.hpp"
#include "sgdc/conformance/protocol/protocol_error.hpp"
#include "sgdc/properties/implementation.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::conformance::protocol {

/// The protocol version this suite speaks.
inline constexpr int protocol_version = 1;

/// One message as it travels: its JSON line (without the '\n') and, with binary
/// arrays, the `payload` bytes that follow the line (empty otherwise).
struct Frame {
  std::string line;
  std::string payload;
};

/// `{"op":"hello","protocol":1}`; with `offer_binary`, the suite also offers binary
/// arrays: `{"op":"hello","protocol":1,"array_encodings":["base64","binary"]}`.
std::string encode_hello(bool offer_binary = false);

/// `{"op":"step","id":ID,"n":..,"d":..,"k":..,"num_shards":..,"step":..,"lr":..,
/// "kernel":..,"bias":..,"x":..,"y":..}`, fields in the spec's order, arrays in base64.
/// The case is sent as given, without validation, so an implementation's rejection of
/// bad input can be tested too.
std::string encode_step(std::int64_t id, const reference::Case& c);

/// Where a step message stands in a batch (`batch_index`, `batch_size`).
struct BatchPosition {
  int index = 0;
  int size = 1;
};

/// The same case with `arrays` encoding. Binary: each array is `{"offset":O,"count":C}`
/// and the line ends with `"payload":BYTES`; the payload holds lr, kernel, bias, x and y
/// in that order, each at its offset. With `batch`, the message carries its place in a
/// batch (sent only to adapters that declare `max_batch`).
Frame encode_step(std::int64_t id, const reference::Case& c, ArrayEncoding arrays,
                  std::optional<BatchPosition> batch = std::nullopt);

/// `{"op":"bye"}`
std::string encode_bye();

/// Decodes the adapter's hello reply into who it is and what it promises. Requires
/// op "hello", protocol 1, string name and version, and a capabilities array of
/// strings ("grads", "step_counter", "shard_layout"; unknown ones are ignored for
/// forward compatibility). Reads the optional extension fields "subnormals" ("ieee" or
/// "ftz", default ieee), "unit_roundoff" (a number in (0, 1), default 2^-24, or the
/// compute format's), "compute_format" (a format's name or its fraction bits and
/// exponent range, default float32), "sharded" (bool, default false), "max_shards" (a
/// positive integer, default no limit) and the others of docs/spec/protocol.md into
/// Declaration::arithmetic and Capabilities. Other fields are ignored. Throws ProtocolError.
properties::Declaration decode_hello(std::string_view line);

/// A decoded hello reply: the declaration and how the adapter wants to be spoken to.
struct Hello {
  properties::Declaration declaration;
  ArrayEncoding arrays = ArrayEncoding::base64;
  int max_in_flight = 1;  ///< cases it accepts before answering the first
  int max_batch = 1;      ///< cases it takes as one batch
};

/// decode_hello, plus the adapter's choice of array encoding, its optional
/// "array_encoding" field, "base64" (the default) or "binary", which is only valid when
/// the suite offered it (`binary_offered`), and its optional "max_in_flight" (a positive
/// integer, default 1), "max_batch" (a positive integer, default 1; both count as 2^20
/// above it, however large), "placement", "counter" and "momentum"
/// (docs/spec/protocol.md). Throws ProtocolError.
Hello decode_hello_reply(std::string_view line, bool binary_offered);

/// With binary arrays: how many payload bytes follow the answer `line`, from its
/// "payload" field (0 when absent, as in an error answer). Throws ProtocolError when
/// the line is not a JSON object, or "payload" is not a non-negative integer or exceeds
/// `limit` bytes.
std::size_t payload_size(std::string_view line, std::size_t limit);

/// Decodes the adapter's answer to case `id`: a result, or its rejection of the input
/// (op "error"), which is an answer and not a fault. Validates everything: a JSON
/// object, op "result" or "error", the same integer id, every array strict base64 of
/// exactly the right count (loss 1, kernel d*k, bias k, grad_kernel d*k, grad_bias k),
/// and every output `promised` (grads, step_counter, shard_layout): an integer step, a
/// shards list of objects with integer kernel and bias counts from 0 to 2^31 - 1 (and
/// state_kernel, state_bias likewise where present). The answer to a momentum step also
/// carries the buffer (momentum_kernel d*k, momentum_bias k). Optional outputs that were
/// not promised are ignored, like unknown fields, and left empty in the result. Throws
/// ProtocolError.
properties::StepOutcome decode_answer(std::string_view line, std::int64_t id,
                                      const reference::Case& c,
                                      const properties::Capabilities& promised);

/// The same with `arrays` encoding. Binary: every array must be an
/// `{"offset":O,"count":C}` object with non-negative integers, the right count, and
/// bytes [O, O + 4C) inside `answer.payload`.
properties::StepOutcome decode_answer(const Frame& answer, std::int64_t id,
                                      const reference::Case& c,
                                      const properties::Capabilities& promised,
                                      ArrayEncoding arrays);

/// The hello reply an adapter declaring `d` would send, extension fields included.
/// For in-process fakes and tests; decode_hello inverts it.
std::string encode_hello_reply(const properties::Declaration& d);

/// The result message an adapter would send for `r`; optional outputs are written
/// when present. For in-process fakes and tests.
std::string encode_result(std::int64_t id, const reference::StepResult& r);

/// The same with `arrays` encoding (binary: arrays in the order loss, kernel, bias,
/// grad_kernel, grad_bias).
Frame encode_result(std::int64_t id, const reference::StepResult& r, ArrayEncoding arrays);

/// `{"op":"error","id":ID,"message":MESSAGE}`. For in-process fakes and tests.
std::string encode_error(std::int64_t id, std::string_view message);

}  // namespace sgdc::conformance::protocol