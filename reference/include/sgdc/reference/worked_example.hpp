#pragma once
/// \file
/// The worked example of `docs/spec/step.md`.

#include "sgdc/reference/case.hpp"

namespace sgdc::reference {

/// D = K = 1, W = [[1]], b = [0], x = [[1], [2]], y = [[0], [0]], lr = float32(0.1),
/// one shard, step 0: loss 2.5, gradients 5 and 3, W' = 0.5, b' = float32(-0.3).
Case worked_example();

}  // namespace sgdc::reference