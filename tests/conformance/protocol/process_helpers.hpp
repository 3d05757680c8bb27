#pragma once
// Helpers for tests that run fake adapters: commands, clocks, and process checks.

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace sgdc::conformance::protocol::testing {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// The shell command that runs fake_adapters/fake_adapter.py in `mode`.
inline std::string fake_command(const std::string& mode, const std::string& arg = "") {
  std::string cmd = std::string("'") + SGDC_PYTHON3 + "' '" + SGDC_FAKE_ADAPTERS_DIR +
                    "/fake_adapter.py' " + mode;
  if (!arg.empty()) cmd += " '" + arg + "'";
  return cmd;
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// While alive, makes this process the reaper of orphaned descendants. Containers
/// whose init never reaps orphans would otherwise keep a killed grandchild as a
/// zombie, which still answers kill(pid, 0).
class SubreaperScope {
 public:
  SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  SubreaperScope(const SubreaperScope&) = delete;
  SubreaperScope& operator=(const SubreaperScope&) = delete;
};

/// Waits until process `pid` no longer exists (reaping it if it became our zombie);
/// false if it is still there after `timeout`.
inline bool wait_until_gone(pid_t pid, std::chrono::milliseconds timeout = 3000ms) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    ::waitpid(pid, nullptr, WNOHANG);  // ECHILD unless it was re-parented to us
    if (::kill(pid, 0) < 0 && errno == ESRCH) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

/// Reads a pid that another process writes to `path`, waiting up to `timeout`.
inline pid_t read_pid_file(const std::string& path, std::chrono::milliseconds timeout = 5000ms) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    std::ifstream in(path);
    long pid = 0;
    if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(10ms);
  }
}

}  // namespace sgdc::conformance::protocol::testing