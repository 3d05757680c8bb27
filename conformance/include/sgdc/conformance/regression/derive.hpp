#pragma once
/// \file
/// Fixtures from the oracle: the expected outputs of a case, and the check that a stored
/// fixture still says what the oracle says.

#include <string>

#include "sgdc/conformance/regression/fixture.hpp"

namespace sgdc::conformance::regression {

/// A fixture for `inputs` whose expectations the oracle derives under `arithmetic`.
/// Throws std::invalid_argument when a bound is not finite (JSON cannot hold it).
Fixture derive_fixture(std::string name, std::string description, const reference::Case& inputs,
                       Provenance provenance, const reference::ErrorModel& arithmetic = {});

/// Re-derives `f`'s expectations and compares them with the stored ones; throws
/// FixtureError (corrupt) naming `file` and the first field that differs. Bounds agree
/// when within a relative 2^-20 (their last bits may depend on the machine). Inputs the
/// oracle refuses throw FixtureError (malformed) naming `file`, field `inputs`.
void verify_against_oracle(const Fixture& f, const std::string& file);

}  // namespace sgdc::conformance::regression