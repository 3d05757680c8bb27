// Per-shard storage: parameters by the remainder rule, gradients alike, optimizer state
// by optimizer.
#include <gtest/gtest.h>

#include <sstream>

#include "sgdc/properties/sharding/storage.hpp"

namespace sgdc::properties::sharding {
namespace {

TEST(Storage, ParametersSplitByTheRemainderRule) {
  // (3+1)*4 = 16 float32 values over 3 shards: 6, 5, 5 values.
  const StoragePlan p = plan_storage(3, 4, 3, "float32", OptimizerState::sgd);
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
  const StoragePlan m = plan_storage(2, 2, 2, "bfloat16", OptimizerState::momentum);
  const StoragePlan a = plan_storage(2, 2, 2, "bfloat16", OptimizerState::adam);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(m.per_shard[s].parameter_bytes, 3 * 2);  // 6 values over 2 shards, 2 bytes each
    EXPECT_EQ(m.per_shard[s].state_bytes, 3 * 2);
    EXPECT_EQ(a.per_shard[s].state_bytes, 2 * 3 * 2);
  }
}

TEST(Storage, FollowsThePlacementRule) {
  // FSDP2's Shard(0): K = 3 over 4 shards holds rows 1, 1, 1, 0, each row D + 1 values.
  const StoragePlan p =
      plan_storage(5, 3, 4, "float32", OptimizerState::momentum, PlacementRule::output_chunks);
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
  EXPECT_THROW(plan_storage(0, 1, 1, "float32", OptimizerState::sgd), std::invalid_argument);
}

TEST(Storage, ReportSaysStorageNotPeakMemory) {
  std::ostringstream os;
  write_storage_report(os, plan_storage(1, 1, 4, "float32", OptimizerState::adam));
  EXPECT_NE(os.str().find("not peak memory"), std::string::npos) << os.str();
}

}  // namespace
}  // namespace sgdc::properties::sharding