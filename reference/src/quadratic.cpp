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

Quadratic reciprocal(const Quadratic& x) {
  if (x.is_rational()) {
    if (x.a() == 0) throw std::domain_error("Quadratic: 1 / 0");
    return Quadratic(Rational(1 / x.a()));
  }
  // S is not a rational's square, so a^2 - b^2 S != 0.
  const Rational n = x.a() * x.a() - x.b() * x.b() * *x.radicand();
  return Quadratic(Rational(x.a() / n), Rational(-x.b() / n), x.radicand());
}

// (c + d r)^2 = (c^2 + d^2 S) + 2 c d r: for w = a + b r, b != 0, c^2 is a root of
// 4 z^2 - 4 a z + b^2 S = 0, z = (a +- sqrt(a^2 - b^2 S)) / 2, and d = b / (2 c). For a
// rational w, sqrt(w) is rational, or d r with d^2 = w / S, or outside the field.
std::optional<Quadratic> square_root(const Quadratic& w, const Rational* s) {
  if (w.sign() < 0) return std::nullopt;
  if (w.is_rational()) {
    if (const std::optional<Rational> r = rational_root(w.a())) return Quadratic(*r);
    if (s)
      if (const std::optional<Rational> d = rational_root(Rational(w.a() / *s)))
        return Quadratic(Rational(0), *d, s);
    return std::nullopt;
  }
  const Rational& a = w.a();
  const Rational& b = w.b();
  const Rational* r = w.radicand();
  const std::optional<Rational> disc = rational_root(a * a - b * b * *r);
  if (!disc) return std::nullopt;
  for (const Rational z : {Rational((a + *disc) / 2), Rational((a - *disc) / 2)}) {
    if (z <= 0) continue;
    const std::optional<Rational> c = rational_root(z);
    if (!c) continue;
    Quadratic root(*c, Rational(b / (2 * *c)), r);
    if (root.sign() < 0) root = -root;
    if (root * root == w) return root;
  }
  return std::nullopt;
}

}  // namespace sgdc::reference
