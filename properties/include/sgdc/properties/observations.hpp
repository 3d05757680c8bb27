#pragma once
/// \file
/// Running worst-case statistics of one property over many cases.

#include <cstdint>
#include <optional>
#include <vector>

#include "sgdc/properties/sharding/placement.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/check.hpp"
#include "sgdc/reference/outputs.hpp"

namespace sgdc::properties {

/// Worst error/bound and worst ULP distance seen per output.
struct Observations {
  struct Worst {
    double ratio = 0.0;  ///< error / bound, over finite values
    /// ULPs from the correctly rounded value, over the elements whose bound is at most
    /// `ulp_scale` ULPs (there ULPs are the natural measure: a long sum's bound, or a
    /// cancelled result's, may rightly span millions); empty when there was none.
    std::optional<std::uint64_t> ulps;
    bool seen = false;
  };
  reference::PerOutput<Worst> per_output{};
  /// Parameter values each shard stored, as an implementation reported them.
  struct ShardStorage {
    int d = 0, k = 0, shards = 0;
    sharding::PlacementRule rule = sharding::PlacementRule::flat;
    int state_tensors = 0;  ///< the step's parameter-sized optimizer state tensors
    /// The step's optimizer, whose state those are.
    reference::Optimizer::Kind optimizer = reference::Optimizer::Kind::sgd;
    std::vector<std::int64_t> values;  ///< per shard, kernel and bias elements together
    /// Per shard, the optimizer state elements it reported (kernel and bias together).
    std::vector<std::optional<std::int64_t>> state;
  };
  /// The layout of the last case that reported one (protocol `shards`), if any.
  std::optional<ShardStorage> shard_storage;

  /// The largest bound, in ULPs, of an element whose ULP distance is recorded.
  static constexpr double ulp_scale = 16.0;

  void record(reference::Output o, const reference::ElementCheck& c);
  /// Adds what `later` saw (its shard storage, if any, replaces this one's).
  void merge(const Observations& later);
  const Worst& of(reference::Output o) const { return per_output[o]; }
  /// Worst over all outputs.
  Worst overall() const;
};

}  // namespace sgdc::properties
