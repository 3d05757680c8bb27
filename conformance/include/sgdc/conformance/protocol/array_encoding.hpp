#pragma once
/// \file
/// How float arrays travel in protocol v1: base64 strings inside the JSON line (the
/// spec's encoding), or raw bytes after the line (the negotiated "binary" extension,
/// docs/spec/protocol.md). Both carry IEEE-754 binary32 little-endian values.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sgdc::conformance::protocol {

/// The array encoding of a conversation, fixed by the handshake.
enum class ArrayEncoding {
  base64,  ///< every array is a base64 string in the JSON line (protocol v1 as published)
  binary,  ///< arrays are {"offset","count"} references into a payload after the line
};

/// "base64" or "binary", the names used on the wire.
std::string_view to_string(ArrayEncoding e);

/// Appends the IEEE-754 binary32 little-endian bytes of `values` to `out`, whatever
/// the host's byte order.
void append_float_bytes(std::string& out, std::span<const float> values);

/// The float32 values of little-endian `bytes`; `bytes.size()` must be a multiple of 4
/// (throws std::invalid_argument otherwise).
std::vector<float> floats_from_bytes(std::string_view bytes);

}  // namespace sgdc::conformance::protocol