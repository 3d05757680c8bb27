#include "sgdc/conformance/exit_status.hpp"

#include <algorithm>

namespace sgdc::conformance {

int exit_status(SuiteVerdict verdict, ExpectedVerdict expected, bool faulted) {
  if (verdict == SuiteVerdict::could_not_test) return could_not_test_status;
  if (expected == ExpectedVerdict::not_conformant)
    return verdict == SuiteVerdict::not_conformant && !faulted ? 0 : 1;
  return verdict == SuiteVerdict::conformant ? 0 : 1;
}

int exit_status(const SuiteReport& report, ExpectedVerdict expected) {
  const bool faulted =
      std::any_of(report.properties.begin(), report.properties.end(),
                  [](const PropertyOutcome& o) { return o.report.fault.has_value(); });
  return exit_status(report.verdict, expected, faulted);
}

}  // namespace sgdc::conformance
