#pragma once
/// \file
/// What an implementation declares about its arithmetic; the error bound depends on it.

namespace sgdc::reference {

/// How the implementation treats subnormal numbers.
enum class Subnormals {
  ieee,           ///< gradual underflow, as IEEE 754 specifies
  flush_to_zero,  ///< subnormal results flushed to zero and subnormal inputs read as zero (FTZ+DAZ)
};

/// Unit roundoffs of common compute precisions (round to nearest).
namespace unit_roundoff {
inline constexpr double float32 = 0x1p-24;
inline constexpr double tf32 = 0x1p-11;
inline constexpr double float16 = 0x1p-11;
inline constexpr double bfloat16 = 0x1p-8;
}  // namespace unit_roundoff

/// The arithmetic an implementation declares. Every rounding it performs, in any
/// intermediate, must have relative error at most `u`; outputs are float32.
struct ErrorModel {
  double u = unit_roundoff::float32;
  Subnormals subnormals = Subnormals::ieee;
};

/// Parses "ieee" / "ftz"; throws std::invalid_argument otherwise.
Subnormals parse_subnormals(const char* text);
const char* to_string(Subnormals s);

}  // namespace sgdc::reference