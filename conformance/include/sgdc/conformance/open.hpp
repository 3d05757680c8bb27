#pragma once
/// \file
/// Opens the implementation a user names: `builtin:NAME` in process, anything else as an
/// adapter command speaking the protocol.

#include <memory>
#include <string>

#include "sgdc/conformance/protocol/adapter.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance {

/// Opens `spec`. Throws std::invalid_argument for an unknown built-in and
/// protocol::AdapterStartFailure when an adapter cannot start or fails the handshake.
std::unique_ptr<properties::Implementation> open_implementation(
    const std::string& spec, const protocol::AdapterOptions& options = {});

}  // namespace sgdc::conformance
