#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sgdc/reference/float32.hpp"

namespace sgdc::reference {
namespace {

TEST(UlpDistance, CountsFloatsBetween) {
  EXPECT_EQ(ulp_distance(1.0f, 1.0f), 0u);
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(ulp_distance(-0.0f, 0.0f), 0u);
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulp_distance(-tiny, tiny), 2u);
  EXPECT_EQ(ulp_distance(std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity()),
            1u);
  EXPECT_EQ(ulp_distance(NAN, 1.0f), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(ulp_distance(NAN, NAN), 0u);
}

TEST(SameBits, DistinguishesSignedZeros) {
  EXPECT_TRUE(same_bits(1.5f, 1.5f));
  EXPECT_FALSE(same_bits(0.0f, -0.0f));
  EXPECT_TRUE(same_bits(NAN, -NAN));
}

TEST(Describe, ReadsBackExactly) { EXPECT_EQ(describe(0.1f), "0.100000001 (0x1.99999ap-4)"); }

}  // namespace
}  // namespace sgdc::reference