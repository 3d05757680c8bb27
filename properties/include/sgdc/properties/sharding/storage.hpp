#pragma once
/// \file
/// Per-shard storage of a fully sharded (FSDP / ZeRO-3) step of the Linear layer:
/// parameters, gradients and optimizer state, each split by the placement remainder
/// rule (`sgdc/properties/placement.hpp`). Storage only: peak memory is larger, since a
/// step also holds gathered parameter copies, activations and communication buffers.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "sgdc/properties/sharding/placement.hpp"

namespace sgdc::properties::sharding {

/// The optimizer, which decides how many parameter-sized state tensors there are.
enum class Optimizer {
  sgd,       ///< plain SGD: no state beyond the step counter
  momentum,  ///< SGD with momentum: one accumulator
  adam,      ///< Adam: first and second moments
};

/// "sgd", "momentum" or "adam" to an Optimizer; throws std::invalid_argument otherwise.
Optimizer parse_optimizer(std::string_view name);

/// Parameter-sized state tensors `o` keeps: 0, 1 or 2.
int state_tensors(Optimizer o);

/// Bytes per value of a dtype name (float32, float64, bfloat16, float16, float8_e4m3fn,
/// float8_e5m2); throws std::invalid_argument naming the known ones otherwise.
int bytes_per_value(std::string_view dtype);

/// Bytes of the step counter every shard keeps (an int32, as optax and NNX count).
inline constexpr std::int64_t step_counter_bytes = 4;

/// What one shard stores.
struct ShardStorage {
  std::int64_t kernel = 0;  ///< kernel elements
  std::int64_t bias = 0;    ///< bias elements
  std::int64_t parameter_bytes = 0;
  std::int64_t gradient_bytes = 0;  ///< the shard's slice of the reduced gradient
  std::int64_t state_bytes = 0;     ///< optimizer state, in the parameter dtype
  std::int64_t counter_bytes = step_counter_bytes;
  std::int64_t total() const {
    return parameter_bytes + gradient_bytes + state_bytes + counter_bytes;
  }
};

/// Storage of every shard for a D x K Linear layer.
struct StoragePlan {
  int d = 0, k = 0, shards = 0;
  std::string dtype;
  int bytes = 0;  ///< per value
  Optimizer optimizer = Optimizer::sgd;
  PlacementRule placement = PlacementRule::flat;
  std::vector<ShardStorage> per_shard;
};

/// The plan for these sizes, the parameters split by `placement`; throws
/// std::invalid_argument for non-positive sizes or an unknown dtype.
StoragePlan plan_storage(int d, int k, int shards, std::string_view dtype, Optimizer optimizer,
                         PlacementRule placement = PlacementRule::flat);

/// The plan as a table, labelled as storage, with the caveat about peak memory.
void write_storage_report(std::ostream& os, const StoragePlan& plan);

}  // namespace sgdc::properties::sharding