#pragma once
/// \file
/// Correct rounding (to nearest, ties to even) of exact values to float32 and double.

#include <boost/multiprecision/gmp.hpp>

namespace sgdc::reference {

/// Exact rational scalar of the oracle.
using Rational = boost::multiprecision::mpq_rational;

/// The float32 nearest to q, ties to even, with gradual underflow and overflow to
/// +-infinity exactly as IEEE 754 binary32 rounding specifies. Goes through MPFR at
/// 24 bits with float32's exponent range; never through double (which rounds twice).
float round_to_float32(const Rational& q);

/// The double nearest to q (ties to even); used for reports, never for verdicts on bits.
double round_to_double(const Rational& q);

}  // namespace sgdc::reference