#pragma once
/// \file
/// Where a sharded implementation stores the parameters, under the placement rule it
/// declares, and the check of a reported layout (protocol `shards`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sgdc/reference/step_result.hpp"

namespace sgdc::properties::sharding {

/// How parameters are split over S shards (`docs/spec/protocol.md`, "placement").
enum class PlacementRule {
  /// One flat vector of P = (D + 1) * K values, the kernel row-major then the bias, split
  /// into S contiguous parts in shard order as numpy.array_split does: with q = P / S and
  /// r = P % S, shards 0 .. r-1 store q + 1 values and the others q.
  flat,
  /// Each parameter split on its output-feature axis K (dim 0 of PyTorch's weight [K][D]
  /// and bias [K]) as torch.chunk does: chunks of c = ceil(K / S) rows in shard order, the
  /// last one shorter, and no rows at all for the shards after it (FSDP2's Shard(0)).
  output_chunks,
  /// Each parameter split on its first axis in this project's layout (input-feature rows
  /// of the kernel [D][K], the bias [K]) by the same torch.chunk rule.
  input_chunks,
};

/// "flat", "output_chunks", "input_chunks" and back.
const char* to_string(PlacementRule rule);
std::optional<PlacementRule> parse_placement_rule(std::string_view name);

/// What one shard stores under `rule`, in words, for a report: e.g. "ceil(K/S) output rows
/// of D+1 values (...) per shard, ...".
const char* storage_per_shard(PlacementRule rule);

/// The half-open range [begin, end) of flat parameter indices that `shard` of `shards`
/// stores under the flat rule, for `values` parameters in all.
struct FlatRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
FlatRange shard_range(std::int64_t values, int shards, int shard);

/// Rows of `rows` that `shard` of `shards` holds under the torch.chunk rule.
std::int64_t chunk_rows(std::int64_t rows, int shards, int shard);

/// The layout `rule` prescribes for a D x K kernel and a K bias over `shards` shards: per
/// shard, how many kernel and bias elements it stores.
std::vector<reference::ShardPart> expected_layout(int d, int k, int shards,
                                                  PlacementRule rule = PlacementRule::flat);

/// What is wrong with `reported` for that shape and shard count under `rule`: a wrong
/// number of shards, parameters stored more than once or not at all, or a shard storing
/// other counts than the rule prescribes. Nothing when it matches.
std::optional<std::string> layout_violation(const std::vector<reference::ShardPart>& reported,
                                            int d, int k, int shards,
                                            PlacementRule rule = PlacementRule::flat);

}  // namespace sgdc::properties::sharding
