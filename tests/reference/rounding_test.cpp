// Correct rounding to float32 against hand-derived cases and against neighbouring floats.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference {
namespace {

Rational pow2(int e) {
  Rational r(1);
  if (e >= 0) {
    for (int i = 0; i < e; ++i) r *= 2;
  } else {
    for (int i = 0; i < -e; ++i) r /= 2;
  }
  return r;
}

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }
Rational exact(float f) { return Rational(static_cast<double>(f)); }

TEST(Rounding, CasesThatDoubleRoundingGetsWrong) {
  // Subnormal result just above the half-way point 2^-150: rounds up, not to zero.
  EXPECT_EQ(round_to_float32(pow2(-150) + pow2(-200)), std::numeric_limits<float>::denorm_min());
  // Exactly half-way to the smallest subnormal: ties to even (zero).
  EXPECT_EQ(round_to_float32(pow2(-150)), 0.0f);
  // Just above a tie in the normal range: a trip through double would lose the 2^-80.
  EXPECT_EQ(round_to_float32(1 + pow2(-24) + pow2(-80)), 1.0f + 0x1p-23f);
  EXPECT_EQ(round_to_float32(1 + pow2(-24)), 1.0f);
  EXPECT_EQ(round_to_float32(1 + 3 * pow2(-24)), 1.0f + 0x1p-22f);
  // Just below the overflow threshold FLT_MAX + 2^103: stays finite.
  const Rational flt_max = exact(std::numeric_limits<float>::max());
  EXPECT_EQ(round_to_float32(flt_max + pow2(103) - pow2(50)), std::numeric_limits<float>::max());
  // At the threshold the tie goes to the even "2^128", which is infinity.
  EXPECT_EQ(round_to_float32(flt_max + pow2(103)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_float32(-flt_max - pow2(104)), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_float32(Rational(1, 3)), 1.0f / 3.0f);
  EXPECT_EQ(round_to_float32(Rational(0)), 0.0f);
}

// For any pair of adjacent finite floats: the midpoint goes to the even one, and points
// a hair either side of it go to the nearer one.
RC_GTEST_PROP(Rounding, MidpointsAndNeighbours, (std::uint32_t bits)) {
  const std::uint32_t lo_bits = bits & 0x7f7ffffeu;  // finite, below FLT_MAX
  const float lo = from_bits(lo_bits), hi = from_bits(lo_bits + 1);
  const bool negate = (bits & 0x80000000u) != 0;
  const Rational mid = (exact(lo) + exact(hi)) / 2;
  const Rational hair = (exact(hi) - exact(lo)) / Rational(1000000007);
  const float s = negate ? -1.0f : 1.0f;
  const Rational sign = negate ? Rational(-1) : Rational(1);
  const float even = (lo_bits & 1u) ? hi : lo;
  RC_ASSERT(round_to_float32(sign * mid) == s * even);
  RC_ASSERT(round_to_float32(sign * (mid - hair)) == s * lo);
  RC_ASSERT(round_to_float32(sign * (mid + hair)) == s * hi);
  RC_ASSERT(round_to_float32(sign * exact(lo)) == s * lo);
}

TEST(Rounding, ToDouble) {
  EXPECT_EQ(round_to_double(Rational(1, 3)), 1.0 / 3.0);
  EXPECT_EQ(round_to_double(pow2(-1074)), std::numeric_limits<double>::denorm_min());
}

}  // namespace
}  // namespace sgdc::reference