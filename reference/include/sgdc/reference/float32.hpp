#pragma once
/// \file
/// Bit-level facts about float32 values: ULP distance and exact text forms.

#include <cstdint>
#include <limits>
#include <string>

namespace sgdc::reference {

/// The largest finite float32, as a double.
inline constexpr double float32_max = 0x1.fffffep127;

/// Number of float32 values strictly between a and b, plus one (0 when equal; -0 == +0).
/// Infinite (UINT64_MAX) when exactly one is NaN; 0 when both are NaN.
std::uint64_t ulp_distance(float a, float b);

/// Value written so it reads back bit for bit: 9 significant digits and the hexfloat,
/// e.g. "0.100000001 (0x1.99999ap-4)"; "NaN (bits 0x7fc00000)", "+infinity", "-infinity".
std::string describe(float v);

/// True for the same bits, treating every NaN as equal to every NaN.
bool same_bits(float a, float b);

}  // namespace sgdc::reference