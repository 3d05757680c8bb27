#pragma once
// The subcommands of sgd-conformance. Each registers itself on the app; the one that runs
// writes its exit status to `status`.

#include <CLI/CLI.hpp>

namespace sgdc::conformance::cli {

void add_run(CLI::App& app, const char* argv0, int& status);
void add_mutants(CLI::App& app, int& status);
void add_list(CLI::App& app, int& status);
void add_storage(CLI::App& app, int& status);
void add_fixtures(CLI::App& app, int& status);

}  // namespace sgdc::conformance::cli
