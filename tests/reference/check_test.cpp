#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sgdc/reference/check.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::reference {
namespace {

Case one_by_one(float w, float b, float x, float y, float lr) {
  Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {w};
  c.bias = {b};
  c.x = {x};
  c.y = {y};
  c.lr = lr;
  return c;
}

TEST(Check, AcceptsTheCorrectlyRoundedValueAndRejectsFarOnes) {
  const Expectation e = expect(one_by_one(1.0f, 0.0f, 3.0f, 1.0f, 0.01f));
  for (Output o : all_outputs) {
    // Plain SGD keeps no optimizer state: nothing expected of it.
    if (info(o).reported == Reported::with_buffer ||
        info(o).reported == Reported::with_second_moment) {
      EXPECT_TRUE(e[o].empty()) << to_string(o);
      continue;
    }
    const Expected& x = e[o][0];
    EXPECT_TRUE(check_element(x.rounded, x).ok) << to_string(o);
    EXPECT_FALSE(check_element(x.rounded * 1.001f + 1e-30f, x).ok) << to_string(o);
    EXPECT_FALSE(check_element(NAN, x).ok) << to_string(o);
  }
}

TEST(Check, NonFiniteInputsPoisonExactlyTheOutputsThatDependOnThem) {
  Case c;
  c.n = 1;
  c.d = 1;
  c.k = 2;
  c.kernel = {1.0f, NAN};  // column 1 of W
  c.bias = {0.0f, 0.0f};
  c.x = {2.0f};
  c.y = {1.0f, 1.0f};
  c.lr = 0.5f;
  const Expectation e = expect(c);
  EXPECT_TRUE(e.loss[0].must_be_nonfinite);
  EXPECT_FALSE(e.kernel[0].must_be_nonfinite);
  EXPECT_TRUE(e.kernel[1].must_be_nonfinite);
  EXPECT_FALSE(e.grad_bias[0].must_be_nonfinite);
  EXPECT_TRUE(e.grad_bias[1].must_be_nonfinite);
  // Column 0 is computed as usual: r = 2*1 + 0 - 1 = 1, g = 2/2 * 2 * 1 = 2.
  EXPECT_EQ(e.grad_kernel[0].rounded, 2.0f);
  EXPECT_TRUE(check_element(INFINITY, e.kernel[1]).ok);
  EXPECT_TRUE(check_element(NAN, e.kernel[1]).ok);
  EXPECT_FALSE(check_element(0.0f, e.kernel[1]).ok);
  EXPECT_FALSE(check_element(NAN, e.kernel[0]).ok);
}

TEST(Check, OverflowIsAllowedOnlyWhereItCanHappen) {
  const float big = 1e30f;
  const Expectation e = expect(one_by_one(big, 0.0f, big, 0.0f, 1.0f));
  // r = 1e60 overflows float32: loss and gradients may be infinite.
  EXPECT_TRUE(e.loss[0].may_overflow);
  EXPECT_TRUE(check_element(INFINITY, e.loss[0]).ok);
  const Expectation small = expect(one_by_one(1.0f, 0.0f, 1.0f, 0.0f, 1.0f));
  EXPECT_FALSE(small.loss[0].may_overflow);
  EXPECT_FALSE(check_element(INFINITY, small.loss[0]).ok);
}

// A step may be refused where it reads a non-finite input or some output may overflow
// (an overflow trapped), and nowhere else.
TEST(Check, ARefusalIsAllowedOnlyWhereAnInputIsNonFiniteOrAnOutputMayOverflow) {
  const Case ordinary = one_by_one(1.0f, 0.0f, 1.0f, 0.0f, 1.0f);
  EXPECT_FALSE(refusal_allowed(ordinary, expect(ordinary)));
  const Case nan = one_by_one(NAN, 0.0f, 1.0f, 0.0f, 1.0f);
  EXPECT_TRUE(refusal_allowed(nan, expect(nan)));
  const Case overflows = one_by_one(1e30f, 0.0f, 1e30f, 0.0f, 1.0f);
  EXPECT_TRUE(refusal_allowed(overflows, expect(overflows)));
}

TEST(Check, SignedZerosAreEqual) {
  const Expectation e = expect(one_by_one(0.0f, 0.0f, 0.0f, 0.0f, 1.0f));
  EXPECT_TRUE(check_element(-0.0f, e.kernel[0]).ok);
  EXPECT_TRUE(check_element(0.0f, e.kernel[0]).ok);
}

TEST(Check, LargerUnitRoundoffWidensTheBound) {
  const Case c = one_by_one(1.5f, 0.25f, 3.0f, 1.0f, 0.01f);
  const Expectation f32 = expect(c);
  const Expectation bf16 = expect(c, {.u = unit_roundoff::bfloat16});
  for (Output o : all_outputs) {
    // Plain SGD: no optimizer state.
    if (info(o).reported == Reported::with_buffer ||
        info(o).reported == Reported::with_second_moment)
      continue;
    EXPECT_GT(bf16[o][0].bound, 1000 * f32[o][0].bound) << to_string(o);
  }
}

}  // namespace
}  // namespace sgdc::reference