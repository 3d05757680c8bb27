#pragma once
// The built-ins' Adagrad update (docs/spec/step.md, "Adagrad"), in the form their recipe
// names. Internal to sgdc::conformance::builtin.

#include "sgdc/conformance/builtin/recipe.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::conformance::builtin {

/// Replaces `out`'s parameters by Adagrad's update from its float32 gradients and fills
/// the sum of squares (as the second moment), as `recipe` computes them (its Adagrad form,
/// a wide state, its bug).
void adagrad_step(const reference::Case& c, const Recipe& recipe, reference::StepResult& out);

}  // namespace sgdc::conformance::builtin
