#pragma once
/// \file
/// The inputs of one SGD step, exactly as `shared/spec/step.md` defines them.

#include <cstdint>
#include <vector>

namespace sgdc {

/// One input of the step. Matrices are row-major float32.
struct Case {
  int n = 0;                  ///< batch rows N
  int d = 0;                  ///< input features D
  int k = 0;                  ///< output features K
  std::vector<float> kernel;  ///< W, [d][k] (Flax convention y = x @ W + b)
  std::vector<float> bias;    ///< b, [k]
  std::vector<float> x;       ///< [n][d]
  std::vector<float> y;       ///< [n][k]
  float lr = 0.0f;            ///< learning rate of plain SGD
  int num_shards = 1;         ///< informational: must not change any result of the baseline
  std::int64_t step = 0;      ///< optimizer step counter before the update

  /// Throws std::invalid_argument naming the offending field when a dimension is not
  /// positive or an array's length disagrees with n, d, k.
  void validate() const;
};

}  // namespace sgdc
