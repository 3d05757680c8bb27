#pragma once
/// \file
/// The built-in implementations' step, computed as a Recipe says.

#include "sgdc/conformance/builtin/recipe.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::builtin {

/// Runs one step as `recipe` says; reports grads and the step counter.
StepResult float32_step(const Case& c, const Recipe& recipe);

}  // namespace sgdc::builtin
