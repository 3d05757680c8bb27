#pragma once
// Adam's parameter update (and Adagrad's, the same with m' = ge, v' = v + ge^2 and no bias
// correction), correctly rounded although it is irrational: the exact value is
// enclosed in MPFR intervals (every operation rounded outward), at growing precision
// until one float32 and one double hold the whole enclosure (Ziv's strategy); an exact
// tie is decided in rational arithmetic. docs/error-model.md, section 14. The certified
// path tries double-word enclosures first (section 15), far cheaper, and climbs to the
// intervals only where those do not decide. Internal to sgdc::reference.

#include <array>
#include <cstdint>
#include <optional>

#include "double_word.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/exact_value.hpp"
#include "sgdc/reference/rounded_step.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::reference {

class Quadratic;

/// One Adam or Adagrad case's hyperparameters, with the bias corrections 1 - b1^t and 1 - b2^t
/// (t = step + 1) enclosed once per precision of the ladder, the first at construction, the
/// others when first needed.
class AdamUpdate {
 public:
  /// `c` must be an Adam or Adagrad case with finite hyperparameters.
  explicit AdamUpdate(const Case& c);
  ~AdamUpdate();
  AdamUpdate(const AdamUpdate&) = delete;
  AdamUpdate& operator=(const AdamUpdate&) = delete;

  /// p' from the exact new moments m' and v' (rationals; Adagrad's m' is the decayed
  /// gradient ge, its v' the new sum of squares), correctly rounded to float32
  /// and to double. Not for concurrent calls on one object (it fills the ladder's
  /// corrections as it climbs); certify() is. Throws std::runtime_error if no precision of the
  /// ladder decides it (an exact tie that rational arithmetic cannot reach: never seen).
  RoundedValue parameter(float p, const Rational& m_new, const Rational& v_new) const;
  /// The same for a clipped step's moments, in Q(sqrt S) (quadratic.hpp): as above where
  /// both are rational; else enclosed only (an exact tie would need sqrt(vh + eps_root) in
  /// Q(sqrt S): never seen; std::runtime_error if it is ever reached).
  RoundedValue parameter(float p, const Quadratic& m_new, const Quadratic& v_new) const;

  /// p' exactly (exact_value.hpp): its rational when it is one, else its decimal at
  /// `digits` significant digits, climbing a ladder of precisions until both ends of the
  /// enclosure give the same digits.
  ExactValue exact(float p, const Rational& m_new, const Rational& v_new, int digits) const;
  /// The same for a clipped step's moments, in Q(sqrt S).
  ExactValue exact(float p, const Quadratic& m_new, const Quadratic& v_new, int digits) const;

  /// The new parameter and moments from the gradient g enclosed as a double-word value
  /// (m and v the state before the step, 0 and Adagrad's initial value when fresh),
  /// each correctly rounded where the enclosure decides it, nullopt where it does not.
  /// First in double-word arithmetic (double_word.hpp: quotients and square roots with
  /// certified errors), and where that does not decide all three, in MPFR intervals.
  struct Certified {
    std::optional<RoundedValue> param, m, v;
    bool by_mpfr = false;  ///< the MPFR intervals decided (the double words did not)
  };
  Certified certify(float p, float m, float v, const double_word::Approx& g) const;
  /// certify()'s two paths alone: the double words (nullopt unless they decide all
  /// three values) and the MPFR intervals.
  std::optional<Certified> certify_double_word(float p, float m, float v,
                                               const double_word::Approx& g) const;
  Certified certify_mpfr(float p, float m, float v, const double_word::Approx& g) const;

 private:
  // exact()'s decimals: the enclosure of p' from the moments' at each precision
  // (m_new(precision), v_new(precision)) until its digits agree.
  template <class M, class V>
  ExactValue decimal(float p, M m_new, V v_new, int digits) const;
  // parameter()'s ladder: p' enclosed from the moments' enclosures at each rung
  // (moments(precision), a pair) until one float32 and one double hold it; tie() after each
  // rung that does not decide may decide an exact tie. Throws naming `what` otherwise.
  template <class Moments, class Tie>
  RoundedValue climb(float p, Moments moments, Tie tie, const char* what) const;
  struct Intervals;
  static constexpr std::array<long, 4> ladder{128, 512, 2048, 8192};
  // Whether b^t is cheap to compute exactly for the tie test.
  // p' in rationals where it is rational (moments in Q(sqrt S)); none where irrational.
  std::optional<Rational> rational_parameter(float p, const Quadratic& m_new,
                                             const Quadratic& v_new) const;
  bool powers_exact() const { return t_ <= exact_power_limit || (o_.b1 == 0.0f && o_.b2 == 0.0f); }
  // Beyond this t the exact powers b^t are too long to compute for a tie test.
  static constexpr std::int64_t exact_power_limit = 4096;
  Optimizer o_;
  bool adagrad_;
  float lr_;
  std::int64_t t_;  // the bias correction's exponent, step + 1 (saturated at int64's end)
  Intervals* bc_;   // per rung reached so far: 1 - b1^t and 1 - b2^t
  // The same as double-word values, from the first rung's enclosures.
  double_word::Approx bc1_, bc2_;
};

}  // namespace sgdc::reference
