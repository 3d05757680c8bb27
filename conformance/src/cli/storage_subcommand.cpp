// `sgd-conformance storage`: per-shard storage of parameters, gradients and optimizer state.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <stdexcept>

#include "sgdc/properties/sharding/storage.hpp"
#include "subcommands.hpp"

namespace sgdc::conformance::cli {

namespace {
struct StorageArgs {
  int d = 0, k = 0, shards = 1;
  std::string dtype = "float32", param_dtype, reduce_dtype, optimizer = "sgd", placement = "flat",
              counter = "shard";
};
}  // namespace

void add_storage(CLI::App& app, int& status) {
  auto args = std::make_shared<StorageArgs>();
  CLI::App* cmd = app.add_subcommand(
      "storage",
      "Per-shard storage of parameters, gradients and optimizer state (not peak memory)");
  cmd->add_option("--d", args->d, "Input features D")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--k", args->k, "Output features K")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--shards", args->shards, "Shards S")->required()->check(CLI::PositiveNumber);
  namespace sharding = properties::sharding;
  cmd->add_option("--dtype", args->dtype,
                  "Stored parameters, gradients and optimizer state (master weights)")
      ->check(CLI::IsMember(sharding::dtype_names()))
      ->capture_default_str();
  cmd->add_option("--param-dtype", args->param_dtype,
                  "The gathered compute copy (MixedPrecisionPolicy's param_dtype); default: "
                  "--dtype")
      ->check(CLI::IsMember(sharding::dtype_names()));
  cmd->add_option("--reduce-dtype", args->reduce_dtype,
                  "The gradient's reduction (MixedPrecisionPolicy's reduce_dtype); default: "
                  "--param-dtype")
      ->check(CLI::IsMember(sharding::dtype_names()));
  cmd->add_option("--optimizer", args->optimizer, "Optimizer whose state is counted")
      ->check(CLI::IsMember(sharding::optimizer_names()))
      ->capture_default_str();
  cmd->add_option("--counter", args->counter,
                  "Where the step counter lives: shard (4 bytes each), torch (a float32 step "
                  "per parameter), optax (an int32 count), nnx (nnx.Optimizer's step too)")
      ->check(CLI::IsMember(sharding::counter_layout_names()))
      ->capture_default_str();
  cmd->add_option("--placement", args->placement,
                  "Placement rule: flat, output_chunks (FSDP2's Shard(0)) or input_chunks")
      ->check(CLI::IsMember({"flat", "output_chunks", "input_chunks"}))
      ->capture_default_str();
  cmd->callback([args, &status] {
    try {
      properties::sharding::StorageOptions options;
      options.dtype = args->dtype;
      options.param_dtype = args->param_dtype;
      options.reduce_dtype = args->reduce_dtype;
      options.optimizer_name = args->optimizer;
      options.rule = *properties::sharding::parse_placement_rule(args->placement);
      options.counter = properties::sharding::parse_counter_layout(args->counter);
      const auto plan = properties::sharding::plan_storage(args->d, args->k, args->shards, options);
      properties::sharding::write_storage_report(std::cout, plan);
      status = 0;
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "sgd-conformance storage: {}\n", e.what());
      status = 2;
    }
  });
}

}  // namespace sgdc::conformance::cli