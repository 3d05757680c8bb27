// The remainder rule of the placement property, and its diagnoses of wrong layouts.
#include <gtest/gtest.h>

#include <numeric>

#include "sgdc/properties/placement.hpp"

namespace sgdc {
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
        for (const ShardPart& p : layout) {
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
  const std::vector<ShardPart> replica(4, ShardPart{6, 2});
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
  EXPECT_NE(why->find("remainder rule"), std::string::npos) << *why;
  EXPECT_TRUE(layout_violation(expected_layout(3, 2, 2), 3, 2, 3));  // wrong shard count
}

}  // namespace
}  // namespace sgdc
