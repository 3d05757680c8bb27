#include "interval.hpp"

#include <string>
#include <utility>

namespace sgdc::reference::interval {

namespace {
// The smallest and largest of op(x, y) over the ends of a and b: products and quotients
// are monotone in each argument on intervals that do not contain a pole.
template <class Op>
Interval corners(const Interval& a, const Interval& b, Op op) {
  const long p = precision_of(a);
  Interval r(p);
  Big t(p);
  bool first = true;
  for (const Big* x : {&a.lo, &a.hi}) {
    for (const Big* y : {&b.lo, &b.hi}) {
      op(t.get(), x->get(), y->get(), MPFR_RNDD);
      if (first || mpfr_less_p(t.get(), r.lo.get())) mpfr_set(r.lo.get(), t.get(), MPFR_RNDD);
      op(t.get(), x->get(), y->get(), MPFR_RNDU);
      if (first || mpfr_greater_p(t.get(), r.hi.get())) mpfr_set(r.hi.get(), t.get(), MPFR_RNDU);
      first = false;
    }
  }
  return r;
}

// [x, y] with x = op(a, b) rounded down and y = op(c, d) rounded up.
template <class Op>
Interval ends(const Big& a, const Big& b, const Big& c, const Big& d, Op op) {
  Interval r(a.precision());
  op(r.lo.get(), a.get(), b.get(), MPFR_RNDD);
  op(r.hi.get(), c.get(), d.get(), MPFR_RNDU);
  return r;
}

}  // namespace

long precision_of(const Interval& a) { return a.lo.precision(); }

Interval point(double x, long precision) {
  Interval r(precision);
  mpfr_set_d(r.lo.get(), x, MPFR_RNDD);  // float32 and double values: exact at >= 53 bits
  mpfr_set_d(r.hi.get(), x, MPFR_RNDU);
  return r;
}

Interval enclose(const Rational& q, long precision) {
  Interval r(precision);
  mpfr_set_q(r.lo.get(), q.backend().data(), MPFR_RNDD);
  mpfr_set_q(r.hi.get(), q.backend().data(), MPFR_RNDU);
  return r;
}

Interval add(const Interval& a, const Interval& b) {
  Interval r(precision_of(a));
  mpfr_add(r.lo.get(), a.lo.get(), b.lo.get(), MPFR_RNDD);
  mpfr_add(r.hi.get(), a.hi.get(), b.hi.get(), MPFR_RNDU);
  return r;
}

Interval sub(const Interval& a, const Interval& b) {
  Interval r(precision_of(a));
  mpfr_sub(r.lo.get(), a.lo.get(), b.hi.get(), MPFR_RNDD);
  mpfr_sub(r.hi.get(), a.hi.get(), b.lo.get(), MPFR_RNDU);
  return r;
}

bool nonnegative(const Interval& a) { return mpfr_sgn(a.lo.get()) >= 0; }
bool nonpositive(const Interval& a) { return mpfr_sgn(a.hi.get()) <= 0; }

// By the signs of the ends where they are known (two roundings instead of eight; most
// of Adam's factors are nonnegative), else by the four corners.
Interval mul(const Interval& a, const Interval& b) {
  if (nonnegative(b)) {
    if (nonnegative(a)) return ends(a.lo, b.lo, a.hi, b.hi, mpfr_mul);
    if (nonpositive(a)) return ends(a.lo, b.hi, a.hi, b.lo, mpfr_mul);
    return ends(a.lo, b.hi, a.hi, b.hi, mpfr_mul);
  }
  if (nonnegative(a)) return mul(b, a);
  return corners(a, b, mpfr_mul);
}

// b > 0 throughout (Adam's denominators are at least eps > 0).
Interval div(const Interval& a, const Interval& b) {
  if (nonnegative(a)) return ends(a.lo, b.hi, a.hi, b.lo, mpfr_div);
  if (nonpositive(a)) return ends(a.lo, b.lo, a.hi, b.hi, mpfr_div);
  return ends(a.lo, b.lo, a.hi, b.lo, mpfr_div);
}

Interval square(const Interval& a) {
  Interval r = mul(a, a);
  if (mpfr_sgn(a.lo.get()) < 0 && mpfr_sgn(a.hi.get()) > 0) mpfr_set_zero(r.lo.get(), 1);
  return r;
}

Interval root(const Interval& a) {
  Interval r(precision_of(a));
  if (mpfr_sgn(a.lo.get()) <= 0) {
    mpfr_set_zero(r.lo.get(), 1);
  } else {
    mpfr_sqrt(r.lo.get(), a.lo.get(), MPFR_RNDD);
  }
  mpfr_sqrt(r.hi.get(), a.hi.get(), MPFR_RNDU);
  return r;
}

// The roundings of every real of [lo, hi] when they agree (and the interval does not
// reach zero, whose sign the enclosure cannot tell, unless it is exactly zero).
std::optional<RoundedValue> decide(const Interval& a) {
  if (!mpfr_number_p(a.lo.get()) || !mpfr_number_p(a.hi.get())) return std::nullopt;
  if (mpfr_zero_p(a.lo.get()) && mpfr_zero_p(a.hi.get())) return RoundedValue{0.0f, 0.0};
  if (mpfr_sgn(a.lo.get()) <= 0 && mpfr_sgn(a.hi.get()) >= 0) return std::nullopt;
  // MPFR's conversions round correctly, gradual underflow and overflow included: each
  // end rounded once, straight from its binary value.
  const float f = mpfr_get_flt(a.lo.get(), MPFR_RNDN);
  const double d = mpfr_get_d(a.lo.get(), MPFR_RNDN);
  if (mpfr_get_flt(a.hi.get(), MPFR_RNDN) != f || mpfr_get_d(a.hi.get(), MPFR_RNDN) != d)
    return std::nullopt;
  return RoundedValue{f, d};
}

namespace {
// The end's first `digits` significant decimal digits, rounded to nearest, and the
// exponent of the last: value ~ digits * 10^exponent.
std::pair<std::string, long> decimal_digits(const Big& end, int digits) {
  mpfr_exp_t e = 0;
  char* text =
      mpfr_get_str(nullptr, &e, 10, static_cast<std::size_t>(digits), end.get(), MPFR_RNDN);
  std::string s(text);
  mpfr_free_str(text);
  if (!s.empty() && s[0] == '-') s.erase(0, 1);
  return {s, static_cast<long>(e) - digits};
}
}  // namespace

std::optional<ExactValue> decide_decimal(const Interval& a, int digits) {
  if (!mpfr_number_p(a.lo.get()) || !mpfr_number_p(a.hi.get())) return std::nullopt;
  if (mpfr_sgn(a.lo.get()) != mpfr_sgn(a.hi.get()) || mpfr_zero_p(a.lo.get())) return std::nullopt;
  const auto lo = decimal_digits(a.lo, digits), hi = decimal_digits(a.hi, digits);
  if (lo != hi) return std::nullopt;
  ExactValue out;
  out.negative = mpfr_sgn(a.lo.get()) < 0;
  out.digits = lo.first;
  out.exponent = lo.second;
  return out;
}

}  // namespace sgdc::reference::interval
