#include "sgdc/properties/placement.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace sgdc {

FlatRange shard_range(std::int64_t values, int shards, int shard) {
  const std::int64_t q = values / shards, r = values % shards;
  const std::int64_t begin = shard * q + std::min<std::int64_t>(shard, r);
  return {begin, begin + q + (shard < r ? 1 : 0)};
}

std::vector<ShardPart> expected_layout(int d, int k, int shards) {
  const std::int64_t kernel = std::int64_t{d} * k, all = kernel + k;
  std::vector<ShardPart> out;
  for (int s = 0; s < shards; ++s) {
    const FlatRange r = shard_range(all, shards, s);
    const std::int64_t in_kernel = std::max<std::int64_t>(0, std::min(r.end, kernel) - r.begin);
    out.push_back({in_kernel, (r.end - r.begin) - in_kernel});
  }
  return out;
}

std::optional<std::string> layout_violation(const std::vector<ShardPart>& reported, int d, int k,
                                            int shards) {
  if (reported.size() != static_cast<std::size_t>(shards))
    return fmt::format("{} shards reported for num_shards={}", reported.size(), shards);
  const std::int64_t kernel = std::int64_t{d} * k;
  std::int64_t kernel_sum = 0, bias_sum = 0;
  for (const ShardPart& p : reported) {
    kernel_sum += p.kernel;
    bias_sum += p.bias;
  }
  // Coverage first: a replica or a lost part is the more telling diagnosis.
  auto coverage = [](const char* name, std::int64_t stored, std::int64_t want) {
    if (stored == want) return std::string();
    if (stored > want && stored % want == 0)
      return fmt::format("{} elements stored {} times over ({} for {})", name, stored / want,
                         stored, want);
    return fmt::format("{} elements stored {} times in all for {} ({})", name, stored, want,
                       stored > want ? "some more than once" : "some on no shard");
  };
  std::string why = coverage("kernel", kernel_sum, kernel);
  if (const std::string b = coverage("bias", bias_sum, k); !b.empty())
    why += (why.empty() ? "" : "; ") + b;
  if (!why.empty()) return "parameters not covered exactly once: " + why;
  const std::vector<ShardPart> want = expected_layout(d, k, shards);
  for (int s = 0; s < shards; ++s) {
    if (reported[s].kernel != want[s].kernel || reported[s].bias != want[s].bias) {
      return fmt::format(
          "shard {} stores {} kernel and {} bias elements; the remainder rule (flat (D+1)*K "
          "vector split as numpy.array_split) gives {} and {}",
          s, reported[s].kernel, reported[s].bias, want[s].kernel, want[s].bias);
    }
  }
  return std::nullopt;
}

}  // namespace sgdc
