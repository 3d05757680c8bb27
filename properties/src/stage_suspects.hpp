#pragma once
// Which precision stage a failing result ran in, where the implementation declares
// stages (docs/spec/step.md, "Mixed precision by stage"). Internal to sgdc::properties.

#include <string>
#include <vector>

#include "sgdc/properties/implementation.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::properties {

/// For each stage next to the declared ones (the reduction or the master weights in the
/// compute copy's format, or every stage in float32) that the whole result `r` of case
/// `c` fits within the bounds of where the declared stages' does not: a sentence naming
/// that stage. Empty without declared stages.
std::vector<std::string> suspected_stages(const reference::Case& c, const reference::StepResult& r,
                                          const Declaration& d);

}  // namespace sgdc::properties
