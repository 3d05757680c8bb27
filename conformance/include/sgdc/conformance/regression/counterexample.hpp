#pragma once
/// \file
/// Captured counterexamples: the shrunk failing case of a property, as a fixture ready
/// to commit as a regression test (`run --save-failures DIR`).

#include <cstdint>
#include <filesystem>
#include <string>

#include "sgdc/conformance/regression/fixture.hpp"
#include "sgdc/properties/implementation.hpp"
#include "sgdc/properties/runner.hpp"

namespace sgdc::conformance::regression {

/// The fixture for `cx`, found by `property` against `who` in a run with `seed`; it
/// names the property, so a replay runs that property's check as well.
Fixture counterexample_fixture(const std::string& property, const properties::Counterexample& cx,
                               const properties::Declaration& who, std::uint64_t seed);

/// "builtin-wrong-sign.accuracy.seed-1.case-3": a file stem from the implementation's
/// name (characters other than letters, digits, '.', '_', '-' become '-'), the property,
/// the seed and the case index.
std::string counterexample_name(const std::string& property, const properties::Counterexample& cx,
                                const properties::Declaration& who, std::uint64_t seed);

}  // namespace sgdc::conformance::regression