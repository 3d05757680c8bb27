// Per-shard storage: parameters by the remainder rule, gradients alike, optimizer state
// by optimizer.
#include <gtest/gtest.h>

#include <sstream>

#include "sgdc/properties/sharding/storage.hpp"

namespace sgdc::properties::sharding {
namespace {

StoragePlan plan(int d, int k, int shards, std::string dtype, std::string optimizer,
                 PlacementRule rule = PlacementRule::flat) {
  StorageOptions o;
  o.dtype = std::move(dtype);
  o.optimizer_name = std::move(optimizer);
  o.rule = rule;
  return plan_storage(d, k, shards, o);
}

TEST(Storage, ParametersSplitByTheRemainderRule) {
  // (3+1)*4 = 16 float32 values over 3 shards: 6, 5, 5 values.
  const StoragePlan p = plan(3, 4, 3, "float32", "sgd");
  ASSERT_EQ(p.per_shard.size(), 3u);
  EXPECT_EQ(p.per_shard[0].parameter_bytes, 24);
  EXPECT_EQ(p.per_shard[1].parameter_bytes, 20);
  EXPECT_EQ(p.per_shard[2].parameter_bytes, 20);
  for (const ShardStorage& s : p.per_shard) {
    EXPECT_EQ(s.gradient_bytes, s.parameter_bytes);
    EXPECT_EQ(s.state_bytes, 0);  // plain SGD: only the step counter
    EXPECT_EQ(s.counter_bytes, step_counter_bytes);
  }
}

TEST(Storage, OptimizerStateAndDtype) {
  const StoragePlan m = plan(2, 2, 2, "bfloat16", "momentum");
  const StoragePlan a = plan(2, 2, 2, "bfloat16", "adam");
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(m.per_shard[s].parameter_bytes, 3 * 2);  // 6 values over 2 shards, 2 bytes each
    EXPECT_EQ(m.per_shard[s].state_bytes, 3 * 2);
    EXPECT_EQ(a.per_shard[s].state_bytes, 2 * 3 * 2);
    EXPECT_EQ(plan(2, 2, 2, "bfloat16", "adagrad").per_shard[s].state_bytes, 3 * 2);
  }
}

TEST(Storage, FollowsThePlacementRule) {
  // FSDP2's Shard(0): K = 3 over 4 shards holds rows 1, 1, 1, 0, each row D + 1 values.
  const StoragePlan p = plan(5, 3, 4, "float32", "momentum", PlacementRule::output_chunks);
  ASSERT_EQ(p.per_shard.size(), 4u);
  EXPECT_EQ(p.per_shard[0].parameter_bytes, 24);
  EXPECT_EQ(p.per_shard[0].state_bytes, 24);
  EXPECT_EQ(p.per_shard[3].parameter_bytes, 0);
  std::ostringstream os;
  write_storage_report(os, p);
  EXPECT_NE(os.str().find("torch.chunk"), std::string::npos) << os.str();
}

TEST(Storage, RejectsUnknownNamesAndSizes) {
  EXPECT_THROW(bytes_per_value("float24"), std::invalid_argument);
  EXPECT_THROW(parse_optimizer("lamb"), std::invalid_argument);
  EXPECT_THROW(plan(0, 1, 1, "float32", "sgd"), std::invalid_argument);
  EXPECT_THROW(parse_counter_layout("keras"), std::invalid_argument);
  StorageOptions bad;
  bad.param_dtype = "float12";
  EXPECT_THROW(plan_storage(1, 1, 1, bad), std::invalid_argument);
}

TEST(Storage, ReportSaysStorageNotPeakMemory) {
  std::ostringstream os;
  write_storage_report(os, plan(1, 1, 4, "float32", "adam"));
  EXPECT_NE(os.str().find("not peak memory"), std::string::npos) << os.str();
}

TEST(Storage, AdamWIsAdamsState) {
  const StoragePlan a = plan(3, 4, 2, "float32", "adam");
  const StoragePlan w = plan(3, 4, 2, "float32", "adamw");
  EXPECT_EQ(w.optimizer, OptimizerState::adam);
  for (int s = 0; s < 2; ++s) EXPECT_EQ(w.per_shard[s].state_bytes, a.per_shard[s].state_bytes);
  std::ostringstream os;
  write_storage_report(os, w);
  EXPECT_NE(os.str().find("optimizer adamw"), std::string::npos) << os.str();
}

TEST(Storage, MixedPrecisionAsFsdp2KeepsIt) {
  // MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32): float32 sharded
  // parameters, gradients and state; the gathered compute copy of all (3+1)*4 = 16 values
  // in bfloat16, the full gradient reduced in float32, both counted apart.
  StorageOptions o;
  o.optimizer_name = "adamw";
  o.param_dtype = "bfloat16";
  o.reduce_dtype = "float32";
  o.rule = PlacementRule::output_chunks;
  const StoragePlan p = plan_storage(3, 4, 2, o);
  ASSERT_EQ(p.per_shard.size(), 2u);
  for (const ShardStorage& s : p.per_shard) {
    EXPECT_EQ(s.parameter_bytes, 2 * 4 * 4);  // 2 rows of D+1 values, float32
    EXPECT_EQ(s.gradient_bytes, s.parameter_bytes);
    EXPECT_EQ(s.state_bytes, 2 * s.parameter_bytes);
    EXPECT_EQ(s.gathered_bytes, 16 * 2);
    EXPECT_EQ(s.unreduced_gradient_bytes, 16 * 4);
    // Transient copies are not storage.
    EXPECT_EQ(s.total(), s.parameter_bytes + s.gradient_bytes + s.state_bytes + s.counter_bytes);
  }
  // reduce_dtype defaults to param_dtype, param_dtype to dtype.
  o.reduce_dtype.clear();
  EXPECT_EQ(plan_storage(3, 4, 2, o).per_shard[0].unreduced_gradient_bytes, 16 * 2);
  o.param_dtype.clear();
  EXPECT_EQ(plan_storage(3, 4, 2, o).per_shard[0].gathered_bytes, 16 * 4);
}

TEST(Storage, StepCountersAsEachFrameworkKeepsThem) {
  // torch.optim: a float32 step per parameter (weight, bias) for Adam(W), none for SGD.
  EXPECT_EQ(counter_bytes(CounterLayout::torch, OptimizerState::adam), 8);
  // torch.optim.Adagrad keeps a `step` per parameter; optax's scale_by_rss no count.
  EXPECT_EQ(counter_bytes(CounterLayout::torch, OptimizerState::adagrad), 8);
  EXPECT_EQ(counter_bytes(CounterLayout::optax, OptimizerState::adagrad), 0);
  EXPECT_EQ(counter_bytes(CounterLayout::nnx, OptimizerState::adagrad), 4);
  EXPECT_EQ(counter_bytes(CounterLayout::torch, OptimizerState::momentum), 0);
  EXPECT_EQ(counter_bytes(CounterLayout::torch, OptimizerState::sgd), 0);
  // optax: an int32 count in Adam's state; nnx.Optimizer adds its uint32 step.
  EXPECT_EQ(counter_bytes(CounterLayout::optax, OptimizerState::adam), 4);
  EXPECT_EQ(counter_bytes(CounterLayout::optax, OptimizerState::sgd), 0);
  EXPECT_EQ(counter_bytes(CounterLayout::nnx, OptimizerState::adam), 8);
  EXPECT_EQ(counter_bytes(CounterLayout::nnx, OptimizerState::momentum), 4);
  EXPECT_EQ(counter_bytes(CounterLayout::one_per_shard, OptimizerState::sgd), step_counter_bytes);
  StorageOptions o;
  o.optimizer_name = "adamw";
  o.counter = CounterLayout::torch;
  const StoragePlan p = plan_storage(3, 4, 3, o);
  for (const ShardStorage& s : p.per_shard) EXPECT_EQ(s.counter_bytes, 8);
  std::ostringstream os;
  write_storage_report(os, p);
  EXPECT_NE(os.str().find("float32 `step` tensor per parameter"), std::string::npos) << os.str();
}

}  // namespace
}  // namespace sgdc::properties::sharding