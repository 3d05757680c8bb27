// Adam's parameters exactly: the rational where the square root is one, else 40 digits
// decided by the enclosure, which agree with a 50-digit evaluation and round to the
// oracle's float32.
#include <gtest/gtest.h>

#include <string>

#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/exact_value.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::reference {
namespace {

Case adam_case(bool fresh) {
  Case c;
  c.n = 2;
  c.d = 1;
  c.k = 1;
  c.kernel = {0.75f};
  c.bias = {-0.5f};
  c.x = {1.0f, -2.0f};
  c.y = {0.25f, 0.5f};
  c.lr = 0.125f;
  c.optimizer.kind = Optimizer::Kind::adam;
  c.optimizer.b1 = 0.875f;
  c.optimizer.b2 = 0.9375f;
  c.optimizer.eps = 0x1p-10f;
  if (!fresh) {
    c.step = 4;
    c.momentum_kernel = {0.25f};
    c.momentum_bias = {-0.125f};
    c.second_moment_kernel = {0.5f};
    c.second_moment_bias = {0.0625f};
  }
  return c;
}

// t = 1, fresh state: vh = g^2, whose square root is |g|: every parameter rational.
TEST(AdamExactValue, RationalWhereTheRootIs) {
  const Case c = adam_case(true);
  const AdamParameters p = exact_adam_parameters(c, 40);
  const Expectation e = expect(c);
  ASSERT_TRUE(p.kernel.at(0).rational);
  EXPECT_EQ(round_to_float32(*p.kernel[0].rational), e.kernel[0].rounded);
  ASSERT_TRUE(p.bias.at(0).rational);
  EXPECT_EQ(round_to_float32(*p.bias[0].rational), e.bias[0].rounded);
}

// Carried state: irrational; the decided digits are those of a 50-digit evaluation.
TEST(AdamExactValue, DecidedDigitsOfAnIrrationalParameter) {
  const Case c = adam_case(false);
  const AdamParameters p = exact_adam_parameters(c, 40);
  const StepValues<HighPrecision> high = evaluate_step<HighPrecision>(c);
  const Expectation e = expect(c);
  for (const auto& [exact, value, expected] :
       {std::tuple{p.kernel.at(0), high.kernel(0, 0), e.kernel[0]},
        std::tuple{p.bias.at(0), high.bias(0, 0), e.bias[0]}}) {
    ASSERT_FALSE(exact.rational);
    ASSERT_EQ(exact.digits.size(), 40u);
    const HighPrecision decided = HighPrecision(exact.digits) *
                                  pow(HighPrecision(10), exact.exponent) *
                                  (exact.negative ? -1 : 1);
    // 40 digits rounded to nearest: within half a unit of the 40th digit.
    EXPECT_LE(abs(decided - value), abs(value) * HighPrecision("1e-39")) << exact.digits;
    EXPECT_EQ(static_cast<float>(decided), expected.rounded);
  }
  EXPECT_THROW(exact_adam_parameters(Case{}, 40), std::invalid_argument);
}

}  // namespace
}  // namespace sgdc::reference
