#pragma once
// The built-ins' global-norm gradient clipping (docs/spec/step.md, "Gradient clipping"),
// in float32 as the libraries compute it, and its bugs. Internal to
// sgdc::conformance::builtin.

#include <vector>

#include "sgdc/conformance/builtin/recipe.hpp"
#include "sgdc/reference/case.hpp"

namespace sgdc::conformance::builtin {

/// Whether `bug` is one of clipping's (the step around it is then computed correctly).
bool clipping_bug(Bug bug);

/// Scales the gradients as the case's clipping does, in float32: with eps > 0 as torch's
/// `clip_grad_norm_` (a norm per tensor, the norm of those norms, max_norm / (norm + eps)
/// clamped to 1, one product); with eps = 0 as `optax.clip_by_global_norm` (the norm of
/// every element; the gradients unchanged below max_norm, else (g / norm) * max_norm).
/// A clipping bug as `bug` says. `c` must have `c.clip`.
void clip_gradients(const reference::Case& c, Bug bug, std::vector<float>& grad_kernel,
                    std::vector<float>& grad_bias);

}  // namespace sgdc::conformance::builtin
