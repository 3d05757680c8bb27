#pragma once
// The options of `run` (and of run_main), registered on a CLI11 command: the one place
// that names them.

#include <CLI/CLI.hpp>

#include "sgdc/conformance/protocol/adapter.hpp"
#include "sgdc/conformance/run.hpp"

namespace sgdc::conformance::cli {

/// Adds the options that decide the cases, the reports and the expected verdict.
void add_run_options(CLI::App& cmd, RunSettings& settings);

/// Adds --timeout, --handshake-timeout, --arrays and --ahead, for commands that open
/// adapters.
void add_adapter_options(CLI::App& cmd, protocol::AdapterOptions& options);

}  // namespace sgdc::conformance::cli
