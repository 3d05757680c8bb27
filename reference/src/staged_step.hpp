#pragma once
// The loss and the gradients of a step under declared mixed precision by stage
// (docs/spec/step.md, "Mixed precision by stage"; docs/error-model.md, section 18): the
// compute copy's roundings simulated on intervals, each rank's gradients rounded to it,
// then reduced. Internal to sgdc::reference.

#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"

namespace sgdc::reference {

/// Where every correct implementation's value of one output lies: within `radius` of
/// `center`, or anywhere (+-inf and NaN included) when `may_overflow`.
struct StagedValue {
  double center = 0.0;
  double radius = 0.0;
  bool may_overflow = false;
};

/// The staged step's loss and reduced gradients ([d][k] and [k]).
struct StagedGradients {
  StagedValue loss;
  std::vector<StagedValue> grad_kernel, grad_bias;
};

/// For a finite case `c` under `model`, whose stages are declared and valid
/// (stages_problem empty) with gradual underflow. The ranks are `c.num_shards`, each
/// holding its rows as torch.tensor_split (numpy.array_split) gives them.
StagedGradients staged_gradients(const Case& c, const ErrorModel& model);

}  // namespace sgdc::reference
