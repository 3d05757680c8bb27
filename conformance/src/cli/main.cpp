// sgd-conformance: the command-line entry point. Subcommands live in their own files.
#include <CLI/CLI.hpp>

#include "sgdc/conformance/exit_status.hpp"
#include "subcommands.hpp"

int main(int argc, char** argv) {
  namespace cli = sgdc::conformance::cli;
  CLI::App app{"sgd-conformance: does your SGD step compute the right numbers?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", SGDC_VERSION);
  int status = 0;
  cli::add_run(app, argv[0], status);
  cli::add_mutants(app, status);
  cli::add_list(app, status);
  cli::add_storage(app, status);
  cli::add_fixtures(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors mean nothing could be tested.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : sgdc::conformance::could_not_test_status;
  }
  return status;
}
