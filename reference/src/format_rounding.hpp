#pragma once
// Format::max_finite and round_to_format, inline for the loops that round every element
// (the staged step rounds both endpoints of every interval, and a call each cost it a
// seventh of its time). error_model.cpp defines the public functions from these.
// Internal to sgdc::reference.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "sgdc/reference/error_model.hpp"

namespace sgdc::reference::detail {

/// 2^e for -1022 <= e <= 1023, from its bits.
inline double power_of_two(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

/// Format::max_finite: from the bits where the powers are normal doubles (every format
/// the bounds cover).
inline double largest_finite(const Format& f) {
  if (f.fraction_bits >= 0 && f.fraction_bits <= 1022 && f.max_exponent >= -1022 &&
      f.max_exponent <= 1023)
    return (2.0 - power_of_two(-f.fraction_bits)) * power_of_two(f.max_exponent);
  return (2.0 - std::ldexp(1.0, -f.fraction_bits)) * std::ldexp(1.0, f.max_exponent);
}

/// round_to_format(v, f).
inline double rounded_to_format(double v, const Format& f) {
  if (!std::isfinite(v) || v == 0.0) return v;
  const int biased = static_cast<int>((std::bit_cast<std::uint64_t>(v) >> 52) & 0x7ff);
  // A double below 2^-1022 lies far below half any format's smallest subnormal.
  if (biased == 0) return std::copysign(0.0, v);
  // The bits of the double's 52-bit fraction below the format's last place (more where
  // v lies below its smallest normal): rounded off in the bits, to nearest, ties to even.
  // A carry out of the fraction steps the exponent up, which is the rounded value too.
  // (At 52 the last place kept would be the implicit bit, which the bits do not hold.)
  const int drop = 52 - f.fraction_bits + std::max(0, f.min_exponent - (biased - 1023));
  if (drop >= 1 && drop <= 51) {
    const std::uint64_t magnitude = std::bit_cast<std::uint64_t>(v) & ~(std::uint64_t{1} << 63);
    const std::uint64_t last = (magnitude >> drop) & 1;
    const std::uint64_t below = (std::uint64_t{1} << drop) - 1;
    const double r = std::bit_cast<double>((magnitude + (below >> 1) + last) & ~below);
    return std::copysign(r > largest_finite(f) ? std::numeric_limits<double>::infinity() : r, v);
  }
  const int exponent = std::max(biased - 1023, f.min_exponent);
  // Scaling by a power of two is exact; nearbyint rounds to nearest, ties to even.
  const double r = std::nearbyint(v * power_of_two(f.fraction_bits - exponent)) *
                   power_of_two(exponent - f.fraction_bits);
  return std::abs(r) > largest_finite(f) ? std::copysign(std::numeric_limits<double>::infinity(), v)
                                         : r;
}

}  // namespace sgdc::reference::detail
