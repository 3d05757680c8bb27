#include "sgdc/reference/check.hpp"

#include <cmath>
#include <limits>

#include "sgdc/reference/float32.hpp"

namespace sgdc::reference {

ElementCheck check_element(float actual, const Expected& e) {
  ElementCheck out;
  const bool finite = std::isfinite(actual);
  if (finite && std::isfinite(e.value) && std::abs(e.value) > e.bound)
    out.ulps = ulp_distance(actual, e.rounded);
  const float magnitude = std::abs(e.rounded);
  const double ulp =
      static_cast<double>(std::nextafter(magnitude, INFINITY)) - static_cast<double>(magnitude);
  out.bound_ulps = std::isfinite(ulp) && ulp > 0.0 && magnitude > 0.0 ? e.bound / ulp : INFINITY;
  if (e.must_be_nonfinite) {
    out.ok = !finite;
    if (!out.ok) out.why = "a non-finite input reaches this output, so NaN or +-inf is due";
    return out;
  }
  if (!finite) {
    out.ok = e.may_overflow || (!std::isnan(actual) && actual == e.rounded);
    out.error = std::numeric_limits<double>::infinity();
    out.ratio = out.ok ? 0.0 : out.error;
    if (out.ok) {
      out.error = 0.0;
    } else {
      out.why = std::isnan(actual) ? "NaN from finite inputs that cannot overflow"
                                   : "infinity from finite inputs that cannot overflow";
    }
    return out;
  }
  // Both operands are doubles; the subtraction's own rounding (<= 2^-53 of the result)
  // and value's rounding to double (<= 2^-53 |value|) are covered by the second term.
  out.error = std::abs(static_cast<double>(actual) - e.value);
  const double tolerance = e.bound + 0x1p-52 * std::abs(e.value);
  out.ratio = e.bound > 0.0 ? out.error / e.bound : (out.error > 0.0 ? INFINITY : 0.0);
  out.ok = out.error <= tolerance;
  if (!out.ok) out.why = "error exceeds the bound";
  return out;
}

bool refusal_allowed(const Case& c, const Expectation& e) {
  if (has_nonfinite_input(c)) return true;
  for (Output o : all_outputs)
    for (const Expected& x : e[o])
      if (x.may_overflow) return true;
  return false;
}

}  // namespace sgdc::reference
