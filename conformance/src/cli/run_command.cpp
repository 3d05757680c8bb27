// `sgd-conformance run`: every property against one implementation.
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "sgdc/conformance/run_command.hpp"

namespace sgdc::cli {

namespace {
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

void add_run(CLI::App& app, const char* argv0) {
  auto args = std::make_shared<conformance::RunCommand>();
  CLI::App* cmd = app.add_subcommand("run", "Run every property against one implementation");
  conformance::add_run_options(*cmd, *args, true);
  cmd->callback([args, program = std::string(argv0)] {
    args->replay_prefix = fmt::format("{} run --impl {}", program, shell_quote(args->impl));
    if (args->suite.num_shards)
      args->replay_prefix += fmt::format(" --shards {}", *args->suite.num_shards);
    set_exit_status(conformance::execute(
        *args, [&] { return conformance::open_implementation(args->impl, args->open); }));
  });
}

}  // namespace sgdc::cli
