#include "sgdc/conformance/protocol/child_exit.hpp"

#include <fmt/format.h>

#include <cstring>

namespace sgdc::conformance::protocol {

std::string ChildExit::describe() const {
  if (code) {
    // The shell's conventions for a command it could not run.
    if (*code == 127) return "exited with status 127 (command not found)";
    if (*code == 126) return "exited with status 126 (command not executable)";
    return fmt::format("exited with status {}", *code);
  }
  if (signal) {
    // strsignal is not thread-safe; sigdescr_np is, where glibc provides it.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char* name = sigdescr_np(*signal);
#else
    const char* name = nullptr;
#endif
    if (name != nullptr) return fmt::format("was killed by signal {} ({})", *signal, name);
    return fmt::format("was killed by signal {}", *signal);
  }
  return "ended with an unknown status";
}

}  // namespace sgdc::conformance::protocol