#pragma once
/// \file
/// A child process driven over pipes, for adapters in any language (POSIX only).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "sgdc/conformance/protocol/child_exit.hpp"

namespace sgdc::conformance::protocol {

/// A command run as `/bin/sh -c COMMAND` (so "python3 adapter.py --flag" works), in its
/// own process group, with pipes on its stdin and stdout. Nothing blocks without a
/// deadline: writes and reads take one, and stopping escalates from closing stdin to
/// SIGTERM and SIGKILL of the whole group. A child that dies never raises SIGPIPE in
/// this process: writes report it instead. Not thread-safe; one owner at a time.
class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;
  using Seconds = std::chrono::duration<double>;

  /// Where the child's stderr goes.
  enum class StderrMode {
    capture,  ///< into a ring buffer holding the last `stderr_capacity` bytes
    tee,      ///< into the ring buffer and copied to this process's stderr
    inherit,  ///< straight to this process's stderr; nothing is kept
  };

  /// How the child is run and stopped.
  struct Options {
    StderrMode stderr_mode = StderrMode::capture;
    std::size_t stderr_capacity = 4096;      ///< bytes of stderr kept (capture, tee)
    std::size_t max_line_bytes = 256 << 20;  ///< longest stdout line read_line accepts
                                             ///< (bounds memory against a runaway child)
    Seconds stop_grace{2.0};  ///< stop(): wait this long after closing stdin, then SIGTERM
    Seconds term_grace{1.0};  ///< stop(): wait this long after SIGTERM, then SIGKILL
  };

  /// What write_all achieved.
  enum class WriteStatus {
    ok,         ///< everything was written
    timed_out,  ///< the child did not take it all before the deadline
    closed,     ///< the child's stdin is closed (it exited or closed it)
  };

  /// What read_line found.
  struct Line {
    enum class Status {
      ok,         ///< `text` is a complete line, without its '\n' (read_bytes: the bytes)
      timed_out,  ///< no complete line (all the bytes) before the deadline
      closed,     ///< the child closed its stdout (or exited) before that
      too_long,   ///< a line longer than Options::max_line_bytes; the stream is then unusable
    };
    Status status = Status::ok;
    std::string text;
  };

  /// Starts `/bin/sh -c command`. Throws std::system_error when the pipes or the
  /// process cannot be created or /bin/sh cannot be executed. A command that the shell
  /// cannot find starts fine and exits with status 127.
  explicit ChildProcess(std::string command);
  ChildProcess(std::string command, Options options);
  /// Stops the child (see stop()); never throws.
  ~ChildProcess();

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// The command as given.
  const std::string& command() const { return command_; }
  /// The options it runs with.
  const Options& options() const { return options_; }
  /// The child's process id, which is also its process group id.
  pid_t pid() const { return pid_; }

  /// Writes all of `data` to the child's stdin, waiting for room until `deadline`.
  /// Throws std::system_error on unexpected I/O errors.
  WriteStatus write_all(std::string_view data, Clock::time_point deadline);

  /// Bytes the pipe to the child's stdin holds unread before a write must wait (64 KiB
  /// unless the system allowed a larger pipe).
  std::size_t stdin_capacity() const { return stdin_capacity_; }

  /// Closes the child's stdin (its end of input). Idempotent.
  void close_stdin();

  /// Reads the next line from the child's stdout, waiting until `deadline`. Throws
  /// std::system_error on unexpected I/O errors.
  Line read_line(Clock::time_point deadline);

  /// Reads exactly `n` bytes from the child's stdout (what follows a line, for
  /// instance), waiting until `deadline`: status ok with `text` holding them, or
  /// timed_out or closed with what arrived dropped.
  Line read_bytes(std::size_t n, Clock::time_point deadline);

  /// While on, a read that finds the child's stdout empty first sleeps in short slices
  /// (`nap_slice`, up to `nap_budget` in all since the last byte arrived) and looks
  /// again, before it waits on the pipe. For a child that has more work queued: its
  /// write then finds no reader waiting and wakes nobody, which on a virtual machine
  /// costs the writer more than the bytes (a wake-up across CPUs is an interrupt sent
  /// through the hypervisor); the reader, here, pays for its own timer instead, and
  /// notices the output up to a slice late. Off by default.
  void set_napping(bool on);
  static constexpr std::chrono::microseconds nap_slice{100};
  static constexpr std::chrono::microseconds nap_budget{2000};

  /// Output after the last complete line, kept when stdout ends without a '\n'.
  const std::string& unterminated_output() const { return out_buf_; }

  /// The last bytes the child wrote to stderr (empty with StderrMode::inherit).
  std::string stderr_tail();

  /// How the child ended, if it has; does not wait.
  std::optional<ChildExit> exit_status();

  /// Waits until the child ends or `deadline` passes; how it ended, if it has.
  std::optional<ChildExit> wait_for_exit(Clock::time_point deadline);

  /// Stops the child: closes its stdin and stdout, waits `grace` for it to exit
  /// (Options::stop_grace by default), then sends SIGTERM to its process group and,
  /// after Options::term_grace, SIGKILL. Group members that outlive the child (the
  /// program under the shell, grandchildren) get SIGTERM too, if they have not yet,
  /// and term_grace from it before SIGKILL. Reaps the child and closes the pipes.
  /// Returns how the child (the shell, which passes on its command's exit status)
  /// ended. Idempotent: later calls return the same status. Never blocks longer than
  /// the graces plus a few seconds.
  ChildExit stop();
  ChildExit stop(Seconds grace);

  /// True until stop() has run.
  bool running() const { return pid_ > 0 && !reaped_; }

 private:
  void start();
  void drain_stderr();
  bool wait_fd(int fd, short events, Clock::time_point deadline);
  // One read from stdout into `dst`, waiting for data until `deadline`: the bytes read
  // (0 after an interruption or a wait: try again), or the status that ends the reading.
  struct Chunk {
    std::size_t bytes;
    std::optional<Line::Status> end;
  };
  Chunk read_stdout(char* dst, std::size_t max, Clock::time_point deadline);
  // One slice of napping, bounded by `deadline`, draining stderr meanwhile.
  void nap(Clock::time_point deadline);
  void close_fds();

  std::string command_;
  Options options_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int stdin_fd_ = -1;
  std::size_t stdin_capacity_ = 65536;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::string out_buf_;
  std::size_t out_scanned_ = 0;  // bytes of out_buf_ known to hold no '\n'
  bool napping_ = false;
  Clock::duration napped_{};  // slept since stdout last gave bytes
  std::string err_ring_;
  std::optional<ChildExit> status_;
};

}  // namespace sgdc::conformance::protocol