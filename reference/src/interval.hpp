#pragma once
// Closed intervals of MPFR numbers that hold an exact real value: every operation rounds
// the lower end down and the upper end up, so the enclosure survives every step, at any
// precision (Ziv's strategy climbs a ladder of them). Adam's and Adagrad's update and the
// clipped step's values are enclosed in them (docs/error-model.md, sections 14 and 17).
// Internal to sgdc::reference.

#include <mpfr.h>

#include <optional>

#include "mpfr_thread_cache.hpp"
#include "sgdc/reference/exact_value.hpp"
#include "sgdc/reference/rounded_step.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference::interval {

// An MPFR number that frees itself.
class Big {
 public:
  explicit Big(long precision) {
    detail::free_mpfr_caches_at_thread_exit();
    mpfr_init2(v_, precision);
  }
  Big(const Big& other) {
    detail::free_mpfr_caches_at_thread_exit();
    mpfr_init2(v_, mpfr_get_prec(other.v_));
    mpfr_set(v_, other.v_, MPFR_RNDN);  // same precision: exact
  }
  Big& operator=(const Big& other) {
    if (this != &other) {
      mpfr_set_prec(v_, mpfr_get_prec(other.v_));
      mpfr_set(v_, other.v_, MPFR_RNDN);  // same precision: exact
    }
    return *this;
  }
  ~Big() { mpfr_clear(v_); }
  mpfr_ptr get() { return v_; }
  mpfr_srcptr get() const { return v_; }
  long precision() const { return mpfr_get_prec(v_); }

 private:
  mpfr_t v_;
};

// A closed interval [lo, hi] holding the exact value; every operation rounds its lower
// end down and its upper end up, so the enclosure survives every step.
struct Interval {
  Big lo, hi;
  explicit Interval(long precision) : lo(precision), hi(precision) {}
};

long precision_of(const Interval& a);
/// [x, x] for a float32 or double x (exact at >= 53 bits).
Interval point(double x, long precision);
/// The rational q, its ends rounded outward.
Interval enclose(const Rational& q, long precision);
Interval add(const Interval& a, const Interval& b);
Interval sub(const Interval& a, const Interval& b);
Interval mul(const Interval& a, const Interval& b);
/// b > 0 throughout.
Interval div(const Interval& a, const Interval& b);
Interval square(const Interval& a);
/// a's square root, its negative part read as 0.
Interval root(const Interval& a);
bool nonnegative(const Interval& a);
bool nonpositive(const Interval& a);
/// The roundings of every real of the interval to float32 and to double when they agree
/// (and the interval does not reach zero, whose sign the enclosure cannot tell, unless it
/// is exactly zero); none when they do not.
std::optional<RoundedValue> decide(const Interval& a);
/// The decimal of every real of the interval at `digits` significant digits, rounded to
/// nearest, when both ends give the same digits (and the interval neither reaches 0 nor
/// holds a non-finite end); none otherwise.
std::optional<ExactValue> decide_decimal(const Interval& a, int digits);

}  // namespace sgdc::reference::interval
