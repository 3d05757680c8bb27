#pragma once
/// \file
/// What an implementation returns for one step.

#include <cstdint>
#include <optional>
#include <vector>

#include "sgdc/reference/outputs.hpp"

namespace sgdc::reference {

/// The parameter elements one shard stores (protocol `shards`), and the elements of
/// optimizer state it keeps for them (all its state tensors together), when reported.
struct ShardPart {
  std::int64_t kernel = 0;
  std::int64_t bias = 0;
  std::optional<std::int64_t> state_kernel, state_bias;
};

/// The outputs of one step, one float32 array per output of the table (`loss` holds one
/// value, the loss before the update). The gradients are empty when not reported; the
/// optional members are present when the implementation declares the matching capability.
struct StepResult : PerOutput<std::vector<float>> {
  std::optional<std::int64_t> step;              ///< counter after the update
  std::optional<std::vector<ShardPart>> shards;  ///< per-shard storage
};

}  // namespace sgdc::reference
