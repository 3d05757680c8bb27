#include "sgdc/conformance/regression/fixture.hpp"

#include "sgdc/conformance/regression/fixture_error.hpp"

namespace sgdc::conformance::regression {

namespace {
std::string message(FixtureError::Kind kind, const std::string& file, const std::string& field,
                    const std::string& reason) {
  std::string m = kind == FixtureError::Kind::corrupt ? "corrupt fixture: " : "";
  m += file;
  if (!field.empty()) m += ": " + field;
  return m + ": " + reason;
}
}  // namespace

FixtureError::FixtureError(Kind kind, std::string file, std::string field, std::string reason)
    : std::runtime_error(message(kind, file, field, reason)),
      kind_(kind),
      file_(std::move(file)),
      field_(std::move(field)),
      reason_(std::move(reason)) {}

}  // namespace sgdc::conformance::regression