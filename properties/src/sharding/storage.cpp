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

constexpr std::array<std::pair<std::string_view, OptimizerState>, 5> optimizer_names_table = {
    {{"sgd", OptimizerState::sgd},
     {"momentum", OptimizerState::momentum},
     {"adam", OptimizerState::adam},
     {"adamw", OptimizerState::adam},
     {"adagrad", OptimizerState::adagrad}}};

// Which optimizers keep a step counter of their own: torch.optim's Adam(W) and Adagrad (a
// `step` tensor per parameter; SGD none), optax's Adam (`count`; scale_by_rss and trace
// none).
bool torch_counts_steps(OptimizerState o) {
  return o == OptimizerState::adam || o == OptimizerState::adagrad;
}
bool optax_counts_steps(OptimizerState o) { return o == OptimizerState::adam; }

constexpr std::array<std::pair<std::string_view, CounterLayout>, 4> counter_layouts = {
    {{"shard", CounterLayout::one_per_shard},
     {"torch", CounterLayout::torch},
     {"optax", CounterLayout::optax},
     {"nnx", CounterLayout::nnx}}};

const char* counter_words(CounterLayout layout, OptimizerState o) {
  switch (layout) {
    case CounterLayout::one_per_shard:
      return "a 4-byte step counter on every shard";
    case CounterLayout::torch:
      return torch_counts_steps(o)
                 ? "torch.optim's float32 `step` tensor per parameter (weight, bias) on every "
                   "shard"
                 : "no step counter (torch.optim's SGD keeps none)";
    case CounterLayout::optax:
      return optax_counts_steps(o) ? "optax's int32 `count` on every shard"
                                   : "no step counter (optax's sgd and adagrad keep none)";
    case CounterLayout::nnx:
      return optax_counts_steps(o)
                 ? "nnx.Optimizer's uint32 `step` and optax's int32 `count` on every shard"
                 : "nnx.Optimizer's uint32 `step` on every shard";
  }
  return "?";
}

const char* name_of(OptimizerState o) {
  switch (o) {
    case OptimizerState::sgd:
      return "sgd";
    case OptimizerState::momentum:
      return "momentum";
    case OptimizerState::adam:
      return "adam";
    case OptimizerState::adagrad:
      return "adagrad";
  }
  return "?";
}

const char* state_words(OptimizerState o) {
  switch (o) {
    case OptimizerState::sgd:
      return "plain SGD keeps no parameter-sized state, only the step counter";
    case OptimizerState::momentum:
      return "momentum keeps one accumulator per parameter";
    case OptimizerState::adam:
      return "Adam keeps two moments per parameter";
    case OptimizerState::adagrad:
      return "Adagrad keeps one sum of squares per parameter";
  }
  return "?";
}
}  // namespace

namespace {
template <typename Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.emplace_back(entry.first);
  return out;
}
}  // namespace

std::vector<std::string> optimizer_names() { return names_of(optimizer_names_table); }
std::vector<std::string> counter_layout_names() { return names_of(counter_layouts); }
std::vector<std::string> dtype_names() { return names_of(dtypes); }

OptimizerState parse_optimizer(std::string_view name) {
  for (const auto& [known, o] : optimizer_names_table)
    if (name == known) return o;
  throw std::invalid_argument(
      fmt::format("unknown optimizer \"{}\"; known: sgd, momentum, adam, adamw, adagrad", name));
}

CounterLayout parse_counter_layout(std::string_view name) {
  for (const auto& [known, layout] : counter_layouts)
    if (name == known) return layout;
  throw std::invalid_argument(
      fmt::format("unknown counter layout \"{}\"; known: shard, torch, optax, nnx", name));
}

std::int64_t counter_bytes(CounterLayout layout, OptimizerState o) {
  // Linear's two parameters, weight and bias.
  constexpr std::int64_t parameters = 2;
  switch (layout) {
    case CounterLayout::one_per_shard:
      return step_counter_bytes;
    case CounterLayout::torch:
      return torch_counts_steps(o) ? parameters * 4 : 0;
    case CounterLayout::optax:
      return optax_counts_steps(o) ? 4 : 0;
    case CounterLayout::nnx:
      return 4 + (optax_counts_steps(o) ? 4 : 0);
  }
  return 0;
}

int state_tensors(OptimizerState o) {
  switch (o) {
    case OptimizerState::sgd:
      return 0;
    case OptimizerState::momentum:
      return 1;
    case OptimizerState::adam:
      return 2;
    case OptimizerState::adagrad:
      return 1;
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

StoragePlan plan_storage(int d, int k, int shards, const StorageOptions& options) {
  if (d < 1 || k < 1 || shards < 1)
    throw std::invalid_argument(
        fmt::format("D, K and S must be positive (got D={} K={} S={})", d, k, shards));
  StoragePlan plan;
  plan.d = d;
  plan.k = k;
  plan.shards = shards;
  plan.options = options;
  if (plan.options.param_dtype.empty()) plan.options.param_dtype = options.dtype;
  if (plan.options.reduce_dtype.empty()) plan.options.reduce_dtype = plan.options.param_dtype;
  plan.bytes = bytes_per_value(options.dtype);
  plan.optimizer = parse_optimizer(options.optimizer_name);
  const std::int64_t all_values = std::int64_t{d + 1} * k;
  const std::int64_t gathered = all_values * bytes_per_value(plan.options.param_dtype);
  const std::int64_t unreduced = all_values * bytes_per_value(plan.options.reduce_dtype);
  for (const reference::ShardPart& part : expected_layout(d, k, shards, options.rule)) {
    ShardStorage s;
    s.kernel = part.kernel;
    s.bias = part.bias;
    s.parameter_bytes = (part.kernel + part.bias) * plan.bytes;
    s.gradient_bytes = s.parameter_bytes;
    s.state_bytes = state_tensors(plan.optimizer) * s.parameter_bytes;
    s.counter_bytes = counter_bytes(options.counter, plan.optimizer);
    s.gathered_bytes = gathered;
    s.unreduced_gradient_bytes = unreduced;
    plan.per_shard.push_back(s);
  }
  return plan;
}

void write_storage_report(std::ostream& os, const StoragePlan& p) {
  const std::int64_t values = std::int64_t{p.d + 1} * p.k;
  fmt::print(os,
             "storage per shard (not peak memory): Linear D={} K={}, (D+1)*K = {} parameters "
             "over {} shards, {} ({} bytes per value), optimizer {}\n",
             p.d, p.k, values, p.shards, p.options.dtype, p.bytes, p.options.optimizer_name);
  fmt::print(os, "placement: {} ({})\n", describe(p.options.rule), to_string(p.options.rule));
  fmt::print(os, "optimizer state: {}{}; state in {}, {}\n\n", state_words(p.optimizer),
             p.options.optimizer_name == "adamw" ? " (AdamW: Adam with decoupled decay)" : "",
             p.options.dtype, counter_words(p.options.counter, p.optimizer));
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
  const ShardStorage& any = p.per_shard.front();
  fmt::print(os,
             "\nDuring a step, not stored: every shard also holds the gathered parameters, {} "
             "B in {} (param_dtype), and its full gradient before the reduce-scatter, {} B in "
             "{} (reduce_dtype).\n",
             any.gathered_bytes, p.options.param_dtype, any.unreduced_gradient_bytes,
             p.options.reduce_dtype);
  fmt::print(os,
             "This is storage, not peak memory: those transient copies, activations and "
             "communication buffers come on top, so a shard's peak memory is larger.\n");
}

}  // namespace sgdc::properties::sharding