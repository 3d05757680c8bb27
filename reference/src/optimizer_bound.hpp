#pragma once
// The bounds of the optimizer's outputs (docs/error-model.md, section 12): the updated
// parameters and the momentum buffer of a step whose optimizer is not plain SGD. Internal
// to sgdc::reference.

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_bound.hpp"
#include "sgdc/reference/error_model.hpp"

namespace sgdc::reference {

/// Replaces `bounds`' kernel and bias bounds (and their U2 slack) by those of the case's
/// optimizer and fills the momentum buffer's, from the gradient bounds already in
/// `bounds` and the exact magnitudes. Does nothing for plain SGD.
void apply_optimizer_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model,
                            StepBounds& bounds);

/// The bounds of the optimizer's outputs for a gradient the implementation stores before
/// its optimizer reads it (mixed precision by stage, docs/error-model.md section 18):
/// `apply_optimizer_bounds`, and for plain SGD the update of that gradient (O1, O4),
/// where (U) lets lr fold into the gradient's scale. Sizes the parameters' bounds.
void apply_stored_gradient_bounds(const Case& c, const ExactMagnitudes& exact,
                                  const ErrorModel& model, StepBounds& bounds);

}  // namespace sgdc::reference
