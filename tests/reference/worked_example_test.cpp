// The worked example of docs/spec/step.md, exactly.
#include <gtest/gtest.h>

#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/worked_example.hpp"

namespace sgdc::reference {
namespace {

TEST(WorkedExample, ExactValues) {
  const auto v = evaluate_step<Rational>(worked_example());
  EXPECT_EQ(v.loss, Rational(5, 2));
  EXPECT_EQ(v.grad_kernel(0, 0), Rational(5));
  EXPECT_EQ(v.grad_bias(0, 0), Rational(3));
  // lr is float32(0.1) = 13421773 / 2^27, so W' and b' are exact only with it.
  const Rational lr = Rational(13421773, 134217728);
  EXPECT_EQ(v.kernel(0, 0), Rational(1) - 5 * lr);
  EXPECT_EQ(v.bias(0, 0), -3 * lr);
}

TEST(WorkedExample, RoundedOutputs) {
  const Expectation e = expect(worked_example());
  EXPECT_EQ(e.loss[0].rounded, 2.5f);
  EXPECT_EQ(e.grad_kernel[0].rounded, 5.0f);
  EXPECT_EQ(e.grad_bias[0].rounded, 3.0f);
  EXPECT_EQ(e.kernel[0].rounded, 0.5f);
  EXPECT_EQ(e.bias[0].rounded, -0.3f);
}

TEST(WorkedExample, PostUpdateLossIsNotTheReturnedLoss) {
  Case after = worked_example();
  const Expectation e = expect(after);
  after.kernel = {e.kernel[0].rounded};
  after.bias = {e.bias[0].rounded};
  const Expectation post = expect(after);
  EXPECT_EQ(post.loss[0].rounded, 0.265f);
  EXPECT_NE(post.loss[0].rounded, e.loss[0].rounded);
}

}  // namespace
}  // namespace sgdc::reference