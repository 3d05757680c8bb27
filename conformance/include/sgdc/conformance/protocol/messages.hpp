#pragma once
/// \file
/// Protocol v1 messages (see shared/spec/adapter-protocol.md and
/// docs/protocol-extensions.md): encoding what the suite sends and strictly decoding
/// what the adapter answers. Each message is one JSON object, without the trailing
/// newline.

#include <cstdint>
#include <string>
#include <string_view>

#include "sgdc/conformance/protocol/protocol_error.hpp"
#include "sgdc/properties/implementation.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::protocol {

/// The protocol version this suite speaks.
inline constexpr int protocol_version = 1;

/// `{"op":"hello","protocol":1}`
std::string encode_hello();

/// `{"op":"step","id":ID,"n":..,"d":..,"k":..,"num_shards":..,"step":..,"lr":..,
/// "kernel":..,"bias":..,"x":..,"y":..}`, fields in the spec's order. The case is sent
/// as given, without validation, so an implementation's rejection of bad input can be
/// tested too.
std::string encode_step(std::int64_t id, const Case& c);

/// `{"op":"bye"}`
std::string encode_bye();

/// Decodes the adapter's hello reply into who it is and what it promises. Requires
/// op "hello", protocol 1, string name and version, and a capabilities array of
/// strings ("grads", "step_counter", "shard_layout"; unknown ones are ignored for
/// forward compatibility). Reads the optional extension fields "subnormals" ("ieee" or
/// "ftz", default ieee), "unit_roundoff" (a number in (0, 1), default 2^-24) and
/// "sharded" (bool, default false) and "max_shards" (a positive integer, default no
/// limit) into Declaration::arithmetic, Capabilities::sharded and
/// Capabilities::max_shards. Other fields are ignored. Throws ProtocolError.
Declaration decode_hello(std::string_view line);

/// Decodes the adapter's answer to case `id`: a result, or its rejection of the input
/// (op "error"), which is an answer and not a fault. Validates everything: a JSON
/// object, op "result" or "error", the same integer id, every array strict base64 of
/// exactly the right count (loss 1, kernel d*k, bias k, grad_kernel d*k, grad_bias k),
/// and every output `promised` (grads, step_counter, shard_layout): an integer step, a
/// shards list of objects with non-negative integer kernel and bias counts. Optional
/// outputs that were not promised are ignored, like unknown fields, and left empty in
/// the result. Throws ProtocolError.
StepOutcome decode_answer(std::string_view line, std::int64_t id, const Case& c,
                          const Capabilities& promised);

/// The hello reply an adapter declaring `d` would send, extension fields included.
/// For in-process fakes and tests; decode_hello inverts it.
std::string encode_hello_reply(const Declaration& d);

/// The result message an adapter would send for `r`; optional outputs are written
/// when present. For in-process fakes and tests.
std::string encode_result(std::int64_t id, const StepResult& r);

/// `{"op":"error","id":ID,"message":MESSAGE}`. For in-process fakes and tests.
std::string encode_error(std::int64_t id, std::string_view message);

}  // namespace sgdc::protocol
