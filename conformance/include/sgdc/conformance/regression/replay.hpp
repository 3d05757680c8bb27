#pragma once
/// \file
/// Replaying a fixture against an implementation.

#include <string>
#include <vector>

#include "sgdc/conformance/regression/fixture.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance::regression {

/// The verdict on one fixture.
struct ReplayOutcome {
  bool passed = true;
  std::vector<std::string> failures;  ///< one line per failing element or check
};

/// Judges `outcome`, the answer of an implementation declaring `d` to the fixture's
/// inputs: every output it reports within the stored bound of the stored exact value when
/// it declares the fixture's arithmetic, else within the bound the oracle derives for the
/// declared one, and the step counter when it declares one. A rejected case passes only
/// when an input is NaN or infinite (rejecting those is a valid policy). The fixture must
/// have passed verify_against_oracle.
ReplayOutcome judge_replay(const Fixture& f, const properties::StepOutcome& outcome,
                           const properties::Declaration& d);

/// For a captured counterexample whose property needs more than one step of its inputs
/// (several shard counts, two runs, lr forced to 0): that property evaluated on `impl`,
/// added to `out`. Nothing for other fixtures. Throws ImplementationFault.
void replay_property(const Fixture& f, properties::Implementation& impl, ReplayOutcome& out);

/// Steps the fixture's inputs, judges the outcome and replays its property.
ReplayOutcome replay(const Fixture& f, properties::Implementation& impl);

}  // namespace sgdc::conformance::regression