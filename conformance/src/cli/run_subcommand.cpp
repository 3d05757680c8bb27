// `sgd-conformance run`: every property against one implementation.
#include <fmt/format.h>

#include <memory>

#include "run_options.hpp"
#include "sgdc/conformance/open.hpp"
#include "sgdc/conformance/replay_line.hpp"
#include "subcommands.hpp"

namespace sgdc::conformance::cli {

void add_run(CLI::App& app, const char* argv0, int& status) {
  struct Args {
    RunSettings settings;
    protocol::AdapterOptions adapter;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Run every property against one implementation");
  cmd->add_option("--impl", args->settings.impl,
                  "builtin:NAME, or an adapter command speaking the protocol")
      ->capture_default_str();
  add_run_options(*cmd, args->settings);
  add_adapter_options(*cmd, args->adapter);
  cmd->callback([cmd, args, &status, program = std::string(argv0)] {
    apply_run_defaults(*cmd, args->settings);
    args->settings.replay_prefix =
        fmt::format("{} run --impl {}", program, shell_quote(args->settings.impl));
    status = run(args->settings,
                 [&] { return open_implementation(args->settings.impl, args->adapter); });
  });
}

}  // namespace sgdc::conformance::cli
