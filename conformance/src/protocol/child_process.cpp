#include "protocol/child_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <system_error>

extern char** environ;

namespace sgdc::conformance::protocol {
namespace {

using Clock = ChildProcess::Clock;
using namespace std::chrono_literals;

std::system_error sys_error(int err, const char* what) {
  return std::system_error(err, std::generic_category(), what);
}

void close_fd(int& fd) {
  if (fd >= 0) {
    // Linux closes the descriptor even when close() is interrupted: never retry.
    ::close(fd);
    fd = -1;
  }
}

int ms_until(Clock::time_point deadline) {
  const auto now = Clock::now();
  if (deadline <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

void set_nonblocking(int fd) {
  if (fd < 0) return;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    throw sys_error(errno, "making a pipe non-blocking");
  }
}

// A larger pipe lets a large case or answer (a 128^3 case is 200 KB) go in one write:
// with the default 64 KiB each extra fill is another wake-up of both processes. Best
// effort: Linux only, and the system's limit (/proc/sys/fs/pipe-max-size) may refuse it.
// Returns the pipe's capacity.
std::size_t enlarge_pipe([[maybe_unused]] int fd) {
#if defined(F_SETPIPE_SZ) && defined(F_GETPIPE_SZ)
  if (fd >= 0) {
    (void)::fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    if (const int size = ::fcntl(fd, F_GETPIPE_SZ); size > 0) return static_cast<std::size_t>(size);
  }
#endif
  return 65536;
}

// write() that turns a closed reader into EPIPE without raising SIGPIPE, and without
// changing the process-wide disposition the host program chose: SIGPIPE is blocked
// in this thread for the call and a signal it raised is consumed.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set;
  sigset_t old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  const ssize_t n = ::write(fd, data, size);
  const int err = errno;
  if (n < 0 && err == EPIPE && !was_pending) {
    const timespec zero{};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = err;
  return n;
}

// How `pid` ended, if it has, leaving it unreaped (WNOWAIT) so that its pid, which
// also names its process group, stays reserved until stop() has signalled the group.
std::optional<ChildExit> peek_exit(pid_t pid) {
  siginfo_t info{};
  info.si_pid = 0;
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0) {
    if (errno != EINTR) return ChildExit{};  // ECHILD: reaped elsewhere (SIGCHLD ignored)
  }
  if (info.si_pid == 0) return std::nullopt;
  ChildExit s;
  if (info.si_code == CLD_EXITED) {
    s.code = info.si_status;
  } else {
    s.signal = info.si_status;
  }
  return s;
}

// Whether process group `pgid` still has a member that is not a zombie. kill() also
// finds zombies, which linger where init is slow to reap orphans (some containers);
// on Linux /proc tells them apart, elsewhere any member counts as alive.
bool group_alive(pid_t pgid) {
  if (::kill(-pgid, 0) < 0) return errno == EPERM;
#if defined(__linux__)
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return true;
  bool alive = false;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) state ppid pgrp ...": comm may contain anything, so parse after the
    // last ')'.
    const char* rest = std::strrchr(buf, ')');
    char state = 0;
    long ppid = 0;
    long pgrp = 0;
    if (rest == nullptr || std::sscanf(rest + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3)
      continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') {
      alive = true;
      break;
    }
  }
  ::closedir(proc);
  return alive;
#else
  return true;
#endif
}

// In the forked child: only async-signal-safe calls from here to execve.
[[noreturn]] void exec_child(int in_r, int out_w, int err_w, int report_w, char* const argv[]) {
  ::setpgid(0, 0);
  // Ignored signals stay ignored across exec; the adapter should get the defaults for
  // SIGPIPE (which a host may ignore) and SIGTERM (which stop() relies on).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGPIPE, &dfl, nullptr);
  ::sigaction(SIGTERM, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Move the pipe ends above 2 first, so that dup2 onto 0..2 cannot clobber one that
  // happens to sit there (when the host runs with a closed stdin, say).
  int fds[3] = {in_r, out_w, err_w};
  for (int& fd : fds) {
    if (fd >= 0 && (fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) goto fail;
  }
  for (int i = 0; i < 3; ++i) {
    if (fds[i] >= 0 && ::dup2(fds[i], i) < 0) goto fail;
  }
  ::execve("/bin/sh", argv, environ);
fail:
  const int err = errno;
  [[maybe_unused]] const ssize_t ignored = ::write(report_w, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

ChildProcess::ChildProcess(std::string command) : ChildProcess(std::move(command), Options{}) {}

ChildProcess::ChildProcess(std::string command, Options options)
    : command_(std::move(command)), options_(options) {
  start();
}

ChildProcess::~ChildProcess() {
  try {
    stop();
  } catch (...) {
    // A destructor must not throw; stop() does not, but be sure.
  }
}

void ChildProcess::start() {
  const bool capture = options_.stderr_mode != StderrMode::inherit;
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int report[2] = {-1, -1};
  const auto close_all = [&] {
    for (int* p : {in, out, err, report}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  };
  if (::pipe2(in, O_CLOEXEC) < 0 || ::pipe2(out, O_CLOEXEC) < 0 ||
      (capture && ::pipe2(err, O_CLOEXEC) < 0) || ::pipe2(report, O_CLOEXEC) < 0) {
    const int e = errno;
    close_all();
    throw sys_error(e, "creating pipes for the adapter");
  }
  std::string sh = "sh";
  std::string dash_c = "-c";
  char* argv[] = {sh.data(), dash_c.data(), command_.data(), nullptr};

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    close_all();
    throw sys_error(e, "fork");
  }
  if (pid == 0) exec_child(in[0], out[1], err[1], report[1], argv);

  // Also here, so the group exists before any kill(-pid); fails harmlessly (EACCES)
  // once the child has exec'd.
  ::setpgid(pid, pid);
  pid_ = pid;
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(report[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];

  // The report pipe closes on a successful exec and carries errno on a failed one.
  int child_errno = 0;
  std::size_t got = 0;
  const auto deadline = Clock::now() + 10s;
  while (got < sizeof child_errno) {
    pollfd p{report[0], POLLIN, 0};
    const int r = ::poll(&p, 1, ms_until(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // stuck before exec for 10 s: let the protocol's deadlines judge
    const ssize_t n =
        ::read(report[0], reinterpret_cast<char*>(&child_errno) + got, sizeof child_errno - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close_fd(report[0]);
  if (got == sizeof child_errno) {
    stop(Seconds{0});
    throw sys_error(child_errno, "cannot run /bin/sh");
  }
  try {
    set_nonblocking(stdin_fd_);
    set_nonblocking(stdout_fd_);
    set_nonblocking(stderr_fd_);
    stdin_capacity_ = enlarge_pipe(stdin_fd_);
    enlarge_pipe(stdout_fd_);
  } catch (...) {
    stop(Seconds{0});
    throw;
  }
}

void ChildProcess::drain_stderr() {
  if (stderr_fd_ < 0) return;
  char buf[4096];
  // Bounded, so a child that writes stderr without pause cannot hold us here.
  for (int round = 0; round < 16; ++round) {
    const ssize_t n = ::read(stderr_fd_, buf, sizeof buf);
    if (n > 0) {
      const auto size = static_cast<std::size_t>(n);
      err_ring_.append(buf, size);
      if (err_ring_.size() > options_.stderr_capacity) {
        err_ring_.erase(0, err_ring_.size() - options_.stderr_capacity);
      }
      if (options_.stderr_mode == StderrMode::tee) {
        // Best effort: the copy is a convenience, the ring buffer is what counts.
        [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, buf, size);
      }
      continue;
    }
    if (n == 0) {
      close_fd(stderr_fd_);
      return;
    }
    if (errno == EINTR) continue;
    return;  // EAGAIN, or an error that a later read will report the same way
  }
}

bool ChildProcess::wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {stderr_fd_, POLLIN, 0}};
    const nfds_t count = stderr_fd_ >= 0 ? 2 : 1;
    const int r = ::poll(p, count, ms_until(deadline));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw sys_error(errno, "poll");
    }
    if (count == 2 && p[1].revents != 0) drain_stderr();
    // POLLHUP and POLLERR count as ready: the next read or write reports them.
    if (p[0].revents != 0) return true;
    if (Clock::now() >= deadline) return false;
  }
}

ChildProcess::WriteStatus ChildProcess::write_all(std::string_view data,
                                                  Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < data.size()) {
    if (stdin_fd_ < 0) return WriteStatus::closed;
    const ssize_t n = write_without_sigpipe(stdin_fd_, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(stdin_fd_, POLLOUT, deadline)) return WriteStatus::timed_out;
      continue;
    }
    if (n < 0 && errno == EPIPE) {
      close_fd(stdin_fd_);
      return WriteStatus::closed;
    }
    throw sys_error(errno, "writing to the adapter's stdin");
  }
  return WriteStatus::ok;
}

void ChildProcess::close_stdin() { close_fd(stdin_fd_); }

ChildProcess::Line ChildProcess::read_line(Clock::time_point deadline) {
  for (;;) {
    const auto newline = out_buf_.find('\n', out_scanned_);
    if (newline != std::string::npos && newline > options_.max_line_bytes) {
      return {Line::Status::too_long, {}};
    }
    if (newline != std::string::npos) {
      Line line{Line::Status::ok, out_buf_.substr(0, newline)};
      out_buf_.erase(0, newline + 1);
      out_scanned_ = 0;
      return line;
    }
    out_scanned_ = out_buf_.size();
    if (out_buf_.size() > options_.max_line_bytes) return {Line::Status::too_long, {}};
    char buf[65536];
    const Chunk chunk = read_stdout(buf, sizeof buf, deadline);
    if (chunk.end) return {*chunk.end, {}};
    out_buf_.append(buf, chunk.bytes);
  }
}

ChildProcess::Line ChildProcess::read_bytes(std::size_t n, Clock::time_point deadline) {
  // Read straight into the tail of the buffer: a payload can be megabytes.
  const std::size_t have = std::min(out_buf_.size(), n);
  std::string bytes = out_buf_.substr(0, have);
  out_buf_.erase(0, have);
  out_scanned_ = 0;
  std::size_t done = have;
  bytes.resize(n);
  while (done < n) {
    const Chunk chunk = read_stdout(bytes.data() + done, n - done, deadline);
    if (chunk.end) return {*chunk.end, {}};
    done += chunk.bytes;
  }
  return {Line::Status::ok, std::move(bytes)};
}

ChildProcess::Chunk ChildProcess::read_stdout(char* dst, std::size_t max,
                                              Clock::time_point deadline) {
  if (stdout_fd_ < 0) return {0, Line::Status::closed};
  const ssize_t n = ::read(stdout_fd_, dst, max);
  if (n > 0) {
    napped_ = {};
    return {static_cast<std::size_t>(n), std::nullopt};
  }
  if (n == 0) {
    close_fd(stdout_fd_);
    return {0, Line::Status::closed};
  }
  if (errno == EINTR) return {0, std::nullopt};
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    if (napping_ && napped_ < nap_budget && Clock::now() < deadline) {
      nap(deadline);
      return {0, std::nullopt};
    }
    if (!wait_fd(stdout_fd_, POLLIN, deadline)) return {0, Line::Status::timed_out};
    return {0, std::nullopt};
  }
  throw sys_error(errno, "reading the adapter's stdout");
}

void ChildProcess::set_napping(bool on) {
  napping_ = on;
  napped_ = {};
}

void ChildProcess::nap(Clock::time_point deadline) {
  const auto start = Clock::now();
  const auto slice = std::min<Clock::duration>(nap_slice, deadline - start);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(slice).count();
  const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  // Only stderr is watched: waiting on stdout is what the nap avoids.
  pollfd p{stderr_fd_, POLLIN, 0};
  const int r = ::ppoll(stderr_fd_ >= 0 ? &p : nullptr, stderr_fd_ >= 0 ? 1 : 0, &ts, nullptr);
  if (r < 0 && errno != EINTR) throw sys_error(errno, "ppoll");
  if (r > 0) drain_stderr();
  napped_ += Clock::now() - start;
}

std::string ChildProcess::stderr_tail() {
  drain_stderr();
  return err_ring_;
}

std::optional<ChildExit> ChildProcess::exit_status() {
  if (!status_ && pid_ > 0 && !reaped_) status_ = peek_exit(pid_);
  return status_;
}

std::optional<ChildExit> ChildProcess::wait_for_exit(Clock::time_point deadline) {
  for (;;) {
    if (auto s = exit_status()) return s;
    if (pid_ <= 0 || reaped_) return std::nullopt;
    const auto now = Clock::now();
    if (now >= deadline) return std::nullopt;
    // Sleep in short slices, draining stderr meanwhile: a child blocked on a full
    // stderr pipe could not exit.
    const auto slice = std::min(deadline, now + 5ms);
    pollfd p{stderr_fd_, POLLIN, 0};
    const int r = ::poll(stderr_fd_ >= 0 ? &p : nullptr, stderr_fd_ >= 0 ? 1 : 0, ms_until(slice));
    if (r > 0) drain_stderr();
  }
}

ChildExit ChildProcess::stop() { return stop(options_.stop_grace); }

ChildExit ChildProcess::stop(Seconds grace) {
  if (pid_ <= 0 || reaped_) return status_.value_or(ChildExit{});
  const auto signal_group = [this](int sig) {
    if (::kill(-pid_, sig) < 0 && errno == ESRCH) ::kill(pid_, sig);
  };
  const auto after = [](Seconds s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(s);
  };
  close_stdin();
  // Nothing more is read; a child writing to stdout now gets EPIPE instead of blocking.
  close_fd(stdout_fd_);
  auto status = wait_for_exit(after(grace));
  // Until when the group's other members (the real adapter under the shell, its
  // workers) may take to exit after SIGTERM.
  std::optional<Clock::time_point> term_end;
  if (!status) {
    signal_group(SIGTERM);
    term_end = after(options_.term_grace);
    status = wait_for_exit(*term_end);
  }
  if (!status) {
    signal_group(SIGKILL);
    status = wait_for_exit(after(Seconds{5.0}));
  }
  if (status) {
    int raw = 0;
    while (::waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
    }
    // Whatever the child left behind keeps the group id in use, so while kill() finds
    // the group it is still ours (another group could take the id only after ours
    // empties and the pid counter wraps around).
    if (group_alive(pid_)) {
      if (!term_end) {
        // Leftovers of a child that exited by itself have not been told yet.
        ::kill(-pid_, SIGTERM);
        term_end = after(options_.term_grace);
      }
      while (Clock::now() < *term_end && group_alive(pid_)) {
        pollfd p{stderr_fd_, POLLIN, 0};
        if (::poll(stderr_fd_ >= 0 ? &p : nullptr, stderr_fd_ >= 0 ? 1 : 0, 5) > 0) {
          drain_stderr();
        }
      }
      if (::kill(-pid_, 0) == 0) ::kill(-pid_, SIGKILL);
    }
  } else {
    // Unkillable (stuck in the kernel): give up rather than hang; it stays a zombie.
    status = ChildExit{};
  }
  status_ = status;
  reaped_ = true;
  drain_stderr();
  close_fds();
  return *status_;
}

void ChildProcess::close_fds() {
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
}

}  // namespace sgdc::conformance::protocol