#include "sgdc/reference/float32.hpp"

#include <bit>
#include <cmath>
#include <cstdio>

namespace sgdc::reference {

namespace {
// Maps floats onto integers so that adjacent floats differ by one and -0 == +0.
std::int64_t ordered(float v) {
  const auto bits = std::bit_cast<std::uint32_t>(v);
  const auto magnitude = static_cast<std::int64_t>(bits & 0x7fffffffu);
  return (bits & 0x80000000u) ? -magnitude : magnitude;
}
}  // namespace

std::uint64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<std::uint64_t>::max();
  }
  const std::int64_t diff = ordered(a) - ordered(b);
  return static_cast<std::uint64_t>(diff < 0 ? -diff : diff);
}

std::string describe(float v) {
  // NaN and infinities by name (a NaN with its bits: their payloads can tell sources apart).
  if (std::isnan(v))
    return "NaN (bits 0x" + [&] {
      char bits[16];
      std::snprintf(bits, sizeof bits, "%08x", std::bit_cast<std::uint32_t>(v));
      return std::string(bits);
    }() + ")";
  if (std::isinf(v)) return v > 0 ? "+infinity" : "-infinity";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (%a)", static_cast<double>(v), static_cast<double>(v));
  return buf;
}

bool same_bits(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

}  // namespace sgdc::reference