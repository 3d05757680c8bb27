#pragma once
// A float32's bit pattern, for the protocol tests' exact comparisons (they tell -0 from
// 0 and one NaN from another, where == does not).

#include <bit>
#include <cstdint>

namespace sgdc::conformance::protocol::testing {

inline std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

}  // namespace sgdc::conformance::protocol::testing
