#pragma once
/// \file
/// Text forms of the oracle's exact rationals, as fixtures store them.

#include <string>

#include "sgdc/reference/exact_value.hpp"
#include "sgdc/reference/rounding.hpp"

namespace sgdc::conformance::regression {

/// "p/q" in lowest terms with q > 1, or "p" for an integer.
std::string rational_text(const reference::Rational& q);

/// The value in decimal: every digit when its expansion terminates (the denominator is
/// 2^a 5^b, as for every dyadic value), else rounded to nearest at 40 significant digits.
/// Plain notation ("-0.300000004470348358154296875") when the leading digit's decimal
/// exponent is in -7 .. 20, else scientific ("1.5e-45", "3.4e+38"); no trailing zeros.
std::string decimal_text(const reference::Rational& q);

/// The same for a value that may be irrational: decimal_text of its rational, else its
/// digits as the oracle decided them (40 significant, rounded to nearest), in the same form.
std::string decimal_text(const reference::ExactValue& v);

/// The significant digits the fixtures' decimals carry where a value does not terminate.
inline constexpr int decimal_digits = 40;

/// Whether decimal_text(q) is exact.
bool decimal_terminates(const reference::Rational& q);

}  // namespace sgdc::conformance::regression