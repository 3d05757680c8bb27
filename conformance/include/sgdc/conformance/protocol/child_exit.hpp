#pragma once
/// \file
/// How a child process ended.

#include <optional>
#include <string>

namespace sgdc::conformance::protocol {

/// How a child process ended: an exit status, a fatal signal, or unknown (neither set,
/// when it could not be observed).
struct ChildExit {
  std::optional<int> code;    ///< exit status, when it exited
  std::optional<int> signal;  ///< the signal that killed it, when one did

  /// True when it exited with status 0.
  bool success() const { return code == 0; }

  /// "exited with status 1", "exited with status 127 (command not found)",
  /// "was killed by signal 9 (Killed)", or "ended with an unknown status".
  std::string describe() const;
};

}  // namespace sgdc::conformance::protocol