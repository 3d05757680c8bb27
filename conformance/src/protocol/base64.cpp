#include "sgdc/conformance/protocol/base64.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>

namespace sgdc::protocol {
namespace {

constexpr std::string_view alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Value of each character of the alphabet, -1 for everything else ('=' included).
constexpr std::array<std::int8_t, 256> make_values() {
  std::array<std::int8_t, 256> v{};
  for (auto& x : v) x = -1;
  for (std::size_t i = 0; i < alphabet.size(); ++i) {
    v[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  }
  return v;
}
constexpr auto values = make_values();

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

std::string describe_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7F) return fmt::format("'{}'", c);
  return fmt::format("'\\x{:02x}'", u);
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto byte = [&](std::size_t j) -> std::uint32_t {
    return static_cast<unsigned char>(bytes[j]);
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t w = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += alphabet[w >> 18 & 63];
    out += alphabet[w >> 12 & 63];
    out += alphabet[w >> 6 & 63];
    out += alphabet[w & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const std::uint32_t w = byte(i) << 16;
    out += alphabet[w >> 18 & 63];
    out += alphabet[w >> 12 & 63];
    out += "==";
  } else if (rest == 2) {
    const std::uint32_t w = byte(i) << 16 | byte(i + 1) << 8;
    out += alphabet[w >> 18 & 63];
    out += alphabet[w >> 12 & 63];
    out += alphabet[w >> 6 & 63];
    out += '=';
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    bad(fmt::format("length {} is not a multiple of 4", text.size()));
  }
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') {
    ++padding;
    if (text[text.size() - 2] == '=') ++padding;  // size is a multiple of 4, so >= 4
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  const std::size_t data_end = text.size() - padding;
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < data_end; ++i) {
    const char c = text[i];
    const int v = values[static_cast<unsigned char>(c)];
    if (v < 0) {
      if (c == '=') bad(fmt::format("padding '=' inside the data at offset {}", i));
      bad(fmt::format("invalid character {} at offset {}", describe_char(c), i));
    }
    acc = (acc << 6 | static_cast<std::uint32_t>(v)) & 0xFFFFFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(acc >> bits & 0xFF);
    }
  }
  // With 1 or 2 '=' the last quantum carries 2 or 4 bits beyond its bytes; a
  // canonical encoder (RFC 4648 section 3.5) writes them as zero.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
    bad(fmt::format("non-zero bits after the last byte at offset {} (not canonical base64)",
                    data_end - 1));
  }
  return out;
}

std::string encode_floats(std::span<const float> values_in) {
  std::string bytes;
  bytes.reserve(values_in.size() * 4);
  for (const float f : values_in) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    // Explicit little-endian order, whatever the host's.
    bytes += static_cast<char>(u & 0xFF);
    bytes += static_cast<char>(u >> 8 & 0xFF);
    bytes += static_cast<char>(u >> 16 & 0xFF);
    bytes += static_cast<char>(u >> 24 & 0xFF);
  }
  return base64_encode(bytes);
}

std::vector<float> decode_floats(std::string_view text) {
  const std::string bytes = base64_decode(text);
  if (bytes.size() % 4 != 0) {
    bad(fmt::format("{} bytes is not a whole number of float32 values", bytes.size()));
  }
  std::vector<float> out;
  out.reserve(bytes.size() / 4);
  for (std::size_t i = 0; i < bytes.size(); i += 4) {
    const auto b = [&](std::size_t j) -> std::uint32_t {
      return static_cast<unsigned char>(bytes[i + j]);
    };
    out.push_back(std::bit_cast<float>(b(0) | b(1) << 8 | b(2) << 16 | b(3) << 24));
  }
  return out;
}

}  // namespace sgdc::protocol
