#pragma once
/// \file
/// Running worst-case statistics of one property over many cases.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "sgdc/reference/check.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc {

/// Worst error/bound and worst ULP distance seen per output.
struct Observations {
  struct Worst {
    double ratio = 0.0;
    std::uint64_t ulps = 0;
    bool seen = false;
  };
  std::array<Worst, 5> per_output{};
  /// Parameter values each shard stored, as an implementation reported them.
  struct ShardStorage {
    int d = 0, k = 0, shards = 0;
    std::vector<std::int64_t> values;  ///< per shard, kernel and bias elements together
  };
  /// The layout of the last case that reported one (protocol `shards`), if any.
  std::optional<ShardStorage> shard_storage;

  void record(Output o, const ElementCheck& c);
  const Worst& of(Output o) const { return per_output[static_cast<int>(o)]; }
  /// Worst over all outputs.
  Worst overall() const;
};

}  // namespace sgdc
