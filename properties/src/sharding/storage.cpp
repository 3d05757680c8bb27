#include "sgdc/properties/sharding/storage.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <array>
#include <stdexcept>
#include <utility>

#include "sgdc/properties/sharding/placement.hpp"

namespace sgdc::properties::sharding {

namespace {
constexpr std::array<std::pair<std::string_view, int>, 6> dtypes = {{{"float32", 4},
                                                                     {"float64", 8},
                                                                     {"bfloat16", 2},
                                                                     {"float16", 2},
                                                                     {"float8_e4m3fn", 1},
                                                                     {"float8_e5m2", 1}}};

const char* name_of(Optimizer o) {
  switch (o) {
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::momentum:
      return "momentum";
    case Optimizer::adam:
      return "adam";
  }
  return "?";
}

const char* state_words(Optimizer o) {
  switch (o) {
    case Optimizer::sgd:
      return "plain SGD keeps no parameter-sized state, only the step counter";
    case Optimizer::momentum:
      return "momentum keeps one accumulator per parameter";
    case Optimizer::adam:
      return "Adam keeps two moments per parameter";
  }
  return "?";
}
}  // namespace

Optimizer parse_optimizer(std::string_view name) {
  for (Optimizer o : {Optimizer::sgd, Optimizer::momentum, Optimizer::adam})
    if (name == name_of(o)) return o;
  throw std::invalid_argument(
      fmt::format("unknown optimizer \"{}\"; known: sgd, momentum, adam", name));
}

int state_tensors(Optimizer o) {
  switch (o) {
    case Optimizer::sgd:
      return 0;
    case Optimizer::momentum:
      return 1;
    case Optimizer::adam:
      return 2;
  }
  return 0;
}

int bytes_per_value(std::string_view dtype) {
  std::string known;
  for (const auto& [name, bytes] : dtypes) {
    if (name == dtype) return bytes;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  throw std::invalid_argument(fmt::format("unknown dtype \"{}\"; known: {}", dtype, known));
}

StoragePlan plan_storage(int d, int k, int shards, std::string_view dtype, Optimizer optimizer,
                         PlacementRule placement) {
  if (d < 1 || k < 1 || shards < 1)
    throw std::invalid_argument(
        fmt::format("D, K and S must be positive (got D={} K={} S={})", d, k, shards));
  StoragePlan plan{d,         k,         shards, std::string(dtype), bytes_per_value(dtype),
                   optimizer, placement, {}};
  for (const reference::ShardPart& part : expected_layout(d, k, shards, placement)) {
    ShardStorage s;
    s.kernel = part.kernel;
    s.bias = part.bias;
    s.parameter_bytes = (part.kernel + part.bias) * plan.bytes;
    s.gradient_bytes = s.parameter_bytes;
    s.state_bytes = state_tensors(optimizer) * s.parameter_bytes;
    plan.per_shard.push_back(s);
  }
  return plan;
}

void write_storage_report(std::ostream& os, const StoragePlan& p) {
  const std::int64_t values = std::int64_t{p.d + 1} * p.k;
  fmt::print(os,
             "storage per shard (not peak memory): Linear D={} K={}, (D+1)*K = {} parameters "
             "over {} shards, {} ({} bytes per value), optimizer {}\n",
             p.d, p.k, values, p.shards, p.dtype, p.bytes, name_of(p.optimizer));
  if (p.placement == PlacementRule::flat) {
    fmt::print(os,
               "placement: the flat vector [kernel row-major, bias] split as numpy.array_split "
               "(the first {} shards hold {} values, the others {})\n",
               values % p.shards, values / p.shards + 1, values / p.shards);
  } else {
    fmt::print(os, "placement: {}\n", storage_per_shard(p.placement));
  }
  fmt::print(os, "optimizer state: {}; state in {}, step counter an int32 on every shard\n\n",
             state_words(p.optimizer), p.dtype);
  fmt::print(os, "{:>5} {:>7} {:>6} {:>11} {:>10} {:>16} {:>13} {:>10}\n", "shard", "kernel",
             "bias", "parameters", "gradients", "optimizer state", "step counter", "total");
  ShardStorage all;
  all.counter_bytes = 0;
  for (std::size_t i = 0; i < p.per_shard.size(); ++i) {
    const ShardStorage& s = p.per_shard[i];
    fmt::print(os, "{:>5} {:>7} {:>6} {:>9} B {:>8} B {:>14} B {:>11} B {:>8} B\n", i, s.kernel,
               s.bias, s.parameter_bytes, s.gradient_bytes, s.state_bytes, s.counter_bytes,
               s.total());
    all.kernel += s.kernel;
    all.bias += s.bias;
    all.parameter_bytes += s.parameter_bytes;
    all.gradient_bytes += s.gradient_bytes;
    all.state_bytes += s.state_bytes;
    all.counter_bytes += s.counter_bytes;
  }
  fmt::print(os, "{:>5} {:>7} {:>6} {:>9} B {:>8} B {:>14} B {:>11} B {:>8} B\n", "all", all.kernel,
             all.bias, all.parameter_bytes, all.gradient_bytes, all.state_bytes, all.counter_bytes,
             all.total());
  fmt::print(os,
             "\nThis is storage, not peak memory: during a step a shard also holds the gathered "
             "parameters (all-gather), the full gradient before its reduction, activations and "
             "communication buffers, so its peak memory is larger.\n");
}

}  // namespace sgdc::properties::sharding