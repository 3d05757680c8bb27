#pragma once
// Double-word arithmetic with a rigorous running error bound: the certified step's
// building blocks (docs/error-model.md, section 11). Internal to sgdc::reference.
//
// Every value here stays within 2^-700 .. 2^600 in magnitude or is zero (the inputs are
// finite float32 values; section 11 bounds each intermediate), so double arithmetic
// neither underflows nor overflows and each rounding has relative error at most 2^-53.
// This file must be compiled without FMA contraction (-ffp-contract=off): the error-free
// transformations below rely on every operation being rounded as written.

#include <cmath>
#include <optional>

namespace sgdc::double_word {

/// Unit roundoff of double.
inline constexpr double u = 0x1p-53;

/// Every computed error bound is multiplied by this: it covers the bound's own rounding
/// errors (sums of at most 2^22 non-negative terms, relative error below 2^-31).
inline constexpr double bound_slack = 1.0 + 0x1p-30;

/// An unevaluated sum hi + lo.
struct Pair {
  double hi = 0.0, lo = 0.0;
};

/// An exact value X known to lie in [hi + lo - err, hi + lo + err], with hi the double
/// nearest to hi + lo (so |lo| <= ulp(hi) / 2).
struct Approx {
  double hi = 0.0, lo = 0.0, err = 0.0;
};

/// Knuth's TwoSum: s.hi = fl(a + b), s.hi + s.lo = a + b exactly.
inline Pair two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

/// Veltkamp's split: a = hi + lo with hi and lo of at most 26 significant bits each.
inline Pair split(double a) {
  const double t = (0x1p27 + 1.0) * a;
  const double hi = t - (t - a);
  return {hi, a - hi};
}

/// Dekker's product: p.hi = fl(a b), p.hi + p.lo = a b exactly.
inline Pair two_prod(double a, double b) {
  const double p = a * b;
  const Pair x = split(a), y = split(b);
  return {p, ((x.hi * y.hi - p) + x.hi * y.lo + x.lo * y.hi) + x.lo * y.lo};
}

/// gamma_m = m u / (1 - m u) for double (Higham, Lemma 3.1); m is small here.
inline double gamma(double m) { return m * u / (1.0 - m * u); }

/// How an Accumulator bounds the rounding errors of its low part.
enum class Tracking {
  /// Ogita-Rump-Oishi's Sum2: the low part is a plain sum, its rounding errors bounded
  /// by gamma_m times the sum of its terms' magnitudes; products of low parts are
  /// rounded once. Fast, but never certifies a value as exact.
  a_priori,
  /// Every addition to the low part is a TwoSum and every product is split so that it
  /// is exact; the bound is the sum of the errors actually made, zero when the
  /// double-word result is exact. About twice the work.
  exact_errors,
};

/// A sum of exact doubles and of double-word values, with a running error bound. The
/// large part is carried error-free by TwoSum in `hi`; the TwoSum errors and the small
/// parts go to the low part `lo`, tracked as `T` says.
template <Tracking T>
class Accumulator {
 public:
  /// Adds t exactly.
  void add_exact(double t) {
    const Pair s = two_sum(hi_, t);
    hi_ = s.hi;
    add_small(s.lo);
  }

  /// Adds t, an exact term, to the low part.
  void add_small(double t) {
    if constexpr (T == Tracking::exact_errors) {
      const Pair s = two_sum(lo_, t);
      lo_ = s.hi;
      err_ += std::abs(s.lo);
    } else {
      lo_ += t;
      small_ += std::abs(t);
      ++small_terms_;
    }
  }

  /// Widens the bound by e: the exact sum has a term known only within +-e.
  void add_error(double e) { err_ += e; }

  /// Adds x a, for x of at most 27 significant bits (a float32 value, or an integer
  /// below 2^27) and `hi` = split(a.hi): x * hi.hi and x * hi.lo are exact, x a.err
  /// widens the bound, and x * a.lo is rounded once (a_priori) or split too (exact).
  void add_product(double x, Pair hi, const Approx& a) {
    add_exact(x * hi.hi);
    add_exact(x * hi.lo);
    if constexpr (T == Tracking::exact_errors) {
      const Pair lo = split(a.lo);
      add_small(x * lo.hi);
      add_small(x * lo.lo);
    } else {
      add_rounded(x * a.lo);
    }
    add_error(std::abs(x) * a.err);
  }

  /// Adds a^2 = hi^2 + 2 hi lo + lo^2 (Dekker's products, exact; lo^2 only bounded in
  /// a_priori mode) + (2 (hi + lo) e + e^2, bounded).
  void add_square(const Approx& a) {
    const Pair p = two_prod(a.hi, a.hi);
    add_exact(p.hi);
    add_small(p.lo);
    const Pair q = two_prod(a.hi, a.lo);
    add_small(2.0 * q.hi);
    add_small(2.0 * q.lo);
    if constexpr (T == Tracking::exact_errors) {
      const Pair r = two_prod(a.lo, a.lo);
      add_small(r.hi);
      add_small(r.lo);
    } else {
      add_error(a.lo * a.lo);
    }
    const double m = std::abs(a.hi) + std::abs(a.lo);
    add_error(2.0 * m * a.err + a.err * a.err);
  }

  /// Adds a double-word value.
  void add(const Approx& a) {
    add_exact(a.hi);
    add_small(a.lo);
    add_error(a.err);
  }

  /// The sum so far, normalised, with its bound.
  Approx result() const {
    const Pair s = two_sum(hi_, lo_);
    return {s.hi, s.lo, (gamma(small_terms_) * small_ + err_) * bound_slack};
  }

 private:
  // Adds t = fl(z) for an exact z with |t - z| <= u |t| (one rounded operation).
  void add_rounded(double t) {
    add_small(t);
    err_ += u * std::abs(t);
  }

  double hi_ = 0.0, lo_ = 0.0;
  double small_ = 0.0;  // a_priori: sum of |terms| added to lo_
  double err_ = 0.0;    // bound on everything else
  int small_terms_ = 0;
};

/// q = fl(n / m) and n - q m, computed exactly (Dekker's product, then Sterbenz's
/// lemma; the remainder of a rounded division is a double).
inline Pair divide_with_remainder(double n, double m) {
  const double q = n / m;
  const Pair p = two_prod(q, m);
  return {q, (n - p.hi) - p.lo};
}

/// a / m for an integer 0 < m < 2^27. a.hi / m = q1 + r1 / m exactly; (r1 + a.lo) is
/// s + e exactly (TwoSum); s / m = q2 + r2 / m exactly. So a / m = q1 + q2 +
/// (r2 + e) / m within a.err / m: the bound is exact-zero when the quotient is a
/// double-word value.
inline Approx divide(const Approx& a, double m) {
  const Pair q1 = divide_with_remainder(a.hi, m);
  const Pair s = two_sum(q1.lo, a.lo);
  const Pair q2 = divide_with_remainder(s.hi, m);
  const Pair q = two_sum(q1.hi, q2.hi);
  return {q.hi, q.lo, ((std::abs(q2.lo) + std::abs(s.lo)) / m + a.err / m) * bound_slack};
}

/// 2 a, exactly.
inline Approx twice(const Approx& a) { return {2.0 * a.hi, 2.0 * a.lo, 2.0 * a.err}; }

/// Adds x a for any double x: x split into two halves of at most 26 bits, each times a
/// by Accumulator::add_product (exact products of the halves of a.hi; a.lo rounded or
/// split as T says).
template <Tracking T>
void add_scaled(Accumulator<T>& acc, double x, const Approx& a) {
  const Pair xs = split(x);
  const Pair hi = split(a.hi);
  acc.add_product(xs.hi, hi, a);
  if (xs.lo != 0.0) acc.add_product(xs.lo, hi, a);
}

/// a b for two enclosed values: a.hi b and a.lo b by add_scaled (a.lo's product rounded
/// once), and the bound a.err (|b.hi| + |b.lo| + b.err) for what a's enclosure leaves
/// open; its low products may underflow (underflow_slack, below, covers them). An exact
/// zero factor gives an exact zero.
inline Approx product(const Approx& a, const Approx& b);

// Quotients and square roots of enclosed values (docs/error-model.md, section 15). Unlike
// the sums and products above, their low parts are any doubles, so a rounding inside may
// underflow; each such rounding errs by at most 2^-1075 absolutely (Higham, section 2.1),
// and this covers them all, with room to spare.
inline constexpr double underflow_slack = 0x1p-900;

/// A lower bound on every real in b's enclosure, when that is positive and the
/// enclosure narrow (|b.lo| + b.err <= 2^-20 b.hi); 0 otherwise. Two roundings of
/// relative error u at most, whose effect the factor 1 - 2^-50 > (1 - u)^3 outweighs.
inline double positive_lower_bound(const Approx& b) {
  if (!(b.hi > 0.0) || !(std::abs(b.lo) + b.err <= 0x1p-20 * b.hi)) return 0.0;
  return (b.hi - std::abs(b.lo) - b.err) * (1.0 - 0x1p-50);
}

/// a / b for b enclosed in positive reals (positive_lower_bound(b) > 0; nullopt
/// otherwise). With q0 = fl(a.hi / b.hi), R = A - q0 B is enclosed in r (every term of
/// it exact or bounded), and A / B = q0 + R / B exactly; q1 = fl(r.hi / b.hi) differs from
/// R / B by at most (|r.lo| + r.err) / Bmin + |r.hi| (|b.lo| + b.err) / (Bmin b.hi)
/// + u |q1|, Bmin the lower bound on B. The result is TwoSum(q0, q1).
inline std::optional<Approx> quotient(const Approx& a, const Approx& b) {
  const double b_min = positive_lower_bound(b);
  if (!(b_min > 0.0)) return std::nullopt;
  const double q0 = a.hi / b.hi;
  Accumulator<Tracking::a_priori> acc;
  acc.add(a);
  add_scaled(acc, -q0, b);
  const Approx r = acc.result();
  const double q1 = r.hi / b.hi;
  const double err = (std::abs(r.lo) + r.err) / b_min +
                     std::abs(r.hi) * (std::abs(b.lo) + b.err) / (b_min * b.hi) + u * std::abs(q1);
  const Pair q = two_sum(q0, q1);
  return Approx{q.hi, q.lo, err * bound_slack + underflow_slack};
}

inline Approx product(const Approx& a, const Approx& b) {
  // An exact zero times anything is an exact zero (no rounding, so no slack): a zero
  // gradient clipped stays certified as +0, where its parameter or state is one.
  auto zero = [](const Approx& x) { return x.hi == 0.0 && x.lo == 0.0 && x.err == 0.0; };
  if (zero(a) || zero(b)) return Approx{};
  Accumulator<Tracking::a_priori> acc;
  add_scaled(acc, a.hi, b);
  if (a.lo != 0.0) add_scaled(acc, a.lo, b);
  acc.add_error(a.err * (std::abs(b.hi) + std::abs(b.lo) + b.err));
  Approx r = acc.result();
  r.err += underflow_slack;
  return r;
}

/// The square root of x, enclosed in reals >= 0 by construction (x is an enclosure of a
/// value known to be non-negative); nullopt when x.hi <= 0 unless x is exactly zero.
/// With s0 = fl(sqrt(x.hi)), R = X - s0^2 is enclosed in r (Dekker's square, exact), and
/// sqrt(X) = s0 + R / (sqrt(X) + s0) exactly; s1 = fl(r.hi / (2 s0)) differs from the
/// last term by at most (|r.lo| + r.err) / s0 + |r.hi| (|r.hi| + |r.lo| + r.err) /
/// (2 s0^3) + u |s1| (sqrt(X) + s0 >= s0, and |s0 - sqrt(X)| = |R| / (sqrt(X) + s0)).
/// The result is TwoSum(s0, s1).
inline std::optional<Approx> square_root(const Approx& x) {
  if (x.hi == 0.0 && x.lo == 0.0 && x.err == 0.0) return Approx{};
  if (!(x.hi > 0.0)) return std::nullopt;
  const double s0 = std::sqrt(x.hi);
  const Pair p = two_prod(s0, s0);
  Accumulator<Tracking::a_priori> acc;
  acc.add(x);
  acc.add_exact(-p.hi);
  acc.add_small(-p.lo);
  const Approx r = acc.result();
  const double s1 = r.hi / (2.0 * s0);
  const double err =
      (std::abs(r.lo) + r.err) / s0 +
      std::abs(r.hi) * (std::abs(r.hi) + std::abs(r.lo) + r.err) / (2.0 * s0) / s0 / s0 +
      u * std::abs(s1);
  const Pair s = two_sum(s0, s1);
  return Approx{s.hi, s.lo, err * bound_slack + underflow_slack};
}

}  // namespace sgdc::double_word