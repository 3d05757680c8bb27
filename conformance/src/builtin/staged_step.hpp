#pragma once
// The built-ins' step under mixed precision by stage (docs/spec/step.md, "Mixed precision
// by stage"), as FSDP2 with a MixedPrecisionPolicy computes it. Internal to
// sgdc::conformance::builtin.

#include "sgdc/conformance/builtin/recipe.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::conformance::builtin {

/// One step in the stages of `recipe.stages`: x, W and b cast to the compute copy; the
/// layer's output accumulated in float32 and rounded to it; r = out - y and the output's
/// gradient 2 r / (N K) in float32, rounded to it; each of num_shards ranks' gradients
/// over its rows (torch.tensor_split's) accumulated in float32 and rounded to it; the
/// ranks' gradients summed in the reduction's format; clipping (torch's or optax's) and
/// the optimizer in float32 on the parameters and state as the master weights' format
/// stores them, the results stored in it.
reference::StepResult staged_step(const reference::Case& c, const Recipe& recipe);

/// The optimizer's outputs from the gradients in `out` (float32_step.cpp), as `recipe`
/// computes them.
void optimize(const reference::Case& c, const Recipe& recipe, reference::StepResult& out);

/// `v` rounded to nearest (ties to even) in `f` (float32_step.cpp).
float round_to(float v, const reference::Format& f);

}  // namespace sgdc::conformance::builtin
