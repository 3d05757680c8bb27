#pragma once
// The step in plain float32 or float64 with Eigen, the yardstick the oracle's paths are
// measured against.

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::bench {

using reference::Case;
using reference::StepResult;

/// The step evaluated in `Scalar` (float or double), outputs rounded to float32: plain
/// SGD, heavy-ball momentum (dampening 0, no decay) for a momentum case, or Adam's update
/// elementwise for an Adam case (the float32 step of the same optimizer, the yardstick of
/// the oracle's).
template <class Scalar>
StepResult float_step(const Case& c);

extern template StepResult float_step<float>(const Case&);
extern template StepResult float_step<double>(const Case&);

}  // namespace sgdc::bench
