// sgd-conformance: the command-line entry point. Subcommands live in their own files.
#include <CLI/CLI.hpp>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sgd-conformance: does your SGD step compute the right numbers?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", SGDC_VERSION);
  sgdc::cli::add_run(app, argv[0]);
  sgdc::cli::add_mutants(app);
  sgdc::cli::add_list(app);
  sgdc::cli::add_storage(app);
  sgdc::cli::add_fixtures(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors mean nothing could be tested.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return sgdc::cli::exit_status();
}
