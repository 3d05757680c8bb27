#pragma once
// A float's bit pattern, for the tests' exact comparisons (they tell -0 from 0 and one
// NaN from another, where == does not).

#include <bit>
#include <cstdint>

namespace sgdc::test_support {

inline std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }
inline std::uint64_t double_bits(double d) { return std::bit_cast<std::uint64_t>(d); }

}  // namespace sgdc::test_support
