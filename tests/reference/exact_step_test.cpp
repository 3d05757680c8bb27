// The exact (rational) and the 50-digit evaluations agree far below float32 resolution.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "sgdc/properties/generators.hpp"
#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::reference {
namespace {

// |hp - exact| relative to the element's bound: float32 resolution is ~1 on this scale,
// the 50-digit type's ~2^-140.
template <class M, class H>
void expect_close(const M& exact, const H& hp, const std::vector<Expected>& e) {
  for (Eigen::Index i = 0; i < exact.size(); ++i) {
    const Rational diff = abs(exact(i) - Rational(hp(i)));
    RC_ASSERT(diff <= Rational(e[i].bound) * Rational(1, 1ull << 62) / Rational(1ull << 40));
  }
}

RC_GTEST_PROP(ExactStep, HighPrecisionAgreesWithExact, ()) {
  const Case c = *properties::any_case(properties::CaseSpace{}, 10);
  const auto exact = evaluate_step<Rational>(c);
  const auto hp = evaluate_step<HighPrecision>(c);
  const Expectation e = expect(c);
  Matrix<Rational> loss(1, 1);
  loss(0, 0) = exact.loss;
  Matrix<HighPrecision> hp_loss(1, 1);
  hp_loss(0, 0) = hp.loss;
  expect_close(loss, hp_loss, e.loss);
  expect_close(exact.grad_kernel, hp.grad_kernel, e.grad_kernel);
  expect_close(exact.grad_bias, hp.grad_bias, e.grad_bias);
  expect_close(exact.kernel, hp.kernel, e.kernel);
  expect_close(exact.bias, hp.bias, e.bias);
}

// Spec 1.4: with momentum 0 there is no buffer to dampen, so a carried buffer and a
// dampening change nothing: buf' = ge and p' = p - lr ge, as torch.optim.SGD computes.
// With momentum the carried buffer is dampened: buf' = mu buf + (1 - damp) ge.
TEST(ExactStep, NoDampeningWithoutMomentum) {
  Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {1.0f};
  c.bias = {0.0f};
  c.x = {1.0f};
  c.y = {0.0f};  // r = 1, g = 2 r x = 2 for the kernel and 2 for the bias
  c.lr = 0.25f;
  c.optimizer.kind = Optimizer::Kind::momentum;
  c.optimizer.dampening = 0.5f;
  c.momentum_kernel = {8.0f};
  c.momentum_bias = {8.0f};
  const auto without = evaluate_step<Rational>(c);
  EXPECT_EQ(without.momentum_kernel(0, 0), Rational(2));
  EXPECT_EQ(without.kernel(0, 0), Rational(1, 2));
  c.optimizer.momentum = 0.5f;
  const auto with = evaluate_step<Rational>(c);
  EXPECT_EQ(with.momentum_kernel(0, 0), Rational(5));  // 0.5 * 8 + 0.5 * 2
  EXPECT_EQ(with.kernel(0, 0), Rational(-1, 4));       // 1 - 0.25 * 5
}

TEST(ExactStep, RejectsNonFiniteAndBadShapes) {
  Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {1.0f};
  c.bias = {0.0f};
  c.x = {INFINITY};
  c.y = {0.0f};
  EXPECT_THROW(evaluate_step<Rational>(c), std::invalid_argument);
  c.x = {1.0f, 2.0f};
  EXPECT_THROW(evaluate_step<Rational>(c), std::invalid_argument);
}

}  // namespace
}  // namespace sgdc::reference