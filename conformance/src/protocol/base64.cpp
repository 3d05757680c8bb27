#include "protocol/base64.hpp"

#include "sgdc/conformance/protocol/array_encoding.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>

namespace sgdc::conformance::protocol {
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

[[noreturn]] void bad_base64(const std::string& what) { throw std::invalid_argument(what); }

std::string describe_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7F) return fmt::format("'{}'", c);
  return fmt::format("'\\x{:02x}'", u);
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  // Written in place into a sized string: appending char by char costs several times more
  // on the arrays of a large case.
  std::string out((bytes.size() + 2) / 3 * 4, '=');
  char* o = out.data();
  const auto byte = [&](std::size_t j) -> std::uint32_t {
    return static_cast<unsigned char>(bytes[j]);
  };
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t w = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    *o++ = alphabet[w >> 18 & 63];
    *o++ = alphabet[w >> 12 & 63];
    *o++ = alphabet[w >> 6 & 63];
    *o++ = alphabet[w & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    const std::uint32_t w = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0u);
    *o++ = alphabet[w >> 18 & 63];
    *o++ = alphabet[w >> 12 & 63];
    if (rest == 2) *o++ = alphabet[w >> 6 & 63];
    // The rest is already '=' padding.
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    bad_base64(fmt::format("length {} is not a multiple of 4", text.size()));
  }
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') {
    ++padding;
    if (text[text.size() - 2] == '=') ++padding;  // size is a multiple of 4, so >= 4
  }
  const std::size_t data_end = text.size() - padding;
  std::string out(data_end * 6 / 8, '\0');
  char* o = out.data();
  const auto value = [&](std::size_t i) -> std::uint32_t {
    const char c = text[i];
    const int v = values[static_cast<unsigned char>(c)];
    if (v < 0) {
      if (c == '=') bad_base64(fmt::format("padding '=' inside the data at offset {}", i));
      bad_base64(fmt::format("invalid character {} at offset {}", describe_char(c), i));
    }
    return static_cast<std::uint32_t>(v);
  };
  std::size_t i = 0;
  // Whole quanta: 4 characters, 3 bytes.
  for (; i + 4 <= data_end; i += 4) {
    const std::uint32_t w = value(i) << 18 | value(i + 1) << 12 | value(i + 2) << 6 | value(i + 3);
    *o++ = static_cast<char>(w >> 16);
    *o++ = static_cast<char>(w >> 8 & 0xFF);
    *o++ = static_cast<char>(w & 0xFF);
  }
  // The last quantum before 1 or 2 '=' (so never 1 character): 3 or 2 characters, 2 or 1
  // bytes.
  if (const std::size_t rest = data_end - i; rest > 0) {
    std::uint32_t w = value(i) << 18 | value(i + 1) << 12;
    if (rest == 3) w |= value(i + 2) << 6;
    *o++ = static_cast<char>(w >> 16);
    if (rest == 3) *o++ = static_cast<char>(w >> 8 & 0xFF);
    // A canonical encoder (RFC 4648 section 3.5) writes the bits beyond the last byte as
    // zero.
    if ((w & (rest == 3 ? 0xFFu : 0xFFFFu)) != 0) {
      bad_base64(fmt::format(
          "non-zero bits after the last byte at offset {} (not canonical base64)", data_end - 1));
    }
  }
  return out;
}

std::string encode_floats(std::span<const float> values_in) {
  std::string bytes;
  append_float_bytes(bytes, values_in);
  return base64_encode(bytes);
}

std::vector<float> decode_floats(std::string_view text) {
  return floats_from_bytes(base64_decode(text));
}

}  // namespace sgdc::conformance::protocol