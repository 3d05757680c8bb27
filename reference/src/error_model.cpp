#include "sgdc/reference/error_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "format_rounding.hpp"
#include "sgdc/reference/float32.hpp"

namespace sgdc::reference {

namespace {
struct NamedFormat {
  const char* name;
  Format format;
};
constexpr NamedFormat named_formats[] = {{"float32", formats::float32},
                                         {"tf32", formats::tf32},
                                         {"bfloat16", formats::bfloat16},
                                         {"float16", formats::float16}};
}  // namespace

double Format::unit_roundoff() const { return std::ldexp(1.0, -(fraction_bits + 1)); }

double Format::max_finite() const { return detail::largest_finite(*this); }

double Format::min_subnormal() const { return std::ldexp(1.0, min_exponent - fraction_bits); }

double round_to_format(double v, const Format& f) { return detail::rounded_to_format(v, f); }

bool Format::narrower_than_float32() const { return !(*this == formats::float32); }

std::optional<Format> parse_format(std::string_view name) {
  for (const NamedFormat& f : named_formats) {
    if (name == f.name) return f.format;
  }
  return std::nullopt;
}

std::string to_string(const Format& f) {
  for (const NamedFormat& n : named_formats) {
    if (f == n.format) return n.name;
  }
  return "{fraction_bits " + std::to_string(f.fraction_bits) + ", exponents " +
         std::to_string(f.min_exponent) + ".." + std::to_string(f.max_exponent) + "}";
}

std::string format_problem(const Format& f) {
  if (f.fraction_bits < 1 || f.fraction_bits > 23)
    return "fraction_bits is " + std::to_string(f.fraction_bits) +
           ", expected 1 to 23 (float32's at most)";
  if (f.min_exponent < -126 || f.max_exponent > 127 || f.min_exponent >= f.max_exponent)
    return "exponents " + std::to_string(f.min_exponent) + ".." + std::to_string(f.max_exponent) +
           ": expected -126 <= min_exponent < max_exponent <= 127 (float32's range at most)";
  return {};
}

OperationModel operation_model(const ErrorModel& model) {
  const Format& f = model.format;
  const bool ieee = model.subnormals == Subnormals::ieee;
  const double smallest_normal = std::ldexp(1.0, f.min_exponent);
  // One operation's own underflow: half the smallest subnormal (gradual underflow), or
  // anything below the smallest normal (flushed).
  const double eta_f = ieee ? f.min_subnormal() / 2.0 : smallest_normal;
  if (!f.narrower_than_float32())
    return {model.u, eta_f, ieee ? 0.0 : smallest_normal, float32_max};
  // Section 13: each operation may convert both operands to the format and round its
  // result: three roundings, gamma_3; each converted operand or result may underflow.
  // The format's own unit roundoff is the least a declaration can mean.
  const double unit = std::max(model.u, f.unit_roundoff());
  const double u = 3.0 * unit < 1.0 ? 3.0 * unit / (1.0 - 3.0 * unit) : 1.0;
  return {u, 2.0 * eta_f * (1.0 + u), ieee ? eta_f : smallest_normal,
          std::min(float32_max, f.max_finite())};
}

std::optional<Format> parse_stage_format(std::string_view name) {
  const std::optional<Format> f = parse_format(name);
  if (f && *f == formats::tf32) return std::nullopt;
  return f;
}

bool Stages::declared() const {
  return param.narrower_than_float32() || reduce.narrower_than_float32() ||
         master.narrower_than_float32();
}

std::string stages_problem(const Stages& s) {
  if (!s.declared()) return {};
  for (const StageField& field : stage_fields) {
    if (const std::string problem = format_problem(s.*field.format); !problem.empty())
      return std::string(field.name) + ": " + problem;
  }
  // Section 18: the per-rank roundings are decided only where the compute copy is
  // narrower than the float32 accumulation; a float32 compute copy with a narrower
  // reduction would need each rank's float32 gradient, which no ordering fixes.
  if (!s.param.narrower_than_float32())
    return "param_dtype float32 with reduce_dtype " + to_string(s.reduce) + " or master_dtype " +
           to_string(s.master) +
           ": a narrower stage after a float32 compute copy is not modelled (declare "
           "param_dtype too, or compute_format)";
  if (s.master.narrower_than_float32() && !(s.master == s.param))
    return "master_dtype " + to_string(s.master) + " with param_dtype " + to_string(s.param) +
           ": the compute copy must be the master weights' format or narrower than float32 "
           "master weights";
  if (s.reduce.narrower_than_float32() && !(s.reduce == s.param))
    return "reduce_dtype " + to_string(s.reduce) + " with param_dtype " + to_string(s.param) +
           ": a reduction narrower than float32 must be in the compute copy's format";
  return {};
}

Subnormals parse_subnormals(const char* text) {
  const std::string_view t(text);
  if (t == "ieee") return Subnormals::ieee;
  if (t == "ftz") return Subnormals::flush_to_zero;
  throw std::invalid_argument("subnormals: expected \"ieee\" or \"ftz\", got \"" + std::string(t) +
                              "\"");
}

const char* to_string(Subnormals s) { return s == Subnormals::ieee ? "ieee" : "ftz"; }

}  // namespace sgdc::reference
