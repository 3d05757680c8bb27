#include "sgdc/reference/rounding.hpp"

#include <mpfr.h>

#include "mpfr_thread_cache.hpp"

namespace sgdc::reference {

namespace {
// MPFR's exponent range is per thread; restore it whatever happens.
class ExponentRange {
 public:
  ExponentRange(mpfr_exp_t emin, mpfr_exp_t emax)
      : saved_min_(mpfr_get_emin()), saved_max_(mpfr_get_emax()) {
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
  }
  ~ExponentRange() {
    mpfr_set_emin(saved_min_);
    mpfr_set_emax(saved_max_);
  }
  ExponentRange(const ExponentRange&) = delete;
  ExponentRange& operator=(const ExponentRange&) = delete;

 private:
  mpfr_exp_t saved_min_, saved_max_;
};

class Mpfr {
 public:
  explicit Mpfr(mpfr_prec_t precision) {
    detail::free_mpfr_caches_at_thread_exit();
    mpfr_init2(value, precision);
  }
  ~Mpfr() { mpfr_clear(value); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
  mpfr_t value;
};
}  // namespace

float round_to_float32(const Rational& q) {
  // MPFR significands lie in [1/2, 1): binary32's smallest subnormal 2^-149 is
  // 0.5 * 2^-148 and its overflow threshold 2^128 is 0.5 * 2^129.
  const ExponentRange range(-148, 128);
  Mpfr t(24);
  int inexact = mpfr_set_q(t.value, q.backend().data(), MPFR_RNDN);
  inexact = mpfr_check_range(t.value, inexact, MPFR_RNDN);
  mpfr_subnormalize(t.value, inexact, MPFR_RNDN);
  return mpfr_get_flt(t.value, MPFR_RNDN);
}

double round_to_double(const Rational& q) {
  Mpfr t(53);
  mpfr_set_q(t.value, q.backend().data(), MPFR_RNDN);
  return mpfr_get_d(t.value, MPFR_RNDN);
}

}  // namespace sgdc::reference