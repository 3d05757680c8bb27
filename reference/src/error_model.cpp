#include "sgdc/reference/error_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

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

double Format::max_finite() const {
  return (2.0 - std::ldexp(1.0, -fraction_bits)) * std::ldexp(1.0, max_exponent);
}

double Format::min_subnormal() const { return std::ldexp(1.0, min_exponent - fraction_bits); }

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

Subnormals parse_subnormals(const char* text) {
  const std::string_view t(text);
  if (t == "ieee") return Subnormals::ieee;
  if (t == "ftz") return Subnormals::flush_to_zero;
  throw std::invalid_argument("subnormals: expected \"ieee\" or \"ftz\", got \"" + std::string(t) +
                              "\"");
}

const char* to_string(Subnormals s) { return s == Subnormals::ieee ? "ieee" : "ftz"; }

}  // namespace sgdc::reference
