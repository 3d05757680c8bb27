// The exact (rational) and the 50-digit evaluations agree far below float32 resolution.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <stdexcept>

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
namespace sgdc::reference {
namespace {

// Adagrad by hand (docs/spec/step.md, "Adagrad"): x = 1, W = 0, b = 0, y = -1, so r = 1,
// gW = gb = 2. torch's form, lr 0.5, eps 1 outside, initial sum 0: s' = 4 and
// p' = -0.5 * 2 / (2 + 1) = -1/3. optax's, eps_root 5 inside, initial 0.1, carried sum
// 1.25 for the bias: s' = 4 + 0.1 = 4.1 (kernel), 5.25 (bias); p' = -0.5 * 2 / sqrt(s' + 5).
TEST(ExactStep, AdagradByHand) {
  Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {0.0f};
  c.bias = {0.0f};
  c.x = {1.0f};
  c.y = {-1.0f};
  c.lr = 0.5f;
  c.optimizer.kind = Optimizer::Kind::adagrad;
  c.optimizer.eps = 1.0f;
  const Expectation torch = expect(c);
  EXPECT_EQ(torch.kernel[0].rounded, static_cast<float>(-1.0 / 3.0));
  EXPECT_EQ(torch.bias[0].rounded, static_cast<float>(-1.0 / 3.0));
  EXPECT_EQ(torch.second_moment_kernel[0].rounded, 4.0f);
  EXPECT_TRUE(torch.momentum_kernel.empty());

  c.optimizer.eps = 0.0f;
  c.optimizer.eps_root = 5.0f;
  c.optimizer.initial_accumulator_value = 0.1f;
  const double initial = 0.1f;
  const StepValues<HighPrecision> v = evaluate_step<HighPrecision>(c);
  EXPECT_EQ(static_cast<double>(v.second_moment_kernel(0, 0)), 4.0 + initial);
  EXPECT_NEAR(static_cast<double>(v.kernel(0, 0)), -1.0 / std::sqrt(9.0 + initial), 1e-15);
  EXPECT_EQ(expect(c).kernel[0].rounded, static_cast<float>(-1.0 / std::sqrt(9.0 + initial)));
  // A carried sum replaces the initial value.
  c.second_moment_kernel = {0.0f};
  c.second_moment_bias = {1.25f};
  const Expectation optax = expect(c);
  EXPECT_EQ(optax.second_moment_kernel[0].rounded, 4.0f);
  EXPECT_EQ(optax.second_moment_bias[0].rounded, 5.25f);
  EXPECT_EQ(optax.kernel[0].rounded, static_cast<float>(-1.0 / 3.0));
  EXPECT_EQ(optax.bias[0].rounded, static_cast<float>(-1.0 / std::sqrt(10.25)));
  // Both eps at 0 leave no denominator: refused, naming the field.
  c.optimizer.eps_root = 0.0f;
  EXPECT_THROW(c.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace sgdc::reference
