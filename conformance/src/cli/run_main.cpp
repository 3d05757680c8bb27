#include "sgdc/conformance/run_main.hpp"

#include <CLI/CLI.hpp>

#include "run_options.hpp"
#include "sgdc/conformance/replay_line.hpp"

namespace sgdc::conformance {

int run_main(int argc, char** argv,
             std::function<std::unique_ptr<properties::Implementation>()> make) {
  CLI::App app{"Conformance of one SGD step implementation (sgd-conformance)"};
  RunSettings settings;
  cli::add_run_options(app, settings);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : could_not_test_status;
  }
  cli::apply_run_defaults(app, settings);
  settings.impl = argv[0];
  settings.replay_prefix = shell_quote(argv[0]);
  return run(std::move(settings), make);
}

}  // namespace sgdc::conformance
