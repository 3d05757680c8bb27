// The double-word quotient and square root (reference/src/double_word.hpp) enclose the
// exact value of every real their operands' enclosures allow, checked in rational
// arithmetic on random operands over the range they are used in (2^-350 .. 2^350),
// with and without error bounds on the operands; and their bounds stay near 2^-100 of
// the value, or the certified path would never decide anything with them.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>

#include "double_word.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::double_word {
namespace {
using reference::Rational;

Rational exact(double x) { return Rational(x); }
Rational middle(const Approx& a) { return exact(a.hi) + exact(a.lo); }

// Whether the enclosure of `a` holds q: |q - (hi + lo)| <= err.
bool holds(const Approx& a, const Rational& q) { return abs(q - middle(a)) <= exact(a.err); }

// Operands: a random double of magnitude in [2^lowest, 2^highest], a low part below half
// its ulp (sometimes none), and a bound of 0, a few ulps of the low part, or ~2^-70 of it.
class Operands {
 public:
  explicit Operands(unsigned seed) : random_(seed) {}

  Approx next(int lowest, int highest, bool positive) {
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    std::uniform_int_distribution<int> exponent(lowest, highest);
    std::uniform_int_distribution<int> choice(0, 3);
    double hi = std::ldexp(unit(random_), exponent(random_));
    if (!positive && choice(random_) == 0) hi = -hi;
    int e = 0;
    std::frexp(hi, &e);
    const double lo = choice(random_) == 0 ? 0.0 : std::ldexp(unit(random_) - 1.5, e - 54);
    const Pair p = two_sum(hi, lo);
    double err = 0.0;
    switch (choice(random_)) {
      case 0:
        break;
      case 1:
        err = std::ldexp(1.0, e - 110);
        break;
      case 2:
        err = std::ldexp(unit(random_), e - 70);
        break;
      default:
        err = underflow_slack;
    }
    return {p.hi, p.lo, err};
  }

 private:
  std::mt19937_64 random_;
};

std::string show(const Approx& a) {
  char text[160];
  std::snprintf(text, sizeof text, "{%a, %a, err %a}", a.hi, a.lo, a.err);
  return text;
}

TEST(DoubleWordQuotient, EnclosesEveryQuotientOfItsOperands) {
  Operands operands(1);
  for (int i = 0; i < 20000; ++i) {
    const Approx a = operands.next(-175, 175, false), b = operands.next(-175, 175, true);
    const std::optional<Approx> q = quotient(a, b);
    ASSERT_TRUE(q) << show(b);
    // The quotient is monotone in each operand (b > 0): its extremes are at the corners.
    for (const double sa : {-1.0, 1.0})
      for (const double sb : {-1.0, 1.0}) {
        const Rational corner = (middle(a) + sa * exact(a.err)) / (middle(b) + sb * exact(b.err));
        ASSERT_TRUE(holds(*q, corner)) << show(a) << " / " << show(b) << " = " << show(*q);
      }
    // Tight: within 2^-95 of the value when the operands are (their bounds at most 2^-70
    // of them widen it in proportion).
    const double width = std::abs(a.err / a.hi) + b.err / b.hi;
    EXPECT_LE(q->err, (0x1p-95 + 2 * width) * std::abs(q->hi) + 2 * underflow_slack)
        << show(a) << " / " << show(b) << " = " << show(*q);
  }
}

TEST(DoubleWordQuotient, RefusesADivisorThatMayBeZeroOrIsWide) {
  EXPECT_FALSE(quotient({1.0, 0.0, 0.0}, {0.0, 0.0, 0.0}));
  EXPECT_FALSE(quotient({1.0, 0.0, 0.0}, {-1.0, 0.0, 0.0}));
  EXPECT_FALSE(quotient({1.0, 0.0, 0.0}, {1.0, 0.0, 0x1p-10}));
  EXPECT_TRUE(quotient({1.0, 0.0, 0.0}, {1.0, 0.0, 0x1p-30}));
}

TEST(DoubleWordSquareRoot, EnclosesEveryRootOfItsOperand) {
  Operands operands(2);
  for (int i = 0; i < 20000; ++i) {
    const Approx x = operands.next(-350, 350, true);
    const std::optional<Approx> s = square_root(x);
    ASSERT_TRUE(s) << show(x);
    const Rational low = middle(*s) - exact(s->err), high = middle(*s) + exact(s->err);
    ASSERT_GE(high, 0) << show(x);
    // sqrt is monotone: every root lies in [low, high] when the ends' squares do.
    for (const double sign : {-1.0, 1.0}) {
      Rational corner = middle(x) + sign * exact(x.err);
      if (corner < 0) corner = 0;
      ASSERT_TRUE(low <= 0 || low * low <= corner) << show(x) << " -> " << show(*s);
      ASSERT_GE(high * high, corner) << show(x) << " -> " << show(*s);
    }
    EXPECT_LE(s->err, (0x1p-95 + x.err / x.hi) * s->hi + 2 * underflow_slack)
        << show(x) << " -> " << show(*s);
  }
}

TEST(DoubleWordSquareRoot, ExactSquaresAndZero) {
  // 9 = 3^2: the root is 3 within the slack alone.
  const std::optional<Approx> three = square_root({9.0, 0.0, 0.0});
  ASSERT_TRUE(three);
  EXPECT_EQ(three->hi, 3.0);
  EXPECT_EQ(three->lo, 0.0);
  EXPECT_LE(three->err, underflow_slack);
  const std::optional<Approx> zero = square_root({0.0, 0.0, 0.0});
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->hi, 0.0);
  EXPECT_EQ(zero->err, 0.0);
  // An enclosure reaching below zero with a zero middle: not taken.
  EXPECT_FALSE(square_root({0.0, 0.0, 0x1p-100}));
}

}  // namespace
}  // namespace sgdc::double_word
