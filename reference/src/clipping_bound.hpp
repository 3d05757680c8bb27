#pragma once
// The bounds of a clipped step's optimizer outputs (docs/error-model.md, section 17): the
// computed norm, the clip factor from it, the clipped gradients, and through them the
// optimizer's bounds (optimizer_bound.hpp). Internal to sgdc::reference.

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_bound.hpp"
#include "sgdc/reference/error_model.hpp"

namespace sgdc::reference {

/// The clip factor's bounds (section 17, N0-N2 and C): where the exact norm and factor
/// lie, and how far a computed norm and factor may be from them.
struct ClipFactorBound {
  double norm_lo = 0.0, norm_hi = 0.0;  ///< the exact norm N lies in [norm_lo, norm_hi]
  double e_norm = 0.0;             ///< |N^ - N| for the norm computed from the computed gradients
  double c_hi = 0.0;               ///< the exact factor c is at most this
  double e_c = 0.0;                ///< |min(1, M / (N^ + eps)) - c|
  bool norm_may_overflow = false;  ///< the computed squares' sum may pass the largest value
};

/// From the exact gradients' magnitudes and their bounds in `bounds`.
ClipFactorBound clip_factor_bound(const Case& c, const ExactMagnitudes& exact,
                                  const StepBounds& bounds, const OperationModel& op);

/// Replaces the bounds of the parameters and optimizer state in `bounds` (computed as for
/// a step without clipping) by those of case `c`'s clipped step; the gradients' bounds
/// stay (the reported gradients are the loss's). `exact` holds the clipped step's exact
/// magnitudes; `c` must have `c.clip`.
void apply_clipping_bounds(const Case& c, const ExactMagnitudes& exact, const ErrorModel& model,
                           StepBounds& bounds);

}  // namespace sgdc::reference
