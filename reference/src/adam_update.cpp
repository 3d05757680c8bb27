#include "adam_update.hpp"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "certify_rounding.hpp"
#include "interval.hpp"
#include "quadratic.hpp"

namespace sgdc::reference {

using namespace interval;

namespace {
// 1 - b^t for b in [0, 1): b^t by MPFR's correctly rounded power, each direction.
Interval bias_correction(float b, std::int64_t t, long precision) {
  Interval r(precision);
  Big x(precision), power(precision);
  mpfr_set_d(x.get(), b, MPFR_RNDN);  // exact
  mpfr_pow_ui(power.get(), x.get(), static_cast<unsigned long>(t), MPFR_RNDU);
  mpfr_ui_sub(r.lo.get(), 1, power.get(), MPFR_RNDD);
  mpfr_pow_ui(power.get(), x.get(), static_cast<unsigned long>(t), MPFR_RNDD);
  mpfr_ui_sub(r.hi.get(), 1, power.get(), MPFR_RNDU);
  return r;
}

RoundedValue round_both(const Rational& q) { return {round_to_float32(q), round_to_double(q)}; }

// b^t exactly, by squaring; only for small t (its digits grow with t) or b = 0.
Rational power(float b, std::int64_t t) {
  if (b == 0.0f) return Rational(t == 0 ? 1 : 0);
  Rational result(1), base(static_cast<double>(b));
  for (std::int64_t e = t; e > 0; e >>= 1) {
    if (e & 1) result *= base;
    if (e > 1) base *= base;
  }
  return result;
}

}  // namespace

// The double-word value nearest the middle of a (at most 128 bits wide), with a bound
// that covers all of a: |hi + lo - x| <= err for every x in a.
double_word::Approx to_double_word(const Interval& a) {
  const long precision = 2 * precision_of(a);
  Big middle(precision), rest(precision), above(precision), below(precision);
  mpfr_add(middle.get(), a.lo.get(), a.hi.get(), MPFR_RNDN);
  mpfr_div_2ui(middle.get(), middle.get(), 1, MPFR_RNDN);
  const double hi = mpfr_get_d(middle.get(), MPFR_RNDN);
  mpfr_sub_d(rest.get(), middle.get(), hi, MPFR_RNDN);
  const double_word::Pair sum = double_word::two_sum(hi, mpfr_get_d(rest.get(), MPFR_RNDN));
  // Upper bounds, each rounding directed: a.hi - sum.hi - sum.lo and sum.hi + sum.lo - a.lo.
  mpfr_sub_d(above.get(), a.hi.get(), sum.hi, MPFR_RNDU);
  mpfr_sub_d(above.get(), above.get(), sum.lo, MPFR_RNDU);
  mpfr_d_sub(below.get(), sum.hi, a.lo.get(), MPFR_RNDU);
  mpfr_add_d(below.get(), below.get(), sum.lo, MPFR_RNDU);
  if (mpfr_less_p(above.get(), below.get())) mpfr_swap(above.get(), below.get());
  return {sum.hi, sum.lo, mpfr_get_d(above.get(), MPFR_RNDU)};
}

struct AdamUpdate::Intervals {
  std::vector<Interval> bc1, bc2;
};

AdamUpdate::AdamUpdate(const Case& c)
    : o_(c.optimizer),
      adagrad_(c.optimizer.kind == Optimizer::Kind::adagrad),
      lr_(c.lr),
      t_(c.step == std::numeric_limits<std::int64_t>::max() ? c.step : c.step + 1),
      bc_(new Intervals) {
  // Adagrad is this update with no bias correction: b1 = b2 = 0 (its validated case holds
  // them so) make both corrections 1 - 0^t = 1 exactly.
  if (o_.kind != Optimizer::Kind::adam && !adagrad_)
    throw std::invalid_argument("AdamUpdate: not an Adam or Adagrad case");
  // The first rung now (certify() reads it from many threads); the others when a
  // parameter() call first climbs to them.
  bc_->bc1.push_back(bias_correction(o_.b1, t_, ladder[0]));
  bc_->bc2.push_back(bias_correction(o_.b2, t_, ladder[0]));
  bc1_ = to_double_word(bc_->bc1[0]);
  bc2_ = to_double_word(bc_->bc2[0]);
}

AdamUpdate::~AdamUpdate() { delete bc_; }

namespace {
// p' from enclosures of m' and v', at the rung's precision.
Interval parameter_interval(const Optimizer& o, float lr, float p, const Interval& m,
                            const Interval& v, const Interval& bc1, const Interval& bc2) {
  const long precision = precision_of(m);
  const Interval mh = div(m, bc1);
  const Interval vh = div(v, bc2);
  const Interval denominator =
      add(root(add(vh, point(o.eps_root, precision))), point(o.eps, precision));
  Interval direction = div(mh, denominator);
  const Interval param = point(p, precision);
  if (o.decay == Optimizer::Decay::decoupled && o.weight_decay != 0.0f)
    direction = add(direction, mul(point(o.weight_decay, precision), param));
  return sub(param, mul(point(lr, precision), direction));
}
}  // namespace

RoundedValue AdamUpdate::parameter(float p, const Rational& m_new, const Rational& v_new) const {
  const bool decoupled = o_.decay == Optimizer::Decay::decoupled;
  const Rational param(static_cast<double>(p)), lr(static_cast<double>(lr_)),
      wd(static_cast<double>(o_.weight_decay));
  // No direction: p' is rational.
  if (lr_ == 0.0f || m_new == 0) return round_both(decoupled ? param - lr * wd * param : param);
  bool tie_tested = false;
  // Not decided: p' may be rational and sit on a rounding boundary, which no enclosure
  // decides. It is rational exactly when vh + eps_root is the square of a rational.
  auto tie = [&]() -> std::optional<RoundedValue> {
    if (tie_tested || !powers_exact()) return std::nullopt;
    tie_tested = true;
    const Rational bc1 = 1 - power(o_.b1, t_), bc2 = 1 - power(o_.b2, t_);
    const std::optional<Rational> s =
        rational_root(v_new / bc2 + Rational(static_cast<double>(o_.eps_root)));
    if (!s) return std::nullopt;
    Rational direction = (m_new / bc1) / (*s + Rational(static_cast<double>(o_.eps)));
    if (decoupled) direction += wd * param;
    return round_both(param - lr * direction);
  };
  return climb(
      p,
      [&](long precision) {
        return std::pair{enclose(m_new, precision), enclose(v_new, precision)};
      },
      tie, "Adam's parameter update");
}

// p' is rational exactly where m' = 0 or lr = 0, or where sqrt(vh + eps_root) lies in
// Q(sqrt S) (else m' / (that + eps) would not) and p', computed in Q(sqrt S) then, has no
// sqrt(S) part. An irrational p' lies on no rounding boundary.
std::optional<Rational> AdamUpdate::rational_parameter(float p, const Quadratic& m_new,
                                                       const Quadratic& v_new) const {
  const bool decoupled = o_.decay == Optimizer::Decay::decoupled;
  const Rational param(static_cast<double>(p)), lr(static_cast<double>(lr_)),
      wd(static_cast<double>(o_.weight_decay));
  if (lr_ == 0.0f || m_new.sign() == 0) return decoupled ? param - lr * wd * param : param;
  if (!powers_exact()) return std::nullopt;
  const Rational bc1 = 1 - power(o_.b1, t_), bc2 = 1 - power(o_.b2, t_);
  const Rational* s = m_new.radicand() ? m_new.radicand() : v_new.radicand();
  const Quadratic w =
      v_new * Quadratic(Rational(1 / bc2)) + Quadratic(Rational(static_cast<double>(o_.eps_root)));
  const std::optional<Quadratic> root = square_root(w, s);
  if (!root) return std::nullopt;
  const Quadratic denominator = *root + Quadratic(Rational(static_cast<double>(o_.eps)));
  if (denominator.sign() == 0) return std::nullopt;
  Quadratic direction = m_new * Quadratic(Rational(1 / bc1)) * reciprocal(denominator);
  if (decoupled) direction += Quadratic(Rational(wd * param));
  const Quadratic value = Quadratic(param) - Quadratic(lr) * direction;
  if (!value.is_rational()) return std::nullopt;
  return value.a();
}

RoundedValue AdamUpdate::parameter(float p, const Quadratic& m_new, const Quadratic& v_new) const {
  if (m_new.is_rational() && v_new.is_rational()) return parameter(p, m_new.a(), v_new.a());
  // Not decided: p' may be rational and sit on a rounding boundary, which no enclosure
  // decides; tested exactly, once.
  bool tie_tested = false;
  auto tie = [&]() -> std::optional<RoundedValue> {
    if (tie_tested) return std::nullopt;
    tie_tested = true;
    const std::optional<Rational> q = rational_parameter(p, m_new, v_new);
    return q ? std::optional<RoundedValue>(round_both(*q)) : std::nullopt;
  };
  return climb(
      p,
      [&](long precision) {
        return std::pair{m_new.enclose(precision), v_new.enclose(precision)};
      },
      tie, "a clipped step's Adam or Adagrad parameter");
}

template <class Moments, class Tie>
RoundedValue AdamUpdate::climb(float p, Moments moments, Tie tie, const char* what) const {
  for (std::size_t rung = 0; rung < ladder.size(); ++rung) {
    const long precision = ladder[rung];
    if (bc_->bc1.size() <= rung) {
      bc_->bc1.push_back(bias_correction(o_.b1, t_, precision));
      bc_->bc2.push_back(bias_correction(o_.b2, t_, precision));
    }
    const auto [m, v] = moments(precision);
    const Interval value = parameter_interval(o_, lr_, p, m, v, bc_->bc1[rung], bc_->bc2[rung]);
    if (const std::optional<RoundedValue> r = decide(value)) return *r;
    if (const std::optional<RoundedValue> r = tie()) return *r;
  }
  throw std::runtime_error(std::string(what) + " could not be rounded with certainty at " +
                           std::to_string(ladder.back()) + " bits (t = " + std::to_string(t_) +
                           ")");
}

ExactValue AdamUpdate::exact(float p, const Rational& m_new, const Rational& v_new,
                             int digits) const {
  const bool decoupled = o_.decay == Optimizer::Decay::decoupled;
  const Rational param(static_cast<double>(p)), lr(static_cast<double>(lr_)),
      wd(static_cast<double>(o_.weight_decay));
  ExactValue out;
  // No direction, or a square root of a rational's square: p' is rational.
  if (lr_ == 0.0f || m_new == 0) {
    out.rational = decoupled ? param - lr * wd * param : param;
    return out;
  }
  if (powers_exact()) {
    const Rational bc1 = 1 - power(o_.b1, t_), bc2 = 1 - power(o_.b2, t_);
    if (const std::optional<Rational> s =
            rational_root(v_new / bc2 + Rational(static_cast<double>(o_.eps_root)))) {
      Rational direction = (m_new / bc1) / (*s + Rational(static_cast<double>(o_.eps)));
      if (decoupled) direction += wd * param;
      out.rational = param - lr * direction;
      return out;
    }
  }
  // Irrational (or t too large to tell): no decimal tie exists for an irrational value,
  // so a fine enough enclosure decides every digit.
  return decimal(
      p, [&](long precision) { return enclose(m_new, precision); },
      [&](long precision) { return enclose(v_new, precision); }, digits);
}

ExactValue AdamUpdate::exact(float p, const Quadratic& m_new, const Quadratic& v_new,
                             int digits) const {
  if (m_new.is_rational() && v_new.is_rational()) return exact(p, m_new.a(), v_new.a(), digits);
  // A rational p' is written whole; an irrational one has no decimal tie.
  if (const std::optional<Rational> q = rational_parameter(p, m_new, v_new)) {
    ExactValue out;
    out.rational = *q;
    return out;
  }
  return decimal(
      p, [&](long precision) { return m_new.enclose(precision); },
      [&](long precision) { return v_new.enclose(precision); }, digits);
}

template <class M, class V>
ExactValue AdamUpdate::decimal(float p, M m_new, V v_new, int digits) const {
  for (const long precision : {256L, 1024L, 4096L, 16384L}) {
    const Interval value = parameter_interval(o_, lr_, p, m_new(precision), v_new(precision),
                                              bias_correction(o_.b1, t_, precision),
                                              bias_correction(o_.b2, t_, precision));
    if (!mpfr_number_p(value.lo.get()) || !mpfr_number_p(value.hi.get())) break;
    if (const std::optional<ExactValue> d = decide_decimal(value, digits)) return *d;
  }
  throw std::runtime_error("Adam's parameter update: its " + std::to_string(digits) +
                           " significant digits could not be decided (t = " + std::to_string(t_) +
                           ")");
}

AdamUpdate::Certified AdamUpdate::certify(float p, float m, float v,
                                          const double_word::Approx& g) const {
  if (const std::optional<Certified> fast = certify_double_word(p, m, v, g)) return *fast;
  return certify_mpfr(p, m, v, g);
}

namespace {
// Section 15's range: every value of the chain zero or of magnitude in [2^-350, 2^350],
// so that its low part and bound stay far above double's underflow (the products of
// two bounds included) and below its overflow.
bool in_range(const double_word::Approx& a) {
  if (!std::isfinite(a.hi) || !std::isfinite(a.lo) || !std::isfinite(a.err)) return false;
  const double magnitude = std::abs(a.hi);
  return (magnitude == 0.0 && a.lo == 0.0) || (magnitude >= 0x1p-350 && magnitude <= 0x1p350);
}
}  // namespace

// (A) in double words, docs/error-model.md section 15: ge = g + wd p (coupled; wd p
// exact), m' = b1 m + (1 - b1) ge and v' = b2 v + (1 - b2) ge^2 (b m exact; 1 - b a
// TwoSum pair), then p' = p - lr (m' / bc1) / (sqrt(v' / bc2 + eps_root) + eps)
// (- lr wd p, decoupled) by the quotients and square root of double_word.hpp.
std::optional<AdamUpdate::Certified> AdamUpdate::certify_double_word(
    float p, float m, float v, const double_word::Approx& g) const {
  using double_word::Accumulator;
  using double_word::Approx;
  using double_word::Tracking;
  const double param = p, wd = o_.weight_decay;
  const bool decoupled = o_.decay == Optimizer::Decay::decoupled;
  // Low parts here are any doubles (quotients' and roots' among them), so a product of
  // two may underflow: each result's bound takes double_word::underflow_slack.
  auto settled = [](const Accumulator<Tracking::a_priori>& a) {
    Approx r = a.result();
    r.err += double_word::underflow_slack;
    return r;
  };
  // x + wd p (wd p exact: two float32 values), where the decay enters.
  auto plus_decay = [&](const Approx& x) {
    Accumulator<Tracking::a_priori> a;
    a.add(x);
    a.add_exact(wd * param);
    return settled(a);
  };
  const Approx ge = !decoupled && wd != 0.0 ? plus_decay(g) : g;
  // b x + (1 - b) y, for the state x and the new term y.
  auto moment = [&settled](float b, float x, const Approx& y) {
    const double_word::Pair keep = double_word::two_sum(1.0, -static_cast<double>(b));
    Accumulator<Tracking::a_priori> a;
    a.add_exact(static_cast<double>(b) * static_cast<double>(x));
    double_word::add_scaled(a, keep.hi, y);
    if (keep.lo != 0.0) double_word::add_scaled(a, keep.lo, y);
    return settled(a);
  };
  Accumulator<Tracking::a_priori> squares;
  squares.add_square(ge);
  const Approx ge2 = settled(squares);
  // Adagrad: m' = ge, v' = v + ge^2 (its sum of squares).
  auto accumulated = [&settled](float x, const Approx& y) {
    Accumulator<Tracking::a_priori> a;
    a.add_exact(x);
    a.add(y);
    return settled(a);
  };
  const Approx m_new = adagrad_ ? ge : moment(o_.b1, m, ge);
  const Approx v_new = adagrad_ ? accumulated(v, ge2) : moment(o_.b2, v, ge2);
  for (const Approx& a : {g, ge, ge2, m_new, v_new})
    if (!in_range(a)) return std::nullopt;
  Certified out;
  out.m = certified_roundings(m_new);
  out.v = certified_roundings(v_new);
  if (!out.m || !out.v) return std::nullopt;
  if (lr_ == 0.0f) {
    // p' = p, or p - 0 (wd p): p itself, an exact zero as +0 (as the exact path rounds it).
    out.param = round_both(Rational(param));
    return out;
  }
  // Adagrad's corrections are 1: no quotient.
  const std::optional<Approx> mh = adagrad_ ? m_new : double_word::quotient(m_new, bc1_);
  const std::optional<Approx> vh = adagrad_ ? v_new : double_word::quotient(v_new, bc2_);
  if (!mh || !vh) return std::nullopt;
  Accumulator<Tracking::a_priori> radicand;
  radicand.add(*vh);
  radicand.add_exact(o_.eps_root);
  const std::optional<Approx> root = double_word::square_root(settled(radicand));
  if (!root) return std::nullopt;
  Accumulator<Tracking::a_priori> denominator;
  denominator.add(*root);
  denominator.add_exact(o_.eps);
  const std::optional<Approx> quotient = double_word::quotient(*mh, settled(denominator));
  if (!quotient) return std::nullopt;
  const Approx direction = decoupled && wd != 0.0 ? plus_decay(*quotient) : *quotient;
  Accumulator<Tracking::a_priori> updated;
  updated.add_exact(param);
  double_word::add_scaled(updated, -static_cast<double>(lr_), direction);
  const Approx p_new = settled(updated);
  for (const Approx& a : {*mh, *vh, *root, direction, p_new})
    if (!in_range(a)) return std::nullopt;
  out.param = certified_roundings(p_new);
  if (!out.param) return std::nullopt;
  return out;
}

AdamUpdate::Certified AdamUpdate::certify_mpfr(float p, float m, float v,
                                               const double_word::Approx& gradient) const {
  const long precision = ladder[0];
  Interval g = add(point(gradient.hi, precision), point(gradient.lo, precision));
  mpfr_sub_d(g.lo.get(), g.lo.get(), gradient.err, MPFR_RNDD);
  mpfr_add_d(g.hi.get(), g.hi.get(), gradient.err, MPFR_RNDU);
  const Interval param = point(p, precision);
  if (o_.decay == Optimizer::Decay::coupled && o_.weight_decay != 0.0f)
    g = add(g, mul(point(o_.weight_decay, precision), param));
  const Interval b1 = point(o_.b1, precision), b2 = point(o_.b2, precision);
  const Interval one = point(1.0, precision);
  const Interval m_new = adagrad_ ? g : add(mul(b1, point(m, precision)), mul(sub(one, b1), g));
  const Interval v_new = adagrad_ ? add(point(v, precision), square(g))
                                  : add(mul(b2, point(v, precision)), mul(sub(one, b2), square(g)));
  Certified out;
  out.by_mpfr = true;
  out.m = decide(m_new);
  out.v = decide(v_new);
  if (lr_ == 0.0f) {
    // p' = p, or p - 0 (wd p): p itself, an exact zero as +0 (as the exact path rounds it).
    out.param = round_both(Rational(static_cast<double>(p)));
  } else {
    out.param = decide(parameter_interval(o_, lr_, p, m_new, v_new, bc_->bc1[0], bc_->bc2[0]));
  }
  return out;
}

}  // namespace sgdc::reference
