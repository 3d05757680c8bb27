#pragma once
/// \file
/// What an implementation declares about its arithmetic; the error bound depends on it.

#include <optional>
#include <string>
#include <string_view>

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

/// A binary floating-point format rounding to nearest: `fraction_bits + 1` significant
/// bits, normal numbers from 2^min_exponent to below 2^(max_exponent + 1), subnormals
/// below (as the declared subnormal policy says).
struct Format {
  int fraction_bits = 23;
  int min_exponent = -126;
  int max_exponent = 127;
  friend bool operator==(const Format&, const Format&) = default;

  /// 2^-(fraction_bits + 1).
  double unit_roundoff() const;
  /// The largest finite value: (2 - 2^-fraction_bits) 2^max_exponent.
  double max_finite() const;
  /// The smallest positive subnormal: 2^(min_exponent - fraction_bits).
  double min_subnormal() const;
  /// True for a format with less precision or range than float32: operands are converted.
  bool narrower_than_float32() const;
};

/// The named formats, in the words of the protocol and the CLI.
namespace formats {
inline constexpr Format float32{23, -126, 127};
inline constexpr Format tf32{10, -126, 127};  ///< tensor cores' TensorFloat-32
inline constexpr Format bfloat16{7, -126, 127};
inline constexpr Format float16{10, -14, 15};
}  // namespace formats

/// `v` rounded to nearest (ties to even) in `f`, with gradual underflow below its smallest
/// normal and +-inf past its largest finite value; NaN, +-inf and zeros unchanged.
double round_to_format(double v, const Format& f);

/// The format named "float32", "tf32", "bfloat16" or "float16", if any.
std::optional<Format> parse_format(std::string_view name);
/// Its name when it is a named format, else "{fraction_bits 10, exponents -126..127}".
std::string to_string(const Format& f);
/// Empty when `f` is a format the bounds cover (within float32: 1 <= fraction_bits <= 23,
/// -126 <= min_exponent < max_exponent <= 127), else what is wrong with it.
std::string format_problem(const Format& f);

/// Mixed precision by stage, as FSDP2's `MixedPrecisionPolicy` and JAX's dtype policies
/// define it (docs/spec/step.md, "Mixed precision by stage"; docs/error-model.md,
/// section 18). All float32: none declared, the whole step in `ErrorModel::format`.
struct Stages {
  /// The compute copy: x, W and b are cast to it; the layer's output and each rank's
  /// gradients are accumulated in float32 and rounded to it once.
  Format param = formats::float32;
  /// The format the ranks' gradients are summed in.
  Format reduce = formats::float32;
  /// The stored parameters and optimizer state, which the optimizer updates.
  Format master = formats::float32;
  friend bool operator==(const Stages&, const Stages&) = default;

  /// Some stage narrower than float32.
  bool declared() const;
};

/// The stages by the names a declaration gives them (protocol, fixtures, reports), in
/// order: the one list every codec and report reads.
struct StageField {
  const char* name;
  Format Stages::*format;
};
inline constexpr StageField stage_fields[] = {{"param_dtype", &Stages::param},
                                              {"reduce_dtype", &Stages::reduce},
                                              {"master_dtype", &Stages::master}};

/// The format a stage is declared in by name: "float32", "bfloat16" or "float16" (the
/// named formats but TF32, which no dtype stores); none otherwise.
std::optional<Format> parse_stage_format(std::string_view name);

/// Empty when the stages are a combination the bounds model (docs/error-model.md,
/// section 18), else what is wrong with it, naming the stage.
std::string stages_problem(const Stages& s);

/// The arithmetic an implementation declares. Every rounding it performs, in any
/// intermediate, must have relative error at most `u`; operations run in `format` (its
/// operands converted to it where it is narrower than float32); outputs are float32.
struct ErrorModel {
  double u = unit_roundoff::float32;
  Subnormals subnormals = Subnormals::ieee;
  Format format = formats::float32;
  Stages stages{};  ///< declared mixed precision by stage; then `format` is float32
  friend bool operator==(const ErrorModel&, const ErrorModel&) = default;
};

/// What one operation may do, as the bounds use it (docs/error-model.md, sections 1 and 13).
struct OperationModel {
  double u;      ///< relative error of one operation, its operands' conversions included
  double eta;    ///< absolute error of one operation whose result underflows
  double tau;    ///< perturbation of an input as it is read
  double omega;  ///< intermediates at or beyond this magnitude may overflow
};
OperationModel operation_model(const ErrorModel& model);

/// Parses "ieee" / "ftz"; throws std::invalid_argument otherwise.
Subnormals parse_subnormals(const char* text);
const char* to_string(Subnormals s);

}  // namespace sgdc::reference
