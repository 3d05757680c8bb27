#pragma once
/// \file
/// Where a sharded implementation stores the parameters, and the check of a reported
/// layout (protocol `shards`).
///
/// Remainder rule: the parameters are one flat vector of P = (D + 1) * K values, the
/// kernel row-major followed by the bias, split into S contiguous parts in shard order.
/// With q = P / S and r = P % S, shards 0 .. r-1 store q + 1 values and the others q
/// (numpy.array_split). Each shard's kernel count is how much of its part lies in the
/// first D * K values, its bias count how much lies in the last K.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sgdc/reference/step_result.hpp"

namespace sgdc {

/// The half-open range [begin, end) of flat parameter indices that `shard` of `shards`
/// stores under the remainder rule, for `values` parameters in all.
struct FlatRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
FlatRange shard_range(std::int64_t values, int shards, int shard);

/// The layout the remainder rule prescribes for a D x K kernel and a K bias over
/// `shards` shards: per shard, how many kernel and bias elements it stores.
std::vector<ShardPart> expected_layout(int d, int k, int shards);

/// What is wrong with `reported` for that shape and shard count: a wrong number of
/// shards, parameters stored more than once or not at all, or a shard storing other
/// counts than the rule prescribes. Nothing when it matches.
std::optional<std::string> layout_violation(const std::vector<ShardPart>& reported, int d, int k,
                                            int shards);

}  // namespace sgdc
