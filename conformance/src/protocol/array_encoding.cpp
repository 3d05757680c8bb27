#include "sgdc/conformance/protocol/array_encoding.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace sgdc::conformance::protocol {

std::string_view to_string(ArrayEncoding e) {
  return e == ArrayEncoding::binary ? "binary" : "base64";
}

void append_float_bytes(std::string& out, std::span<const float> values) {
  const std::size_t start = out.size();
  out.resize(start + 4 * values.size());
  char* dst = out.data() + start;
  if constexpr (std::endian::native == std::endian::little) {
    // The bulk of every message: one copy, no per-byte work.
    if (!values.empty()) std::memcpy(dst, values.data(), 4 * values.size());
  } else {
    for (const float f : values) {
      const auto u = std::bit_cast<std::uint32_t>(f);
      for (int b = 0; b < 4; ++b) *dst++ = static_cast<char>(u >> (8 * b) & 0xFF);
    }
  }
}

std::vector<float> floats_from_bytes(std::string_view bytes) {
  if (bytes.size() % 4 != 0) {
    throw std::invalid_argument(
        fmt::format("{} bytes is not a whole number of float32 values", bytes.size()));
  }
  std::vector<float> out(bytes.size() / 4);
  if constexpr (std::endian::native == std::endian::little) {
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint32_t u = 0;
      for (int b = 0; b < 4; ++b) {
        u |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[4 * i + b])) << (8 * b);
      }
      out[i] = std::bit_cast<float>(u);
    }
  }
  return out;
}

}  // namespace sgdc::conformance::protocol