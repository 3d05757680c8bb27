#pragma once
/// \file
/// A regression fixture: one case of the step with its expected outputs, as stored in
/// one JSON file (format `sgd-conformance-fixture`, version 1; `fixtures/README.md`,
/// `fixtures/schema/fixture-v1.schema.json`).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::conformance::regression {

/// The `format` field of every fixture file.
inline constexpr const char* format_name = "sgd-conformance-fixture";
/// The `version` field of a fixture that version 1 holds, which this code writes for
/// every such fixture so that their files stay as they were.
inline constexpr int format_version = 1;
/// The latest version this code reads and writes: version 1 and `inputs.bias_group`
/// (fixtures/README.md), written only for a fixture that has one.
inline constexpr int format_version_latest = 2;
/// The largest counter a fixture holds, after the update (JavaScript's largest exact
/// integer, so that a reader in any language holds it); `inputs.step` is below it.
inline constexpr std::int64_t max_fixture_step = 9007199254740991;
/// What computed the expectations (the `provenance.oracle` field).
inline constexpr const char* oracle_description =
    "exact rational (GMP mpq), MPFR correct rounding to float32 (ties to even)";

/// Expected values of one output (loss, kernel, bias, grad_kernel or grad_bias).
struct ExpectedOutput {
  std::vector<float> expected;                 ///< the exact value correctly rounded to float32
  std::vector<std::string> exact;              ///< the exact value in decimal (see exact_value.hpp)
  std::vector<std::string> exact_rational;     ///< the exact value as "p/q" in lowest terms
  std::vector<double> bound;                   ///< largest |computed - exact| allowed
  std::vector<std::size_t> may_overflow;       ///< indices where +-inf or NaN is acceptable too
  std::vector<std::size_t> must_be_nonfinite;  ///< indices that depend on a NaN or inf input
};

/// Where a fixture came from.
struct Provenance {
  std::string generator = "sgd-conformance";
  std::string generator_version;
  std::string mode;  ///< "canonical", "generate" or "counterexample"
  std::optional<std::uint64_t> seed;
  /// Generator parameters (a JSON object), written in insertion order.
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
  std::string oracle = oracle_description;
};

/// One fixture.
struct Fixture {
  std::string name;         ///< also the file's stem
  std::string description;  ///< what the case exercises
  reference::Case inputs;
  /// The arithmetic the stored bounds assume (float32, u = 2^-24, gradual underflow).
  reference::ErrorModel arithmetic;
  reference::PerOutput<ExpectedOutput> outputs;  ///< one per output of the table
  std::int64_t step = 0;                         ///< the counter after the update
  /// For a captured counterexample: the property whose check also replays the case.
  std::optional<std::string> property;
  Provenance provenance;
};

}  // namespace sgdc::conformance::regression