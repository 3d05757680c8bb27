#pragma once
/// \file
/// Base64 (RFC 4648, standard alphabet, padded) of little-endian float32 arrays: how
/// protocol v1 carries every float array, exact for every bit pattern.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sgdc::conformance::protocol {

/// Standard base64 of `bytes`, padded with '=' to a multiple of 4 characters.
std::string base64_encode(std::string_view bytes);

/// Decodes canonical, padded standard base64. Strict: throws std::invalid_argument,
/// saying what is wrong and where, for a length that is not a multiple of 4, a
/// character outside the alphabet (whitespace included), misplaced or excess '=', or
/// non-zero bits after the last byte.
std::string base64_decode(std::string_view text);

/// Base64 of the IEEE-754 binary32 little-endian bytes of `values`, in order. Every
/// bit pattern (NaN payloads, -0, subnormals, infinities) is kept.
std::string encode_floats(std::span<const float> values);

/// Inverse of encode_floats. Throws std::invalid_argument when `text` is not strict
/// base64 (see base64_decode) or does not decode to a whole number of float32 values.
std::vector<float> decode_floats(std::string_view text);

}  // namespace sgdc::conformance::protocol