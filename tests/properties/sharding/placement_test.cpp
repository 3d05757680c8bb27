// The remainder rule of the placement property, and its diagnoses of wrong layouts.
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "sgdc/properties/sharding/placement.hpp"

namespace sgdc::properties::sharding {
namespace {

TEST(Placement, SplitsLikeNumpyArraySplit) {
  // numpy.array_split(range(10), 4) has sizes 3, 3, 2, 2.
  const std::int64_t sizes[] = {3, 3, 2, 2};
  std::int64_t begin = 0;
  for (int s = 0; s < 4; ++s) {
    const FlatRange r = shard_range(10, 4, s);
    EXPECT_EQ(r.begin, begin);
    EXPECT_EQ(r.end - r.begin, sizes[s]);
    begin = r.end;
  }
}

TEST(Placement, LayoutCoversEveryParameterOnce) {
  for (int d = 1; d <= 5; ++d)
    for (int k = 1; k <= 5; ++k)
      for (int s = 1; s <= 9; ++s) {
        const auto layout = expected_layout(d, k, s);
        ASSERT_EQ(layout.size(), static_cast<std::size_t>(s));
        std::int64_t kernel = 0, bias = 0, largest = 0, smallest = INT64_MAX;
        for (const reference::ShardPart& p : layout) {
          kernel += p.kernel;
          bias += p.bias;
          largest = std::max(largest, p.kernel + p.bias);
          smallest = std::min(smallest, p.kernel + p.bias);
        }
        EXPECT_EQ(kernel, d * k);
        EXPECT_EQ(bias, k);
        EXPECT_LE(largest - smallest, 1);
        EXPECT_FALSE(layout_violation(layout, d, k, s));
      }
}

TEST(Placement, KernelThenBias) {
  // D = 3, K = 2: 8 values, kernel 0..5 and bias 6..7, over 3 shards: 3, 3, 2.
  const auto layout = expected_layout(3, 2, 3);
  EXPECT_EQ(layout[0].kernel, 3);
  EXPECT_EQ(layout[0].bias, 0);
  EXPECT_EQ(layout[1].kernel, 3);
  EXPECT_EQ(layout[1].bias, 0);
  EXPECT_EQ(layout[2].kernel, 0);
  EXPECT_EQ(layout[2].bias, 2);
}

TEST(Placement, RejectsAReplicaOnEveryShard) {
  const std::vector<reference::ShardPart> replica(4, reference::ShardPart{6, 2});
  const auto why = layout_violation(replica, 3, 2, 4);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("stored 4 times over"), std::string::npos) << *why;
}

TEST(Placement, RejectsLostAndMovedElements) {
  auto layout = expected_layout(3, 2, 3);
  layout[2].bias = 1;  // one bias element on no shard
  EXPECT_TRUE(layout_violation(layout, 3, 2, 3));
  layout = expected_layout(3, 2, 3);
  layout[0].kernel -= 1;  // same totals, other sizes than the rule
  layout[1].kernel += 1;
  const auto why = layout_violation(layout, 3, 2, 3);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the flat rule"), std::string::npos) << *why;
  EXPECT_TRUE(layout_violation(expected_layout(3, 2, 2), 3, 2, 3));  // wrong shard count
}

TEST(Placement, OutputChunksFollowTorchChunk) {
  // K = 3 over 2 shards: torch.chunk gives rows 2 and 1; over 5 shards 1, 1, 1, 0, 0.
  const auto two = expected_layout(5, 3, 2, PlacementRule::output_chunks);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].kernel, 10);
  EXPECT_EQ(two[0].bias, 2);
  EXPECT_EQ(two[1].kernel, 5);
  EXPECT_EQ(two[1].bias, 1);
  const auto five = expected_layout(5, 3, 5, PlacementRule::output_chunks);
  EXPECT_EQ(five[2].bias, 1);
  EXPECT_EQ(five[3].kernel + five[3].bias + five[4].kernel + five[4].bias, 0);
  // K = 5 over 4 shards: chunks of 2, so 2, 2, 1 and none.
  EXPECT_EQ(chunk_rows(5, 4, 2), 1);
  EXPECT_EQ(chunk_rows(5, 4, 3), 0);
  EXPECT_FALSE(layout_violation(five, 5, 3, 5, PlacementRule::output_chunks));
  // The same layout is not the flat rule's, and the message names the declared rule.
  const auto why = layout_violation(five, 5, 3, 5, PlacementRule::flat);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("flat rule"), std::string::npos) << *why;
  EXPECT_NE(layout_violation(expected_layout(5, 3, 5), 5, 3, 5, PlacementRule::output_chunks)
                ->find("output_chunks rule"),
            std::string::npos);
}

TEST(Placement, InputChunksSplitTheKernelOnD) {
  const auto layout = expected_layout(5, 3, 2, PlacementRule::input_chunks);
  EXPECT_EQ(layout[0].kernel, 9);  // 3 of the 5 rows of K = 3
  EXPECT_EQ(layout[1].kernel, 6);
  EXPECT_EQ(layout[0].bias, 2);
  EXPECT_EQ(layout[1].bias, 1);
}

TEST(Placement, StorageWordsFollowTheRule) {
  EXPECT_NE(std::string(storage_per_shard(PlacementRule::flat)).find("(D+1)*K/S"),
            std::string::npos);
  EXPECT_NE(
      std::string(storage_per_shard(PlacementRule::output_chunks)).find("ceil(K/S) output rows"),
      std::string::npos);
  EXPECT_NE(
      std::string(storage_per_shard(PlacementRule::input_chunks)).find("ceil(D/S) kernel rows"),
      std::string::npos);
}

TEST(Placement, RuleNamesRoundTrip) {
  for (PlacementRule r :
       {PlacementRule::flat, PlacementRule::output_chunks, PlacementRule::input_chunks})
    EXPECT_EQ(parse_placement_rule(to_string(r)), r);
  EXPECT_FALSE(parse_placement_rule("dim0"));
}

}  // namespace
}  // namespace sgdc::properties::sharding