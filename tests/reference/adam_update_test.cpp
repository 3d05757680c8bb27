// Adam's certification in double words (AdamUpdate::certify_double_word) decides what the
// exact value rounds to: on random elements with an exact gradient, every value it
// decides equals the correct rounding of the exact rational moments and of the
// parameter (the MPFR ladder's, AdamUpdate::parameter); with an enclosed gradient, it
// agrees with the MPFR intervals wherever both decide. And it decides nearly all of
// them, or the oracle would pay MPFR's price after all.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "adam_update.hpp"
#include "double_word.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference {
namespace {
using double_word::Approx;

bool same(const RoundedValue& a, const RoundedValue& b) {
  return std::signbit(a.rounded) == std::signbit(b.rounded) && a.rounded == b.rounded &&
         std::signbit(a.value) == std::signbit(b.value) && a.value == b.value;
}

// A random Adam configuration: both decay conventions, eps_root sometimes, t from 1 to
// far past where the bias corrections round to 1.
Case random_adam(std::mt19937_64& random) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_int_distribution<int> choice(0, 3), exponent(-30, 0);
  Case c;
  c.optimizer.kind = Optimizer::Kind::adam;
  c.optimizer.b1 =
      choice(random) == 0 ? 0.0f : 1.0f - std::ldexp(unit(random), exponent(random) / 3);
  c.optimizer.b2 = 1.0f - std::ldexp(unit(random) + 0.01f, exponent(random) / 2);
  c.optimizer.eps = std::ldexp(1.0f + unit(random), exponent(random));
  c.optimizer.eps_root =
      choice(random) == 0 ? std::ldexp(1.0f + unit(random), exponent(random)) : 0.0f;
  c.optimizer.weight_decay = choice(random) < 2 ? 0.0f : std::ldexp(unit(random), -3);
  c.optimizer.decay = choice(random) < 2 ? Optimizer::Decay::coupled : Optimizer::Decay::decoupled;
  c.lr = choice(random) == 0 ? 0.0f : std::ldexp(1.0f + unit(random), exponent(random) / 2);
  const std::int64_t steps[] = {0, 1, 9, 1000, 1 << 20};
  c.step = steps[choice(random)];
  return c;
}

float random_float(std::mt19937_64& random, int lowest, int highest, bool signed_) {
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(lowest, highest), coin(0, 1);
  const float f = std::ldexp(unit(random), exponent(random));
  return signed_ && coin(random) == 0 ? -f : f;
}

TEST(AdamUpdate, DoubleWordsDecideTheCorrectRounding) {
  std::mt19937_64 random(7);
  long decided = 0, elements = 0;
  for (int config = 0; config < 400; ++config) {
    const Case c = random_adam(random);
    const AdamUpdate adam(c);
    const Optimizer& o = c.optimizer;
    for (int i = 0; i < 50; ++i, ++elements) {
      const float p = random_float(random, -8, 4, true);
      const bool fresh = i % 5 == 0;
      const float m = fresh ? 0.0f : random_float(random, -20, 0, true);
      const float v = fresh ? 0.0f : random_float(random, -40, 0, false);
      // An exact gradient: a double-word value, as the certified path's often are.
      const double g_hi = static_cast<double>(random_float(random, -20, 2, true)) *
                          (1.0 + std::ldexp(static_cast<double>(i), -30));
      const Approx g{g_hi, i % 3 == 0 ? 0.0 : std::ldexp(g_hi, -60) * (i % 7), 0.0};
      const std::optional<AdamUpdate::Certified> fast = adam.certify_double_word(p, m, v, g);
      if (!fast) continue;
      ++decided;
      const std::string where =
          "config " + std::to_string(config) + " element " + std::to_string(i);
      // The referee: the exact moments in rationals, the parameter by the MPFR ladder.
      const Rational param(static_cast<double>(p)), wd(static_cast<double>(o.weight_decay));
      Rational ge = Rational(g.hi) + Rational(g.lo);
      if (o.decay == Optimizer::Decay::coupled) ge += wd * param;
      const Rational b1(static_cast<double>(o.b1)), b2(static_cast<double>(o.b2));
      const Rational m_new = b1 * Rational(static_cast<double>(m)) + (1 - b1) * ge;
      const Rational v_new = b2 * Rational(static_cast<double>(v)) + (1 - b2) * ge * ge;
      ASSERT_TRUE(same(*fast->m, {round_to_float32(m_new), round_to_double(m_new)})) << where;
      ASSERT_TRUE(same(*fast->v, {round_to_float32(v_new), round_to_double(v_new)})) << where;
      ASSERT_TRUE(same(*fast->param, adam.parameter(p, m_new, v_new))) << where;
      ASSERT_FALSE(fast->by_mpfr);
    }
  }
  // Undecided only where a value sits within about 2^-100 of a rounding boundary (or
  // outside the range of section 15): hardly ever on random values.
  EXPECT_GE(decided, elements * 99 / 100) << decided << " of " << elements << " decided";
}

TEST(AdamUpdate, DoubleWordsAgreeWithTheIntervalsOnEnclosedGradients) {
  std::mt19937_64 random(11);
  long compared = 0;
  for (int config = 0; config < 200; ++config) {
    const Case c = random_adam(random);
    const AdamUpdate adam(c);
    for (int i = 0; i < 50; ++i) {
      const float p = random_float(random, -8, 4, true);
      const float m = random_float(random, -20, 0, true), v = random_float(random, -40, 0, false);
      const double g_hi = random_float(random, -20, 2, true);
      const Approx g{g_hi, 0.0, std::ldexp(std::abs(g_hi), -80 + i % 40)};
      const std::optional<AdamUpdate::Certified> fast = adam.certify_double_word(p, m, v, g);
      const AdamUpdate::Certified slow = adam.certify_mpfr(p, m, v, g);
      ASSERT_TRUE(slow.by_mpfr);
      if (!fast) continue;
      const std::string where =
          "config " + std::to_string(config) + " element " + std::to_string(i);
      for (const auto member :
           {&AdamUpdate::Certified::param, &AdamUpdate::Certified::m, &AdamUpdate::Certified::v}) {
        if (!(slow.*member)) continue;
        ++compared;
        ASSERT_TRUE(same(*((*fast).*member), *(slow.*member))) << where;
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

}  // namespace
}  // namespace sgdc::reference

namespace sgdc::reference {
namespace {

// Adagrad through the same update: m' = ge, v' = v + ge^2, no bias correction. An exact
// tie (p' = 1 - 2^-25, halfway between 1 - 2^-24 and 1) is decided in rationals, as the
// rounding to nearest even puts it, at any step; the double words and the intervals agree
// with it, and with an irrational p' where no tie exists.
TEST(AdamUpdate, AdagradTiesAndAgreement) {
  Case c;
  c.optimizer.kind = Optimizer::Kind::adagrad;
  c.optimizer.eps = 1.0f;
  c.lr = 0x1p-25f;
  for (const std::int64_t step : {std::int64_t{0}, std::int64_t{1} << 40}) {
    c.step = step;
    const AdamUpdate update(c);
    // ge = 5, v' = 16: the direction 5 / (sqrt(16) + 1) = 1 exactly.
    const RoundedValue tie = update.parameter(1.0f, Rational(5), Rational(16));
    EXPECT_EQ(tie.rounded, 1.0f) << step;
    EXPECT_EQ(tie.value, 1.0 - 0x1p-25) << step;
    // v = 16 - 25 < 0 is no state; v = 0 with ge = 4: v' = 16, the direction 4/5.
    const AdamUpdate::Certified fast = update.certify(1.0f, 0.0f, 0.0f, Approx{4.0, 0.0, 0.0});
    ASSERT_TRUE(fast.param && fast.v);
    EXPECT_EQ(fast.v->rounded, 16.0f);
    EXPECT_TRUE(same(*fast.param, update.parameter(1.0f, Rational(4), Rational(16))));
    const AdamUpdate::Certified slow = update.certify_mpfr(1.0f, 0.0f, 0.0f, Approx{4.0, 0.0, 0.0});
    ASSERT_TRUE(slow.param && slow.v);
    EXPECT_TRUE(same(*slow.param, *fast.param));
  }
  // optax's form: eps inside the root, none outside; ge = 3, v = 7, eps_root = 2^-20.
  c.optimizer.eps = 0.0f;
  c.optimizer.eps_root = 0x1p-20f;
  c.lr = 0.5f;
  c.step = 3;
  const AdamUpdate update(c);
  const AdamUpdate::Certified fast = update.certify(2.0f, 0.0f, 7.0f, Approx{3.0, 0.0, 0.0});
  ASSERT_TRUE(fast.param && fast.v);
  EXPECT_EQ(fast.v->rounded, 16.0f);
  const double expected = 2.0 - 0.5 * 3.0 / std::sqrt(16.0 + 0x1p-20);
  EXPECT_EQ(fast.param->rounded, static_cast<float>(expected));
  EXPECT_TRUE(same(*fast.param, update.parameter(2.0f, Rational(3), Rational(16))));
}

}  // namespace
}  // namespace sgdc::reference
