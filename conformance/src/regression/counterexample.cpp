#include "sgdc/conformance/regression/counterexample.hpp"

#include <fmt/format.h>

#include "sgdc/conformance/regression/derive.hpp"

namespace sgdc::conformance::regression {

std::string counterexample_name(const std::string& property, const properties::Counterexample& cx,
                                const properties::Declaration& who, std::uint64_t seed) {
  std::string impl = who.name.empty() ? "implementation" : who.name;
  for (char& ch : impl) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!keep) ch = '-';
  }
  return fmt::format("{}.{}.seed-{}.case-{}", impl, property, seed, cx.case_index);
}

Fixture counterexample_fixture(const std::string& property, const properties::Counterexample& cx,
                               const properties::Declaration& who, std::uint64_t seed) {
  Provenance p;
  p.generator_version = SGDC_VERSION;
  p.mode = "counterexample";
  p.seed = seed;
  p.parameters["implementation"] = who.name;
  p.parameters["implementation_version"] = who.version;
  p.parameters["property"] = property;
  p.parameters["case_index"] = cx.case_index;
  p.parameters["shrink_steps"] = cx.shrink_steps;
  const std::string first_line = cx.message.substr(0, cx.message.find('\n'));
  Fixture f = derive_fixture(
      counterexample_name(property, cx, who, seed),
      fmt::format("counterexample of {} found against {}: {}", property, who.name, first_line),
      cx.shrunk, std::move(p));
  f.property = property;
  return f;
}

}  // namespace sgdc::conformance::regression