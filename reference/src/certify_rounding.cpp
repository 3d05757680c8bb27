#include "certify_rounding.hpp"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

namespace sgdc::reference {

namespace {
constexpr double infinity = std::numeric_limits<double>::infinity();

// Reals at or beyond FLT_MAX + ulp/2 round to infinity (the tie goes to the even 2^128).
constexpr double overflow_threshold = 0x1.ffffffp127;

// Outside this range section 11's analysis does not apply; never reached from finite
// float32 inputs, refused rather than trusted.
constexpr double smallest_analysed = 0x1p-900;

// The neighbours of a positive finite value: its bit pattern plus or minus one (as
// std::nextafter towards +-infinity gives, without the library call: these run twice per
// value certified). next_up of the largest finite value is +infinity, next_down of the
// smallest subnormal is +0.
double next_up(double m) { return std::bit_cast<double>(std::bit_cast<std::uint64_t>(m) + 1); }
double next_down(double m) { return std::bit_cast<double>(std::bit_cast<std::uint64_t>(m) - 1); }
float next_up(float f) { return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) + 1); }
float next_down(float f) { return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) - 1); }

// A real where float32 rounding changes: the midpoint of two adjacent float32 values
// (subnormal ones included) or the overflow threshold.
bool is_float32_boundary(double h) {
  const float f = static_cast<float>(h);
  if (std::isinf(f)) return std::abs(h) == overflow_threshold;
  const double fd = f;
  if (fd == h) return false;
  const float neighbour = std::nextafter(f, h > fd ? INFINITY : -INFINITY);
  return !std::isinf(neighbour) && (fd + neighbour) / 2.0 == h;
}

// A distance d computed in double has relative error <= 2^-53, and so has the radius:
// d > r (1 + 2^-50) as computed implies the exact distance exceeds the exact radius.
bool clearly_above(double distance, double radius) { return distance > radius * (1.0 + 0x1p-50); }
}  // namespace

std::optional<float> certified_float32(const double_word::Approx& a) {
  if (!std::isfinite(a.hi) || !(a.err < infinity)) return std::nullopt;
  if (a.err == 0.0) {
    // Exactly a.hi + a.lo; a.hi: one rounding from double, as IEEE conversion does (+0
    // for zero).
    if (a.lo == 0.0) return a.hi == 0.0 ? 0.0f : static_cast<float>(a.hi);
    // Not a double, so no boundary lies between a.hi and the value; if a.hi is one, the
    // next double towards a.lo rounds like the value (two boundaries are never adjacent
    // doubles).
    const double h = is_float32_boundary(a.hi) ? std::nextafter(a.hi, a.lo * infinity) : a.hi;
    return static_cast<float>(h);
  }
  const double radius = std::abs(a.lo) + a.err;
  const double m = std::abs(a.hi);
  // The enclosure must keep one sign: a tiny value rounds to a zero of its own sign.
  if (!clearly_above(m, radius) || m < smallest_analysed) return std::nullopt;
  const float f = static_cast<float>(m);
  double low = overflow_threshold, high = infinity;  // rounding boundaries around f
  if (!std::isinf(f)) {
    // Adjacent float32 values sum exactly in double, and halving is exact.
    const double fd = f;
    low = f == 0.0f ? 0.0 : (fd + next_down(f)) / 2.0;
    high = f == FLT_MAX ? overflow_threshold : (fd + next_up(f)) / 2.0;
  }
  if (!clearly_above(m - low, radius) || !clearly_above(high - m, radius)) return std::nullopt;
  return a.hi < 0.0 ? -f : f;
}

std::optional<double> certified_double(const double_word::Approx& a) {
  if (!std::isfinite(a.hi) || !(a.err < infinity)) return std::nullopt;
  // hi is the double nearest to hi + lo (a TwoSum made them), so exact means certified.
  if (a.err == 0.0) return a.hi == 0.0 ? 0.0 : a.hi;
  const double m = std::abs(a.hi);
  if (m < smallest_analysed) return std::nullopt;
  const double lo = a.hi < 0.0 ? -a.lo : a.lo;
  // Half the gaps to the neighbours (exact: powers of two).
  const double below = (m - next_down(m)) / 2.0;
  const double above = (next_up(m) - m) / 2.0;
  if (!clearly_above(lo + below, a.err) || !clearly_above(above - lo, a.err)) return std::nullopt;
  return a.hi;
}

std::optional<RoundedValue> certified_roundings(const double_word::Approx& a) {
  const std::optional<float> f = certified_float32(a);
  const std::optional<double> d = certified_double(a);
  if (!f || !d) return std::nullopt;
  return RoundedValue{*f, *d};
}

}  // namespace sgdc::reference
