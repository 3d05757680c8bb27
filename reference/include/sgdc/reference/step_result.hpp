#pragma once
/// \file
/// What an implementation returns for one step.

#include <cstdint>
#include <optional>
#include <vector>

namespace sgdc {

/// The parameter elements one shard stores (protocol v1 `shards`).
struct ShardPart {
  std::int64_t kernel = 0;
  std::int64_t bias = 0;
};

/// The outputs of one step. Optional members are present when the implementation
/// declares the matching capability.
struct StepResult {
  float loss = 0.0f;                              ///< loss before the update
  std::vector<float> kernel;                      ///< W', [d][k]
  std::vector<float> bias;                        ///< b', [k]
  std::optional<std::vector<float>> grad_kernel;  ///< [d][k]
  std::optional<std::vector<float>> grad_bias;    ///< [k]
  std::optional<std::int64_t> step;               ///< counter after the update
  std::optional<std::vector<ShardPart>> shards;   ///< per-shard storage
};

}  // namespace sgdc
