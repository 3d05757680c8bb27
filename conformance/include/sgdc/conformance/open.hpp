#pragma once
/// \file
/// Opens the implementation a user names: `builtin:NAME` in process, anything else as an
/// adapter command speaking protocol v1.

#include <memory>
#include <string>

#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance {

/// Timeouts for adapter commands.
struct OpenOptions {
  double case_timeout_s = 60.0;       ///< per case, from sending it to its answer
  double handshake_timeout_s = 60.0;  ///< from start to the hello reply (imports can be slow)
};

/// Opens `spec`. Throws std::invalid_argument for an unknown built-in and
/// sgdc::protocol::AdapterStartFailure when an adapter cannot start or fails the handshake.
std::unique_ptr<Implementation> open_implementation(const std::string& spec,
                                                    const OpenOptions& options = {});

}  // namespace sgdc::conformance
