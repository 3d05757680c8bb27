#pragma once
/// \file
/// Opens the implementation a user names: `builtin:NAME` in process, anything else as an
/// adapter command speaking protocol v1.

#include <memory>
#include <string>

#include "sgdc/conformance/protocol/adapter.hpp"
#include "sgdc/properties/implementation.hpp"

namespace CLI {
class App;
}

namespace sgdc::conformance {

/// How adapter commands are run.
struct OpenOptions {
  double case_timeout_s = 60.0;       ///< per case, from sending it to its answer
  double handshake_timeout_s = 60.0;  ///< from start to the hello reply (imports can be slow)
  /// Array encoding offered in the handshake: binary (used if the adapter accepts it) or
  /// base64 only (protocol v1 as published).
  protocol::ArrayEncoding arrays = protocol::ArrayEncoding::binary;
  /// Cases sent to an adapter ahead of their answers, when it accepts them (1: none).
  int window = protocol::ProtocolAdapter::default_window;
};

/// Adds --timeout, --handshake-timeout, --arrays and --ahead to a subcommand that opens
/// implementations.
void add_open_options(CLI::App& cmd, OpenOptions& options);

/// Opens `spec`. Throws std::invalid_argument for an unknown built-in and
/// sgdc::protocol::AdapterStartFailure when an adapter cannot start or fails the handshake.
std::unique_ptr<Implementation> open_implementation(const std::string& spec,
                                                    const OpenOptions& options = {});

}  // namespace sgdc::conformance
