#pragma once
// The subcommands of sgd-conformance; each registers itself on the app and records
// the exit status of the one that ran.

#include <CLI/CLI.hpp>

namespace sgdc::cli {

void add_run(CLI::App& app, const char* argv0);
void add_mutants(CLI::App& app);
void add_list(CLI::App& app);
void add_storage(CLI::App& app);
void add_fixtures(CLI::App& app);

/// Exit status of the subcommand that ran.
int exit_status();
void set_exit_status(int status);

}  // namespace sgdc::cli
