#pragma once
/// \file
/// The fault of an adapter that never got going.

#include <optional>
#include <string>

#include "sgdc/conformance/protocol/child_exit.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance::protocol {

/// An adapter could not be started or failed the handshake (command missing, wrong
/// protocol, malformed or no hello reply), as opposed to breaking mid-run: a CLI
/// maps it to a setup error rather than a conformance failure. Always fatal.
class AdapterStartFailure : public properties::ImplementationFault {
 public:
  explicit AdapterStartFailure(const std::string& what,
                               std::optional<ChildExit> status = std::nullopt)
      : properties::ImplementationFault(what), status_(status) {}

  /// How the adapter ended, when it ended by itself during the handshake (e.g. status
  /// 127 for a command not found, or 77, "skipped", from a launcher script that lacks
  /// its environment); empty when it was stopped by the suite or never started.
  const std::optional<ChildExit>& exit_status() const { return status_; }

 private:
  std::optional<ChildExit> status_;
};

}  // namespace sgdc::conformance::protocol