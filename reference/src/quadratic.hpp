#pragma once
// The exact values of a clipped step: elements a + b sqrt(S) of the field Q(sqrt(S)), S
// the squared norm of one case's gradients (docs/spec/step.md, "Gradient clipping";
// docs/error-model.md, section 17). The clip factor M / (sqrt(S) + eps) lies in it, and
// so does every value the optimizers make from the clipped gradient by sums and products.
// Internal to sgdc::reference.

#include <Eigen/Core>
#include <optional>

#include "interval.hpp"
#include "sgdc/reference/rounded_step.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference {

/// a + b sqrt(S). A value made from rationals alone has b = 0 and no radicand; one with
/// b != 0 points at its case's S, which outlives it, and whose square root is irrational
/// (a rational root is folded into a, so that equal values have equal parts).
class Quadratic {
 public:
  Quadratic() = default;
  Quadratic(int v) : a_(v) {}  // NOLINT: Eigen's and the step's Scalar(1), Scalar(2)
  Quadratic(double v) : a_(v) {}
  Quadratic(Rational a) : a_(std::move(a)) {}
  /// a + b sqrt(*s); `s` must not be the square of a rational when b != 0.
  Quadratic(Rational a, Rational b, const Rational* s);

  const Rational& a() const { return a_; }
  const Rational& b() const { return b_; }
  /// S, or null for a rational value.
  const Rational* radicand() const { return b_ == 0 ? nullptr : s_; }
  bool is_rational() const { return b_ == 0; }

  Quadratic& operator+=(const Quadratic& o);
  Quadratic& operator-=(const Quadratic& o);
  Quadratic& operator*=(const Quadratic& o);
  friend Quadratic operator+(Quadratic x, const Quadratic& y) { return x += y; }
  friend Quadratic operator-(Quadratic x, const Quadratic& y) { return x -= y; }
  friend Quadratic operator*(Quadratic x, const Quadratic& y) { return x *= y; }
  friend Quadratic operator-(Quadratic x) {
    x.a_ = -x.a_;
    x.b_ = -x.b_;
    return x;
  }
  friend bool operator==(const Quadratic& x, const Quadratic& y) {
    return x.a_ == y.a_ && x.b_ == y.b_;
  }

  /// -1, 0 or 1: the sign of a + b sqrt(S), exactly (squares compared in rationals).
  int sign() const;
  /// The value enclosed at `precision` bits.
  interval::Interval enclose(long precision) const;

 private:
  Rational a_, b_;
  const Rational* s_ = nullptr;
};

/// q's square root when it is the square of a rational (both parts of q, reduced, perfect
/// squares), else none.
std::optional<Rational> rational_root(const Rational& q);

/// 1 / x, exactly: (a - b sqrt(S)) / (a^2 - b^2 S). `x` must not be 0.
Quadratic reciprocal(const Quadratic& x);

/// The non-negative square root of w >= 0 when it lies in Q(sqrt(*s)) (a rational, or
/// c + d sqrt(S)), else none; `s` is the radicand w's field has (w's own when irrational).
std::optional<Quadratic> square_root(const Quadratic& w, const Rational* s);

/// x correctly rounded to float32 and to double: a rational by rounding.hpp, an
/// irrational one by enclosures of growing precision until one float32 and one double
/// hold it (an irrational value lies on no rounding boundary). Throws
/// std::runtime_error if none of them decides.
RoundedValue round_both(const Quadratic& x);

/// x exactly (exact_value.hpp): its rational when it is one, else its decimal at `digits`
/// significant digits, decided by enclosures of growing precision. Throws
/// std::runtime_error if none of them decides.
ExactValue exact_value(const Quadratic& x, int digits);

}  // namespace sgdc::reference

// Quadratic as an Eigen scalar: the optimizers' updates (exact_step.cpp) run on its
// matrices as they run on rationals.
template <>
struct Eigen::NumTraits<sgdc::reference::Quadratic>
    : Eigen::GenericNumTraits<sgdc::reference::Quadratic> {
  using Real = sgdc::reference::Quadratic;
  using NonInteger = sgdc::reference::Quadratic;
  using Literal = sgdc::reference::Quadratic;
  using Nested = sgdc::reference::Quadratic;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 1,
    AddCost = 4,
    MulCost = 8
  };
  static Real epsilon() { return 0; }
  static Real dummy_precision() { return 0; }
  static int digits10() { return 0; }
};
