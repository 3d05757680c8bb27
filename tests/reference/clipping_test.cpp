// Global-norm clipping in the oracle (docs/spec/step.md, "Gradient clipping"): the clip
// factor's branch decided exactly at its boundary, a worked case by hand, agreement with
// the 50-digit evaluation on drawn cases of every optimizer, the certified path equal to
// the exact one, and an inactive clip changing nothing.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "adam_update.hpp"
#include "clipped_step.hpp"
#include "clipping_bound.hpp"
#include "identical.hpp"
#include "quadratic.hpp"
#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/reference/certified_step.hpp"
#include "sgdc/reference/error_bound.hpp"
#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/exact_value.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/rounded_step.hpp"

namespace sgdc::reference {
namespace {
using identical::expect_identical;
using identical::same;

// n = d = k = 1, x = 1, y = 0, b = 0: r = w, gW = gb = 2w, so S = 8 w^2 and the norm
// is 2 sqrt(2) |w|, irrational.
Case one_by_one(float w) {
  Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {w};
  c.bias = {0.0f};
  c.x = {1.0f};
  c.y = {0.0f};
  c.lr = 1.0f;
  return c;
}

// x = 0: gW = 0 and gb = 2 (b - y), a norm of 2 |b - y|, rational.
Case rational_norm(float b, float y) {
  Case c = one_by_one(1.0f);
  c.x = {0.0f};
  c.bias = {b};
  c.y = {y};
  return c;
}

float next_down(float f) { return std::nextafter(f, -INFINITY); }

TEST(Clipping, QuadraticSignIsExact) {
  const Rational two(2);
  // 1.4142135 - sqrt(2) < 0 < 1.4142136 - sqrt(2); 3 - 2 sqrt(2) > 0; 2 sqrt(2) - sqrt(8) = 0
  // is not representable (sqrt(8) = 2 sqrt(2)): b's of opposite sign at a rational a.
  EXPECT_EQ(Quadratic(Rational(14142135, 10000000), Rational(-1), &two).sign(), -1);
  EXPECT_EQ(Quadratic(Rational(14142136, 10000000), Rational(-1), &two).sign(), 1);
  EXPECT_EQ(Quadratic(Rational(3), Rational(-2), &two).sign(), 1);
  EXPECT_EQ(Quadratic(Rational(-3), Rational(2), &two).sign(), -1);
  EXPECT_EQ(Quadratic(Rational(0), Rational(0), &two).sign(), 0);
  // (1 + sqrt 2)(1 - sqrt 2) = -1.
  const Quadratic p =
      Quadratic(Rational(1), Rational(1), &two) * Quadratic(Rational(1), Rational(-1), &two);
  EXPECT_TRUE(p.is_rational());
  EXPECT_EQ(p.a(), Rational(-1));
}

// optax (eps = 0) clips when the norm exceeds M: at M = norm exactly the factor is 1, one
// float32 below it the factor is M / norm < 1. torch (eps = 1e-6) leaves the same
// gradients unclipped until M < norm + eps.
TEST(Clipping, TheBranchIsDecidedExactlyAtItsBoundary) {
  const Case c = rational_norm(0.75f, 0.0f);  // gb = 1.5: norm 1.5
  const StepValues<Rational> v = evaluate_step<Rational>(c);
  auto factor = [&](float m, float eps) {
    Case clipped = c;
    clipped.clip = Clipping{m, eps};
    const ClipFactor f(clipped, v.grad_kernel, v.grad_bias);
    return std::pair{f.active, f.factor};
  };
  EXPECT_FALSE(factor(1.5f, 0.0f).first);
  EXPECT_EQ(factor(1.5f, 0.0f).second, Quadratic(1));
  const auto [active, f] = factor(next_down(1.5f), 0.0f);
  EXPECT_TRUE(active);
  EXPECT_TRUE(f.is_rational());
  EXPECT_EQ(f.a(), Rational(static_cast<double>(next_down(1.5f))) / Rational(3, 2));
  const float eps = 1e-6f;
  // M = 1.5 and one float32 below it, both < 1.5 + eps: clipped, by M / (1.5 + eps).
  EXPECT_TRUE(factor(next_down(1.5f), eps).first);
  EXPECT_TRUE(factor(1.5f, eps).first);
  EXPECT_FALSE(factor(1.5f + 0x1p-19f, eps).first);  // 2^-19 > 1e-6
}

// The norm 2 sqrt(2) w with w = 0.5: sqrt(2); M = 1, eps = 0, so c = 1/sqrt(2) and
// W' = b' + 0.5 = 0.5 - sqrt(2)/2 (lr = 1, plain SGD): irrational, rounded correctly.
TEST(Clipping, ByHandWithAnIrrationalNorm) {
  Case c = one_by_one(0.5f);
  c.clip = Clipping{1.0f, 0.0f};
  const RoundedStep s = round_exact_step(c);
  const long double half_root_two = std::sqrt(2.0L) / 2.0L;
  ASSERT_EQ(s.kernel.size(), 1u);
  EXPECT_EQ(s.kernel[0].rounded, static_cast<float>(0.5L - half_root_two));
  EXPECT_EQ(s.bias[0].rounded, static_cast<float>(-half_root_two));
  // The reported gradients are the loss's: 1 and 1, not clipped.
  EXPECT_EQ(s.grad_kernel[0].rounded, 1.0f);
  EXPECT_EQ(s.grad_bias[0].rounded, 1.0f);
  // The certified path takes the same values.
  const Expectation e = expect(c), x = expect_exact(c);
  ASSERT_NO_FATAL_FAILURE(expect_identical(e, x, "clipped by hand"));
}

// The fixtures' exact values of the same case: 0.5 - sqrt(2)/2 to 40 significant digits
// (sqrt(2)/2 = 0.70710678118654752440084436210484903928483593768847...), the gradients
// rational.
TEST(Clipping, ExactDecimalsByHand) {
  Case c = one_by_one(0.5f);
  c.clip = Clipping{1.0f, 0.0f};
  const PerOutput<std::vector<ExactValue>> v = exact_clipped_outputs(c, 40);
  ASSERT_EQ(v.kernel.size(), 1u);
  EXPECT_FALSE(v.kernel[0].rational);
  EXPECT_TRUE(v.kernel[0].negative);
  EXPECT_EQ(v.kernel[0].digits, "2071067811865475244008443621048490392848");
  EXPECT_EQ(v.kernel[0].exponent, -40);
  EXPECT_EQ(v.bias[0].digits, "7071067811865475244008443621048490392848");
  // Not clipped (max_norm above the norm 2 sqrt(2) w = sqrt(2)): rational.
  c.clip = Clipping{2.0f, 0.0f};
  const PerOutput<std::vector<ExactValue>> r = exact_clipped_outputs(c, 40);
  ASSERT_TRUE(r.kernel[0].rational);
  EXPECT_EQ(*r.kernel[0].rational, Rational(-1, 2));
}

TEST(Clipping, AnInactiveClipChangesNothing) {
  for (const Optimizer::Kind kind : {Optimizer::Kind::sgd, Optimizer::Kind::momentum}) {
    Case c = one_by_one(0.5f);
    if (kind == Optimizer::Kind::momentum) {
      c.optimizer.kind = kind;
      c.optimizer.momentum = 0.9f;
      c.momentum_kernel = {0.25f};
      c.momentum_bias = {-0.125f};
    }
    Case clipped = c;
    clipped.clip = Clipping{1e6f, 1e-6f};
    const Expectation a = expect(c), b = expect(clipped);
    for (const Output o : all_outputs) {
      ASSERT_EQ(a[o].size(), b[o].size());
      for (std::size_t i = 0; i < a[o].size(); ++i)
        EXPECT_TRUE(same(a[o][i].rounded, b[o][i].rounded)) << to_string(o) << "[" << i << "]";
    }
  }
}

// The 50-digit evaluation (its own square root and min) agrees with the exact one
// within far less than a float32 ULP on drawn cases of every optimizer, clipped at a
// max_norm around the gradients' norm so that both branches come.
RC_GTEST_PROP(Clipping, HighPrecisionAgreesWithExact, ()) {
  properties::CaseSpace space;
  space.momentum = properties::MomentumSupport{
      .dampening = true, .nesterov = true, .coupled_decay = true, .decoupled_decay = true};
  space.adam = properties::AdamSupport{.coupled_decay = true, .decoupled_decay = true};
  space.adagrad = properties::AdagradSupport{.coupled_decay = true, .decoupled_decay = true};
  Case c = *properties::any_case(space, 6);
  c.num_shards = 1;
  const StepValues<Rational> plain = evaluate_step<Rational>(c);
  double s = 0.0;
  for (const Matrix<Rational>* g : {&plain.grad_kernel, &plain.grad_bias})
    for (Eigen::Index i = 0; i < g->size(); ++i)
      s += std::pow(g->data()[i].convert_to<double>(), 2);
  const float scale = *rc::gen::element(0.25f, 0.5f, 0.99f, 1.01f, 2.0f);
  const float max_norm = static_cast<float>(std::sqrt(s) * scale);
  RC_PRE(std::isnormal(max_norm));
  c.clip = Clipping{max_norm, *rc::gen::element(0.0f, 1e-6f)};
  const ClipFactor factor(c, plain.grad_kernel, plain.grad_bias);
  RC_TAG(to_string(c.optimizer.kind), factor.active ? "clipped" : "not clipped");
  const RoundedStep exact = round_exact_step(c);
  const StepValues<HighPrecision> hp = evaluate_step<HighPrecision>(c);
  auto check = [&](const char* name, const std::vector<RoundedValue>& e,
                   const Matrix<HighPrecision>& h) {
    RC_ASSERT(static_cast<Eigen::Index>(e.size()) == h.size());
    for (Eigen::Index i = 0; i < h.size(); ++i) {
      const HighPrecision value = h.data()[i];
      const double d = e[static_cast<std::size_t>(i)].value;
      const HighPrecision diff = abs(value - HighPrecision(d));
      // The exact value rounded to double is within half a double ULP of it.
      RC_ASSERT(diff <= abs(HighPrecision(d)) * HighPrecision(0x1p-52) + HighPrecision(1e-300));
      RC_ASSERT_FALSE(name == nullptr);
    }
  };
  check("kernel", exact.kernel, hp.kernel);
  check("bias", exact.bias, hp.bias);
  check("momentum_kernel", exact.momentum_kernel, hp.momentum_kernel);
  check("second_moment_kernel", exact.second_moment_kernel, hp.second_moment_kernel);
  // The certified path (which takes the exact one whole) and the oracle's expectation.
  const Expectation e = expect(c), x = expect_exact(c);
  expect_identical(e, x, "clipped");
}

// Section 17's bounds of the norm (N1) and of the factor (C) hold for the norm computed
// in float32 from a float32 step's gradients, as torch computes it (a norm per tensor,
// then the norm of the two) and as optax does (one sum of every square), and come near
// on some case: worst err/bound over 4,000 cases of every optimizer, clipped around
// their norm, for two spreads of the inputs.
TEST(Clipping, NormAndFactorBoundsAreSoundAndNear) {
  const auto float32 = conformance::builtin::make(conformance::builtin::find("float32"));
  for (const properties::Spread spread : {properties::Spread::unit, properties::Spread::wide}) {
    properties::CaseSpace space;
    space.momentum = properties::MomentumSupport{.coupled_decay = true};
    space.adam = properties::AdamSupport{.coupled_decay = true};
    space.recipe.clipping = properties::DeclaredClipping{.max_norm = {1e-7f, 1e4f}, .eps = 0.0f};
    const rc::Gen<Case> gen = properties::cases(space, {.spread = spread, .max_dim = 10});
    rc::Random random(17);
    std::vector<double> norm_ratios, factor_ratios;
    for (int i = 0; i < 4000; ++i) {
      rc::Random r = random.split();
      Case c = gen(r, i % 101).value();
      // The certified path's values: the exact path's, bit for bit (certified_step_test).
      const RoundedStep exact = certified_step(c);
      ExactMagnitudes mag;
      auto abs_values = [](const std::vector<RoundedValue>& v) {
        std::vector<double> out;
        for (const RoundedValue& x : v) out.push_back(std::abs(x.value));
        return out;
      };
      for (const double v : exact.residual) mag.residual.push_back(std::abs(v));
      mag.grad_kernel = abs_values(exact.grad_kernel);
      mag.grad_bias = abs_values(exact.grad_bias);
      mag.kernel = abs_values(exact.kernel);
      mag.bias = abs_values(exact.bias);
      mag.loss = exact.loss[0].value;
      const ErrorModel model;
      const StepBounds bounds = error_bounds(c, mag, model);
      const ClipFactorBound fb = clip_factor_bound(c, mag, bounds, operation_model(model));
      if (fb.norm_may_overflow) continue;
      const StepValues<Rational> v = evaluate_step<Rational>(c);
      const ClipFactor factor(c, v.grad_kernel, v.grad_bias);
      const double norm = std::sqrt(factor.squared_norm.convert_to<double>());
      const StepResult result = *float32->step(c).result;
      auto sum_squares = [](const std::vector<float>& g) {
        float s = 0.0f;
        for (const float x : g) s += x * x;
        return s;
      };
      const float nk = std::sqrt(sum_squares(result.grad_kernel)),
                  nb = std::sqrt(sum_squares(result.grad_bias));
      const float torch_norm = std::sqrt(nk * nk + nb * nb);
      const float optax_norm =
          std::sqrt(sum_squares(result.grad_kernel) + sum_squares(result.grad_bias));
      for (const float computed : {torch_norm, optax_norm}) {
        if (!std::isfinite(computed)) continue;
        const double err_n = std::abs(double(computed) - norm);
        ASSERT_LE(err_n, fb.e_norm) << "norm " << computed << " vs " << norm;
        if (fb.e_norm > 0.0) norm_ratios.push_back(err_n / fb.e_norm);
      }
      for (const float eps : {0.0f, 1e-6f}) {
        Case e = c;
        e.clip->eps = eps;
        const ClipFactorBound b = clip_factor_bound(e, mag, bounds, operation_model(model));
        const ClipFactor f(e, v.grad_kernel, v.grad_bias);
        const double exact_c = round_both(f.factor).value;
        for (const float computed : {torch_norm, optax_norm}) {
          if (!std::isfinite(computed)) continue;
          const double at_computed =
              std::min(1.0, double(e.clip->max_norm) / (double(computed) + double(eps)));
          // exact_c is within 2^-53 of the exact factor.
          const double err_c = std::abs(at_computed - exact_c) - 0x1p-52 * exact_c;
          ASSERT_LE(err_c, b.e_c) << "factor " << at_computed << " vs " << exact_c;
          if (b.e_c > 0.0) factor_ratios.push_back(std::max(err_c, 0.0) / b.e_c);
        }
      }
    }
    auto report = [&](const char* what, std::vector<double>& r) {
      ASSERT_FALSE(r.empty());
      std::sort(r.begin(), r.end());
      std::printf("  %s (%s): median %.3g max %.3g over %zu\n", what,
                  spread == properties::Spread::unit ? "unit normal" : "1e-3..1e3", r[r.size() / 2],
                  r.back(), r.size());
      EXPECT_GT(r.back(), 0.1) << what;
    };
    report("norm err/E_N", norm_ratios);
    report("factor err/E_c", factor_ratios);
  }
}

// Q(sqrt S)'s own square root and reciprocal, exactly.
TEST(Clipping, QuadraticRootAndReciprocalAreExact) {
  const Rational two(2);
  const Quadratic x(Rational(3, 2), Rational(1, 4), &two);
  EXPECT_EQ(x * reciprocal(x), Quadratic(1));
  const std::optional<Quadratic> root = square_root(x * x, &two);
  ASSERT_TRUE(root);
  EXPECT_EQ(*root, x);
  // sqrt(1 + sqrt 2) is not in Q(sqrt 2); 2 * 9 = 18 has the root 3 sqrt 2; 9/4 has 3/2.
  EXPECT_FALSE(square_root(Quadratic(Rational(1), Rational(1), &two), &two));
  EXPECT_EQ(*square_root(Quadratic(Rational(18)), &two), Quadratic(Rational(0), Rational(3), &two));
  EXPECT_EQ(*square_root(Quadratic(Rational(9, 4)), &two), Quadratic(Rational(3, 2)));
  // (1 - sqrt 2)^2 = 3 - 2 sqrt 2: the non-negative root is sqrt 2 - 1.
  EXPECT_EQ(*square_root(Quadratic(Rational(3), Rational(-2), &two), &two),
            Quadratic(Rational(-1), Rational(1), &two));
}

// A clipped Adam parameter whose moments are irrational and whose update is an exact
// float32 tie: vh = (1 + sqrt 2)^2 and mh = 1 + eps + sqrt 2 make the direction 1, so
// p' = 1 - 2^-25, halfway between 1 - 2^-24 and 1; it rounds to even, 1. No enclosure
// decides it; the exact test in Q(sqrt 2) does.
TEST(Clipping, AnExactTieWithIrrationalMomentsIsDecided) {
  Case c = one_by_one(1.0f);
  c.optimizer.kind = Optimizer::Kind::adam;
  c.optimizer.b1 = 0.5f;
  c.optimizer.b2 = 0.75f;
  c.optimizer.eps = 0x1p-10f;
  c.lr = 0x1p-25f;
  const AdamUpdate update(c);
  const Rational two(2), eps(0x1p-10);
  const Quadratic m(Rational((1 + eps) / 2), Rational(1, 2), &two);  // (1 - b1) mh
  const Quadratic v(Rational(3, 4), Rational(2, 4), &two);           // (1 - b2) (3 + 2 sqrt 2)
  const RoundedValue r = update.parameter(1.0f, m, v);
  EXPECT_EQ(r.rounded, 1.0f);
  EXPECT_EQ(r.value, 1.0 - 0x1p-25);
  const ExactValue e = update.exact(1.0f, m, v, 40);
  ASSERT_TRUE(e.rational);
  EXPECT_EQ(*e.rational, Rational(1) - Rational(1, 1 << 25));
}

TEST(Clipping, BadClipValuesAreNamed) {
  Case c = one_by_one(0.5f);
  for (const auto& [clip, field] :
       {std::pair{Clipping{0.0f, 0.0f}, "clip_max_norm"},
        std::pair{Clipping{-1.0f, 0.0f}, "clip_max_norm"},
        std::pair{Clipping{INFINITY, 0.0f}, "clip_max_norm"},
        std::pair{Clipping{1.0f, -1e-6f}, "clip_eps"}, std::pair{Clipping{1.0f, NAN}, "clip_eps"},
        std::pair{Clipping{1.0f, 1e-40f}, "clip_eps"}}) {
    c.clip = clip;
    try {
      c.validate();
      ADD_FAILURE() << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sgdc::reference
