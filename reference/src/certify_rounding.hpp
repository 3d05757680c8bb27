#pragma once
// Certifying a correct rounding from an enclosure: when every real the enclosure allows
// rounds to the same float32 (or double), that is the correct rounding of the exact
// value, whatever it is. Internal to sgdc::reference.

#include <optional>

#include "double_word.hpp"
#include "sgdc/reference/rounded_step.hpp"

namespace sgdc::reference {

/// The float32 nearest (ties to even) to every real in [a.hi + a.lo - a.err,
/// a.hi + a.lo + a.err], gradual underflow and overflow to +-inf included; nullopt when
/// the enclosure meets a rounding boundary (or zero, whose sign would be unknown).
std::optional<float> certified_float32(const double_word::Approx& a);

/// The double nearest (ties to even) to every real of the same enclosure: a.hi when
/// certified, nullopt when the enclosure meets a rounding boundary. An exact zero is +0.
std::optional<double> certified_double(const double_word::Approx& a);

/// Both roundings (float32 and double) of every real of the enclosure, when it certifies
/// both; nullopt otherwise.
std::optional<RoundedValue> certified_roundings(const double_word::Approx& a);

}  // namespace sgdc::reference