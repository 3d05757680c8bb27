#pragma once
// The built-ins' Adam update (docs/spec/step.md, "Adam"), in the form their recipe names.
// Internal to sgdc::conformance::builtin.

#include "sgdc/conformance/builtin/recipe.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::conformance::builtin {

/// Replaces `out`'s parameters by Adam's update from its float32 gradients and fills both
/// moments, as `recipe` computes them (its Adam form, a wide state, its bug).
void adam_step(const reference::Case& c, const Recipe& recipe, reference::StepResult& out);

}  // namespace sgdc::conformance::builtin
