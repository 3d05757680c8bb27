#pragma once
/// \file
/// Per-shard storage of a fully sharded (FSDP / ZeRO-3) step of the Linear layer:
/// parameters, gradients and optimizer state, each split by the placement remainder
/// rule (`sgdc/properties/sharding/placement.hpp`). Storage only: peak memory is larger, since a
/// step also holds gathered parameter copies, activations and communication buffers.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "sgdc/properties/sharding/placement.hpp"

namespace sgdc::properties::sharding {

/// The optimizer, which decides how many parameter-sized state tensors there are.
enum class OptimizerState {
  sgd,       ///< plain SGD: no state beyond the step counter
  momentum,  ///< SGD with momentum: one accumulator
  adam,      ///< Adam: first and second moments
  adagrad,   ///< Adagrad: one sum of squares
};

/// "sgd", "momentum", "adam", "adamw" (Adam with decoupled decay: the same two moments) or
/// "adagrad"
/// to an OptimizerState; throws std::invalid_argument naming the known ones otherwise.
OptimizerState parse_optimizer(std::string_view name);

/// Where a framework keeps the optimizer's step counter, and its bytes.
enum class CounterLayout {
  one_per_shard,  ///< one 4-byte counter per shard, whatever the optimizer
  /// torch.optim: a float32 `step` tensor per parameter (weight and bias), kept only by
  /// optimizers that count steps (Adam, AdamW); SGD, with momentum or not, keeps none.
  torch,
  /// optax: an int32 `count` in the state of Adam's transformation; sgd keeps none.
  optax,
  /// Flax NNX: the nnx.Optimizer's own uint32 `step`, on top of optax's count.
  nnx,
};

/// "shard", "torch", "optax" or "nnx"; throws std::invalid_argument naming them otherwise.
CounterLayout parse_counter_layout(std::string_view name);

/// Bytes of step counter one shard keeps for a Linear layer (two parameters).
std::int64_t counter_bytes(CounterLayout layout, OptimizerState o);

/// What is stored and in which dtype, as FSDP2's MixedPrecisionPolicy separates them:
/// sharded parameters, their gradients and the optimizer state stay in `dtype` (float32
/// master weights); the gathered compute copy is in `param_dtype` and the gradient is
/// reduced in `reduce_dtype`, both transient and counted apart.
struct StorageOptions {
  std::string dtype = "float32";
  std::string param_dtype;             ///< empty: `dtype`
  std::string reduce_dtype;            ///< empty: `param_dtype`
  std::string optimizer_name = "sgd";  ///< as given: parse_optimizer's names
  PlacementRule rule = PlacementRule::flat;
  CounterLayout counter = CounterLayout::one_per_shard;
};

/// Parameter-sized state tensors `o` keeps: 0, 1 or 2.
int state_tensors(OptimizerState o);

/// Bytes per value of a dtype name (float32, float64, bfloat16, float16, float8_e4m3fn,
/// float8_e5m2); throws std::invalid_argument naming the known ones otherwise.
int bytes_per_value(std::string_view dtype);

/// The names parse_optimizer, parse_counter_layout and bytes_per_value know, in order.
std::vector<std::string> optimizer_names();
std::vector<std::string> counter_layout_names();
std::vector<std::string> dtype_names();

/// Bytes of the step counter every shard keeps (4: optax's int32, NNX's uint32, torch's
/// float32 step).
inline constexpr std::int64_t step_counter_bytes = 4;

/// What one shard stores.
struct ShardStorage {
  std::int64_t kernel = 0;  ///< kernel elements
  std::int64_t bias = 0;    ///< bias elements
  std::int64_t parameter_bytes = 0;
  std::int64_t gradient_bytes = 0;  ///< the shard's slice of the reduced gradient
  std::int64_t state_bytes = 0;     ///< optimizer state, in the parameter dtype
  std::int64_t counter_bytes = step_counter_bytes;
  /// Transient during a step, not stored: the gathered parameters in param_dtype, and the
  /// shard's unsharded gradient in reduce_dtype before its reduce-scatter.
  std::int64_t gathered_bytes = 0;
  std::int64_t unreduced_gradient_bytes = 0;
  std::int64_t total() const {
    return parameter_bytes + gradient_bytes + state_bytes + counter_bytes;
  }
};

/// Storage of every shard for a D x K Linear layer.
struct StoragePlan {
  int d = 0, k = 0, shards = 0;
  StorageOptions options;  ///< param_dtype and reduce_dtype filled in
  int bytes = 0;           ///< per stored value
  OptimizerState optimizer = OptimizerState::sgd;
  std::vector<ShardStorage> per_shard;
};

/// The plan for these sizes, the shards' parts placed by `options.rule`; throws
/// std::invalid_argument for non-positive sizes, an unknown dtype or optimizer.
StoragePlan plan_storage(int d, int k, int shards, const StorageOptions& options);

/// The plan as a table, labelled as storage, with the caveat about peak memory.
void write_storage_report(std::ostream& os, const StoragePlan& plan);

}  // namespace sgdc::properties::sharding