#include "quadratic.hpp"

#include <stdexcept>
#include <string>

namespace sgdc::reference {

namespace {
// The radicand two values share (each has one only with b != 0).
const Rational* common(const Rational* x, const Rational* y) {
  if (x && y && x != y && *x != *y)
    throw std::logic_error("Quadratic: values of two different radicands combined");
  return x ? x : y;
}

int sign_of(const Rational& q) { return q > 0 ? 1 : (q < 0 ? -1 : 0); }

// Ziv's ladder for a rounded irrational value (as adam_update.cpp's).
constexpr long ladder[] = {128, 512, 2048, 8192};
}  // namespace

Quadratic::Quadratic(Rational a, Rational b, const Rational* s)
    : a_(std::move(a)), b_(std::move(b)), s_(s) {
  if (b_ != 0 && !s_) throw std::logic_error("Quadratic: b != 0 without a radicand");
}

Quadratic& Quadratic::operator+=(const Quadratic& o) {
  s_ = common(radicand(), o.radicand());
  a_ += o.a_;
  b_ += o.b_;
  return *this;
}

Quadratic& Quadratic::operator-=(const Quadratic& o) {
  s_ = common(radicand(), o.radicand());
  a_ -= o.a_;
  b_ -= o.b_;
  return *this;
}

// (a + b r)(c + d r) = (a c + b d S) + (a d + b c) r, r = sqrt(S).
Quadratic& Quadratic::operator*=(const Quadratic& o) {
  const Rational* s = common(radicand(), o.radicand());
  if (o.b_ == 0) {
    a_ *= o.a_;
    b_ *= o.a_;
  } else if (b_ == 0) {
    b_ = a_ * o.b_;
    a_ *= o.a_;
  } else {
    const Rational a = a_ * o.a_ + b_ * o.b_ * *s;
    b_ = a_ * o.b_ + b_ * o.a_;
    a_ = a;
  }
  s_ = s;
  return *this;
}

// a + b r with r > 0: the sign of a and b where they agree, else the sign of the larger
// of |a| and |b| r, told by a^2 against b^2 S.
int Quadratic::sign() const {
  const int sa = sign_of(a_), sb = sign_of(b_);
  if (sb == 0) return sa;
  if (sa == 0 || sa == sb) return sb;
  const int c = sign_of(a_ * a_ - b_ * b_ * *s_);
  return c == 0 ? 0 : (c > 0 ? sa : sb);
}

interval::Interval Quadratic::enclose(long precision) const {
  if (b_ == 0) return interval::enclose(a_, precision);
  return interval::add(interval::enclose(a_, precision),
                       interval::mul(interval::enclose(b_, precision),
                                     interval::root(interval::enclose(*s_, precision))));
}

std::optional<Rational> rational_root(const Rational& q) {
  if (q < 0) return std::nullopt;
  const mpq_srcptr v = q.backend().data();
  if (!mpz_perfect_square_p(mpq_numref(v)) || !mpz_perfect_square_p(mpq_denref(v)))
    return std::nullopt;
  Rational r;
  mpz_sqrt(mpq_numref(r.backend().data()), mpq_numref(v));
  mpz_sqrt(mpq_denref(r.backend().data()), mpq_denref(v));
  return r;
}

RoundedValue round_both(const Quadratic& x) {
  if (x.is_rational()) return {round_to_float32(x.a()), round_to_double(x.a())};
  for (const long precision : ladder)
    if (const std::optional<RoundedValue> r = interval::decide(x.enclose(precision))) return *r;
  throw std::runtime_error("a clipped step's value could not be rounded with certainty at " +
                           std::to_string(ladder[std::size(ladder) - 1]) + " bits");
}

ExactValue exact_value(const Quadratic& x, int digits) {
  ExactValue out;
  if (x.is_rational()) {
    out.rational = x.a();
    return out;
  }
  for (const long precision : {256L, 1024L, 4096L, 16384L})
    if (const std::optional<ExactValue> d = interval::decide_decimal(x.enclose(precision), digits))
      return *d;
  throw std::runtime_error("a clipped step's value: its " + std::to_string(digits) +
                           " significant digits could not be decided");
}

}  // namespace sgdc::reference
