#pragma once
/// \file
/// The curated fixtures committed in `fixtures/canonical/`: the seed's worked example and
/// the cases random generation rarely hits. `fixtures generate --canonical` writes them.

#include <vector>

#include "sgdc/conformance/regression/fixture.hpp"

namespace sgdc::conformance::regression {

/// Every canonical fixture, worked example first.
std::vector<Fixture> canonical_fixtures();

}  // namespace sgdc::conformance::regression