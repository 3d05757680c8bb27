#pragma once
/// \file
/// Why a fixture file cannot be used: malformed (it breaks the schema) or corrupt (its
/// expected values disagree with the oracle).

#include <stdexcept>
#include <string>

namespace sgdc::conformance::regression {

/// A fixture that cannot be used. `what()` is "FILE: FIELD: REASON" for a malformed
/// one and "corrupt fixture: FILE: FIELD: REASON" for a corrupt one; FIELD is the JSON
/// path of the offending field, e.g. `outputs.kernel.expected`.
class FixtureError : public std::runtime_error {
 public:
  enum class Kind {
    malformed,  ///< not valid JSON, or violates fixture-v1.schema.json
    corrupt,    ///< well formed, but the stored expectation is not the oracle's
  };

  FixtureError(Kind kind, std::string file, std::string field, std::string reason);

  Kind kind() const { return kind_; }
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  Kind kind_;
  std::string file_, field_, reason_;
};

}  // namespace sgdc::conformance::regression