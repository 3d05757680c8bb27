#include "sgdc/conformance/regression/exact_value.hpp"

#include <boost/multiprecision/gmp.hpp>

namespace sgdc::conformance::regression {

namespace {

using Integer = boost::multiprecision::mpz_int;

constexpr int significant_digits = decimal_digits;

// Exponents of 2 and 5 in q, and what remains.
struct Factored {
  unsigned twos = 0, fives = 0;
  Integer rest;
};

Factored factor(Integer q) {
  Factored f;
  while (q % 2 == 0) q /= 2, ++f.twos;
  while (q % 5 == 0) q /= 5, ++f.fives;
  f.rest = q;
  return f;
}

Integer power_of_ten(unsigned e) {
  Integer p;
  mpz_ui_pow_ui(p.backend().data(), 10, e);
  return p;
}

// value = digits * 10^exponent.
std::string format(const std::string& sign, std::string digits, long exponent) {
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back(), ++exponent;
  if (digits == "0") return "0";
  const long length = static_cast<long>(digits.size());
  const long leading = length - 1 + exponent;  // decimal exponent of the first digit
  if (leading < -7 || leading > 20) {
    std::string s = sign + digits.substr(0, 1);
    if (length > 1) s += "." + digits.substr(1);
    return s + (leading < 0 ? "e-" : "e+") + std::to_string(leading < 0 ? -leading : leading);
  }
  if (exponent >= 0) return sign + digits + std::string(static_cast<std::size_t>(exponent), '0');
  const long point = length + exponent;  // digits before the point
  if (point > 0) return sign + digits.substr(0, point) + "." + digits.substr(point);
  return sign + "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
}

}  // namespace

std::string rational_text(const reference::Rational& q) {
  const Integer num = boost::multiprecision::numerator(q);
  const Integer den = boost::multiprecision::denominator(q);
  return den == 1 ? num.str() : num.str() + "/" + den.str();
}

bool decimal_terminates(const reference::Rational& q) {
  return factor(boost::multiprecision::denominator(q)).rest == 1;
}

std::string decimal_text(const reference::Rational& q) {
  Integer num = boost::multiprecision::numerator(q);
  const Integer den = boost::multiprecision::denominator(q);
  if (num == 0) return "0";
  const std::string sign = num < 0 ? "-" : "";
  if (num < 0) num = -num;
  const Factored f = factor(den);
  if (f.rest == 1) {
    const unsigned places = std::max(f.twos, f.fives);
    const Integer digits = num * power_of_ten(places) / den;  // exact: den divides 10^places
    return format(sign, digits.str(), -static_cast<long>(places));
  }
  // Scale so that the integer part has exactly 40 digits, then round to nearest. A tie
  // would make the value a terminating decimal, so there is none.
  long exponent = static_cast<long>(num.str().size()) - static_cast<long>(den.str().size()) -
                  significant_digits;
  for (;;) {
    Integer scaled_num = num, scaled_den = den;
    if (exponent < 0)
      scaled_num *= power_of_ten(static_cast<unsigned>(-exponent));
    else
      scaled_den *= power_of_ten(static_cast<unsigned>(exponent));
    Integer digits = scaled_num / scaled_den;
    const std::size_t length = digits.str().size();
    if (length < significant_digits) {
      --exponent;
      continue;
    }
    if (length > significant_digits) {
      ++exponent;
      continue;
    }
    const Integer remainder = scaled_num - digits * scaled_den;
    if (2 * remainder > scaled_den) ++digits;
    if (digits.str().size() > significant_digits) digits /= 10, ++exponent;
    return format(sign, digits.str(), exponent);
  }
}

std::string decimal_text(const reference::ExactValue& v) {
  if (v.rational) return decimal_text(*v.rational);
  return format(v.negative ? "-" : "", v.digits, v.exponent);
}

}  // namespace sgdc::conformance::regression