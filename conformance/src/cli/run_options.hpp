#pragma once
// The options of `run` (and of run_main), registered on a CLI11 command: the one place
// that names them.

#include <CLI/CLI.hpp>

#include "sgdc/conformance/protocol/adapter.hpp"
#include "sgdc/conformance/run.hpp"

namespace sgdc::conformance::cli {

/// Cases per property at a user's own shapes (`--shape`) unless --cases says otherwise.
inline constexpr int exact_shape_cases = 10;

/// Adds the options that decide the cases, the reports and the expected verdict. Call
/// apply_run_defaults after parsing.
void add_run_options(CLI::App& cmd, RunSettings& settings);

/// The defaults that depend on other options (fewer cases at exact shapes), once `cmd`
/// is parsed.
void apply_run_defaults(const CLI::App& cmd, RunSettings& settings);

/// Adds --timeout, --handshake-timeout, --arrays and --ahead, for commands that open
/// adapters.
void add_adapter_options(CLI::App& cmd, protocol::AdapterOptions& options);

}  // namespace sgdc::conformance::cli
