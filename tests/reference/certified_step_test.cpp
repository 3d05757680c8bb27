// The certified fast path reproduces the exact path bit for bit: expect() (certified,
// with exact fallback) against expect_exact() (exact rationals only) on every element
// of many random cases from the project's generators, and the fallback rate printed.
//
// SGDC_AGREEMENT_CASES sets the number of cases (default 100000; the asan test preset
// lowers it because the sanitizers slow the exact path twentyfold).
#include <gtest/gtest.h>

#include <rapidcheck.h>
#include <cstdio>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "identical.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/reference/certified_step.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/rounded_step.hpp"

namespace sgdc::reference {
namespace {
using identical::expect_identical;
using identical::same;

long agreement_cases() {
  const char* text = std::getenv("SGDC_AGREEMENT_CASES");
  return text != nullptr ? std::stol(text) : 100000;
}

// Cases that draw momentum in a third of the cases and Adam in another, with every
// option (Adam's parameters through its square root: enclosed, not rational).
properties::CaseSpace with_optimizers() {
  properties::CaseSpace space;
  space.momentum = properties::MomentumSupport{
      .dampening = true, .nesterov = true, .coupled_decay = true, .decoupled_decay = true};
  space.adam =
      properties::AdamSupport{.coupled_decay = true, .decoupled_decay = true, .eps_root = true};
  return space;
}

// One generator per kind of case, drawn in turn: the default mixture, each value
// spread with cancellation-prone targets, and special values (NaN, inf, -0, subnormal,
// near overflow), at sizes up to 12 (N, D, K); every other kind with the optimizers too.
rc::Gen<Case> generator(long i) {
  switch (i % 6) {
    case 0:
      return properties::any_case(properties::CaseSpace{}, 12);
    case 1:
      return properties::any_case(with_optimizers(), 12);
    case 2:
      return properties::cases(properties::CaseSpace{}, {.spread = properties::Spread::unit,
                                                         .lr = properties::LrRegime::tiny,
                                                         .cancellation = true});
    case 3:
      return properties::cases(with_optimizers(), {.spread = properties::Spread::wide,
                                                   .lr = properties::LrRegime::mixed,
                                                   .cancellation = true});
    case 4:
      return properties::cases(with_optimizers(), {.spread = properties::Spread::extreme,
                                                   .lr = properties::LrRegime::mixed});
    default:
      return properties::special_cases(properties::CaseSpace{});
  }
}

TEST(CertifiedStep, AgreesWithExactPathBitForBit) {
  const long count = agreement_cases();
  const CertificationCounters before = certification_counters();
  rc::Random random(20240601);
  for (long i = 0; i < count; ++i) {
    const Case c = generator(i)(random.split(), static_cast<int>(i % 101)).value();
    const std::string where = "case " + std::to_string(i) + " (n=" + std::to_string(c.n) +
                              " d=" + std::to_string(c.d) + " k=" + std::to_string(c.k) + ")";
    ASSERT_NO_FATAL_FAILURE(expect_identical(expect(c), expect_exact(c), where));
    // The ftz model's bounds use the same magnitudes; check they agree too, now and then.
    if (i % 16 == 0) {
      const ErrorModel ftz{.subnormals = Subnormals::flush_to_zero};
      ASSERT_NO_FATAL_FAILURE(expect_identical(expect(c, ftz), expect_exact(c, ftz), where));
    }
  }
  const CertificationCounters after = certification_counters();
  const auto cases = after.cases - before.cases;
  const auto refined = after.refined_cases - before.refined_cases;
  const auto exact_cases = after.exact_cases - before.exact_cases;
  const auto elements = after.elements - before.elements;
  const auto fallbacks = after.fallback_elements - before.fallback_elements;
  const auto adam = after.adam_elements - before.adam_elements;
  const auto adam_by_mpfr = after.adam_by_mpfr - before.adam_by_mpfr;
  std::cout << "Adam: " << adam_by_mpfr << " of " << adam
            << " elements certified in MPFR intervals, the others in double words ("
            << (adam > 0 ? 100.0 * adam_by_mpfr / adam : 0.0) << "%)\n";
  RecordProperty("adam_by_mpfr", std::to_string(adam_by_mpfr));
  std::cout << "certified path: " << cases << " evaluations, " << refined
            << " needed the tighter evaluation (" << 100.0 * refined / cases << "%), "
            << exact_cases << " needed the exact step (" << 100.0 * exact_cases / cases << "%); "
            << fallbacks << " of " << elements << " values not certified ("
            << 100.0 * fallbacks / elements << "%)\n";
  RecordProperty("refined_cases", std::to_string(refined));
  RecordProperty("exact_cases", std::to_string(exact_cases));
  RecordProperty("fallback_elements", std::to_string(fallbacks));
}

// Adagrad, torch's form (eps outside the root) and optax's (inside), at every spread and
// with special values: the certified path's double words and intervals give the exact
// path's bits and bounds.
TEST(CertifiedStep, AgreesWithExactPathOnAdagrad) {
  const long count = std::max(agreement_cases() / 4, 60L);
  rc::Random random(20261206);
  for (long i = 0; i < count; ++i) {
    properties::CaseSpace space;
    space.adagrad = properties::AdagradSupport{
        .coupled_decay = true, .decoupled_decay = true, .eps_root = i % 2 == 1};
    space.recipe.optimizers = {Optimizer::Kind::adagrad};
    const auto spread = static_cast<properties::Spread>((i / 2) % 3);
    const rc::Gen<Case> gen = i % 5 == 4
                                  ? properties::special_cases(space)
                                  : properties::cases(space, {.spread = spread,
                                                              .lr = properties::LrRegime::mixed,
                                                              .cancellation = i % 3 == 0});
    const Case c = gen(random.split(), static_cast<int>(i % 101)).value();
    if (c.optimizer.kind != Optimizer::Kind::adagrad) continue;
    const std::string where = "Adagrad case " + std::to_string(i);
    ASSERT_NO_FATAL_FAILURE(expect_identical(expect(c), expect_exact(c), where));
  }
}

// Clipping (torch's eps and optax's, max_norm around the norm), every optimizer, at
// every spread and with special values: the certified path's enclosed factor gives the
// exact path's bits and bounds, and decides most cases itself.
TEST(CertifiedStep, AgreesWithExactPathOnClipping) {
  const long count = std::max(agreement_cases() / 4, 60L);
  rc::Random random(20261207);
  std::uint64_t exact_before = certification_counters().exact_cases, cases = 0;
  for (long i = 0; i < count; ++i) {
    properties::CaseSpace space;
    space.momentum = properties::MomentumSupport{
        .dampening = true, .nesterov = true, .coupled_decay = true, .decoupled_decay = true};
    space.adam =
        properties::AdamSupport{.coupled_decay = true, .decoupled_decay = true, .eps_root = true};
    space.adagrad = properties::AdagradSupport{.coupled_decay = true, .decoupled_decay = true};
    space.recipe.clipping =
        properties::DeclaredClipping{.max_norm = {1e-7f, 1e4f}, .eps = i % 2 == 0 ? 1e-6f : 0.0f};
    const auto spread = static_cast<properties::Spread>((i / 2) % 3);
    const rc::Gen<Case> gen = i % 5 == 4
                                  ? properties::special_cases(space)
                                  : properties::cases(space, {.spread = spread,
                                                              .lr = properties::LrRegime::mixed,
                                                              .cancellation = i % 3 == 0});
    const Case c = gen(random.split(), static_cast<int>(i % 101)).value();
    ASSERT_TRUE(c.clip);
    ++cases;
    const std::string where = "clipped case " + std::to_string(i);
    ASSERT_NO_FATAL_FAILURE(expect_identical(expect(c), expect_exact(c), where));
  }
  // The certified path's own calls that needed the exact step, whole or in part.
  const std::uint64_t fell_back = certification_counters().exact_cases - exact_before;
  std::printf("  clipped cases the certified path left to the exact step: %llu of %llu\n",
              static_cast<unsigned long long>(fell_back), static_cast<unsigned long long>(cases));
  EXPECT_LT(fell_back, cases / 2);
}

// Exact zeros, exact float32 values and exact ties are certified or fall back, never
// rounded wrongly: a hand-made case where r = 0 exactly and updates are exact.
TEST(CertifiedStep, ExactValuesAndZeros) {
  Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {2.0f};
  c.bias = {1.0f};
  c.x = {3.0f};
  c.y = {7.0f};
  c.lr = 0.5f;
  const RoundedStep fast = certified_step(c);
  const RoundedStep exact = round_exact_step(c);
  EXPECT_EQ(fast.fallback_elements, 0u);
  EXPECT_FALSE(fast.exact_evaluated);
  EXPECT_TRUE(same(fast.residual[0], 0.0));
  EXPECT_TRUE(same(fast.loss[0].rounded, exact.loss[0].rounded));
  EXPECT_TRUE(same(fast.grad_kernel[0].rounded, 0.0f));  // +0, not -0
  EXPECT_TRUE(same(fast.kernel[0].rounded, 2.0f));
}

// A value exactly halfway between two float32 values (ties to even) is decided right.
TEST(CertifiedStep, TiesAndUnderflowMatchExact) {
  Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {1.0f + 0x1p-23f};
  c.bias = {0.0f};
  c.x = {0x1p-75f};
  c.y = {0x1p-100f};
  c.lr = 0x1p-24f;
  const RoundedStep fast = certified_step(c);
  const RoundedStep exact = round_exact_step(c);
  for (std::size_t i = 0; i < fast.kernel.size(); ++i) {
    EXPECT_TRUE(same(fast.kernel[i].rounded, exact.kernel[i].rounded));
    EXPECT_TRUE(same(fast.grad_kernel[i].rounded, exact.grad_kernel[i].rounded));
  }
  EXPECT_TRUE(same(fast.loss[0].rounded, exact.loss[0].rounded));
  EXPECT_TRUE(same(fast.loss[0].value, exact.loss[0].value));
}

}  // namespace
}  // namespace sgdc::reference