// SharedExpectations: the oracle's results shared across contexts, the same bit for bit,
// never across cases or arithmetics that differ.
#include "sgdc/properties/shared_expectations.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "sgdc/properties/property.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/worked_example.hpp"

namespace sgdc::properties {
namespace {

bool same_bits(const reference::Expectation& a, const reference::Expectation& b) {
  for (const reference::OutputInfo& info : reference::output_table) {
    const auto &x = a[info.output], &y = b[info.output];
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::memcmp(&x[i].rounded, &y[i].rounded, sizeof(float)) != 0 ||
          std::memcmp(&x[i].bound, &y[i].bound, sizeof(double)) != 0 ||
          x[i].may_overflow != y[i].may_overflow)
        return false;
    }
  }
  return true;
}

TEST(SharedExpectations, ContextsShareOneResultBitForBit) {
  const Declaration declaration{.name = "test"};
  const reference::Case c = reference::worked_example();
  const reference::Expectation alone = reference::expect(c, declaration.arithmetic);
  const SharedExpectations shared;
  Context first(declaration), second(declaration);
  const reference::Expectation& a = first.expect(c);
  const reference::Expectation& b = second.expect(c);
  EXPECT_EQ(&a, &b);
  EXPECT_TRUE(same_bits(a, alone));
  EXPECT_EQ(shared.computed(), 1u);
  EXPECT_EQ(shared.reused(), 1u);
}

TEST(SharedExpectations, NeverAcrossCasesOrArithmetics) {
  const Declaration float32{.name = "float32"};
  Declaration bf16{.name = "bf16"};
  bf16.arithmetic.format = reference::formats::bfloat16;
  reference::Case c = reference::worked_example();
  reference::Case other = c;
  other.x[0] = std::nextafter(other.x[0], INFINITY);  // one input one ulp away
  ASSERT_NE(other.x[0], c.x[0]);
  const SharedExpectations shared;
  Context a(float32), b(bf16), d(float32);
  const reference::Expectation& wide = b.expect(c);
  EXPECT_NE(&a.expect(c), &wide);
  EXPECT_TRUE(same_bits(wide, reference::expect(c, bf16.arithmetic)));
  const reference::Expectation& moved = d.expect(other);
  EXPECT_NE(&moved, &a.expect(c));
  EXPECT_TRUE(same_bits(moved, reference::expect(other, float32.arithmetic)));
  EXPECT_EQ(shared.computed(), 3u);
}

// A clipped case and the same case unclipped, or clipped at another max_norm, are other
// cases.
TEST(SharedExpectations, NeverAcrossClippings) {
  const Declaration float32{.name = "float32"};
  const reference::Case c = reference::worked_example();
  reference::Case clipped = c, tighter = c;
  clipped.clip = reference::Clipping{0.5f, 0.0f};
  tighter.clip = reference::Clipping{0.25f, 0.0f};
  const SharedExpectations shared;
  Context a(float32);
  const reference::Expectation* plain = &a.expect(c);
  const reference::Expectation* one = &a.expect(clipped);
  const reference::Expectation* two = &a.expect(tighter);
  EXPECT_NE(plain, one);
  EXPECT_NE(one, two);
  EXPECT_TRUE(same_bits(*one, reference::expect(clipped, float32.arithmetic)));
  EXPECT_FALSE(same_bits(*one, *two));
  EXPECT_EQ(shared.computed(), 3u);
}

TEST(SharedExpectations, OverCapacityTheOldestLeaveAndResultsStayRight) {
  const Declaration declaration{.name = "test"};
  const reference::Case c = reference::worked_example();
  reference::Case other = c;
  other.lr = 0.25f;
  const SharedExpectations shared(1);  // room for none: each result leaves as it is kept
  Context a(declaration), b(declaration), d(declaration);
  const reference::Expectation& first = a.expect(c);
  const reference::Expectation& again = b.expect(c);
  EXPECT_TRUE(same_bits(first, again));  // computed twice, the same
  EXPECT_EQ(shared.computed(), 2u);
  EXPECT_EQ(shared.reused(), 0u);
  EXPECT_TRUE(same_bits(d.expect(other), reference::expect(other, declaration.arithmetic)));
}

TEST(SharedExpectations, OneAtATime) {
  const SharedExpectations shared;
  EXPECT_THROW(SharedExpectations{}, std::logic_error);
}

}  // namespace
}  // namespace sgdc::properties
