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
  std::string dtype = "float32", optimizer = "sgd", placement = "flat";
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
  cmd->add_option("--dtype", args->dtype, "Parameter dtype")
      ->check(CLI::IsMember(
          {"float32", "float64", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"}))
      ->capture_default_str();
  cmd->add_option("--optimizer", args->optimizer, "Optimizer whose state is counted")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}))
      ->capture_default_str();
  cmd->add_option("--placement", args->placement,
                  "How the parameters are split: flat (numpy.array_split of the flat vector), "
                  "output_chunks (torch.chunk of K: FSDP2) or input_chunks")
      ->check(CLI::IsMember({"flat", "output_chunks", "input_chunks"}))
      ->capture_default_str();
  cmd->callback([args, &status] {
    try {
      const auto plan = properties::sharding::plan_storage(
          args->d, args->k, args->shards, args->dtype,
          properties::sharding::parse_optimizer(args->optimizer),
          *properties::sharding::parse_placement_rule(args->placement));
      properties::sharding::write_storage_report(std::cout, plan);
      status = 0;
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "sgd-conformance storage: {}\n", e.what());
      status = 2;
    }
  });
}

}  // namespace sgdc::conformance::cli