#include "sgdc/properties/sharding/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "sgdc/reference/case.hpp"

namespace sgdc::properties::sharding {

namespace {
constexpr std::array<std::pair<PlacementRule, const char*>, 3> rule_names{{
    {PlacementRule::flat, "flat"},
    {PlacementRule::output_chunks, "output_chunks"},
    {PlacementRule::input_chunks, "input_chunks"},
}};

std::string explain(PlacementRule rule) {
  return fmt::format("the {} rule ({})", to_string(rule), describe(rule));
}
}  // namespace

const char* describe(PlacementRule rule) {
  switch (rule) {
    case PlacementRule::flat:
      return "the flat vector [kernel row-major, bias] split as numpy.array_split";
    case PlacementRule::output_chunks:
      return "kernel and bias split on K in chunks of ceil(K/S) as torch.chunk";
    case PlacementRule::input_chunks:
      return "kernel split on D, bias on K, in chunks of ceil(rows/S) as torch.chunk";
  }
  return "?";
}

const char* to_string(PlacementRule rule) {
  for (const auto& [r, name] : rule_names)
    if (r == rule) return name;
  return "?";
}

std::optional<PlacementRule> parse_placement_rule(std::string_view name) {
  for (const auto& [r, text] : rule_names)
    if (name == text) return r;
  return std::nullopt;
}

FlatRange shard_range(std::int64_t values, int shards, int shard) {
  const auto [begin, end] = reference::split_part(values, shards, shard);
  return {begin, end};
}

std::int64_t chunk_rows(std::int64_t rows, int shards, int shard) {
  const std::int64_t chunk = (rows + shards - 1) / shards;
  return std::clamp<std::int64_t>(rows - shard * chunk, 0, chunk);
}

std::vector<reference::ShardPart> expected_layout(int d, int k, int shards, PlacementRule rule) {
  const std::int64_t kernel = std::int64_t{d} * k, all = kernel + k;
  std::vector<reference::ShardPart> out;
  for (int s = 0; s < shards; ++s) {
    switch (rule) {
      case PlacementRule::flat: {
        const FlatRange r = shard_range(all, shards, s);
        const std::int64_t in_kernel = std::max<std::int64_t>(0, std::min(r.end, kernel) - r.begin);
        out.push_back({in_kernel, (r.end - r.begin) - in_kernel});
        break;
      }
      case PlacementRule::output_chunks: {
        const std::int64_t rows = chunk_rows(k, shards, s);
        out.push_back({rows * d, rows});
        break;
      }
      case PlacementRule::input_chunks:
        out.push_back({chunk_rows(d, shards, s) * k, chunk_rows(k, shards, s)});
        break;
    }
  }
  return out;
}

std::optional<std::string> layout_violation(const std::vector<reference::ShardPart>& reported,
                                            int d, int k, int shards, PlacementRule rule,
                                            int state_tensors) {
  if (reported.size() != static_cast<std::size_t>(shards))
    return fmt::format("{} shards reported for num_shards={}", reported.size(), shards);
  const std::int64_t kernel = std::int64_t{d} * k;
  std::int64_t kernel_sum = 0, bias_sum = 0;
  for (const reference::ShardPart& p : reported) {
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
  const std::vector<reference::ShardPart> want = expected_layout(d, k, shards, rule);
  for (int s = 0; s < shards; ++s) {
    if (reported[s].kernel != want[s].kernel || reported[s].bias != want[s].bias) {
      return fmt::format("shard {} stores {} kernel and {} bias elements; {} gives {} and {}", s,
                         reported[s].kernel, reported[s].bias, explain(rule), want[s].kernel,
                         want[s].bias);
    }
  }
  if (state_tensors == 0) return std::nullopt;
  for (int s = 0; s < shards; ++s) {
    const reference::ShardPart& p = reported[s];
    if (!p.state_kernel || !p.state_bias)
      return fmt::format(
          "shard {} does not say where it keeps its optimizer state (state_kernel, state_bias)", s);
    const std::int64_t state_kernel = state_tensors * want[s].kernel;
    const std::int64_t state_bias = state_tensors * want[s].bias;
    if (*p.state_kernel != state_kernel || *p.state_bias != state_bias) {
      const bool replicated = shards > 1 && *p.state_kernel == state_tensors * kernel &&
                              *p.state_bias == state_tensors * std::int64_t{k};
      return fmt::format(
          "shard {} keeps {} kernel and {} bias elements of optimizer state; sharded with its "
          "parameters ({} state tensor{}), it keeps {} and {}{}",
          s, *p.state_kernel, *p.state_bias, state_tensors, state_tensors == 1 ? "" : "s",
          state_kernel, state_bias,
          replicated ? ": the whole state on every shard, not sharded" : "");
    }
  }
  return std::nullopt;
}

}  // namespace sgdc::properties::sharding
