#include "sgdc/conformance/protocol/adapter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "protocol/child_process.hpp"
#include "sgdc/conformance/protocol/messages.hpp"
#include "text.hpp"

namespace sgdc::conformance::protocol {
namespace {

using Clock = ChildProcess::Clock;
using Seconds = ChildProcess::Seconds;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(Seconds{seconds});
}

void check_timeout(const char* name, double seconds) {
  if (!(std::isfinite(seconds) && seconds > 0)) {
    throw std::invalid_argument(
        fmt::format("{} must be a positive number of seconds, got {}", name, seconds));
  }
}

// Bytes a case's arrays take in a request: a lower bound of its size.
std::size_t array_bytes(const reference::Case& c, ArrayEncoding arrays) {
  const std::size_t raw = 4 * (1 + c.kernel.size() + c.bias.size() + c.x.size() + c.y.size());
  return arrays == ArrayEncoding::binary ? raw : raw / 3 * 4;
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  s.erase(0, first);
  return s;
}

// How long to wait for the exit status of an adapter that closed its pipes: it is
// normally about to exit, and the status explains more than "closed its stdout".
constexpr double exit_wait_s = 1.0;
constexpr double bye_write_s = 1.0;

}  // namespace

ProtocolAdapter::ProtocolAdapter(std::string command, const AdapterOptions& options)
    : case_timeout_s_(options.case_timeout_s) {
  check_timeout("case timeout", options.case_timeout_s);
  check_timeout("handshake timeout", options.handshake_timeout_s);
  ChildProcess::Options process;
  if (options.tee_stderr) process.stderr_mode = ChildProcess::StderrMode::tee;
  try {
    child_ = std::make_unique<ChildProcess>(command, process);
  } catch (const std::system_error& e) {
    throw AdapterStartFailure(fmt::format("cannot start adapter '{}': {}",
                                          detail::printable(command, detail::quote_limit),
                                          e.what()));
  }
  const bool offer_binary = options.offer == ArrayEncoding::binary;
  const auto deadline = after(options.handshake_timeout_s);
  send(Frame{encode_hello(offer_binary), {}}, "handshake", deadline, options.handshake_timeout_s,
       true);
  const Frame reply = receive("handshake", deadline, options.handshake_timeout_s, true, false);
  try {
    Hello hello = decode_hello_reply(reply.line, offer_binary);
    declaration_ = std::move(hello.declaration);
    arrays_ = hello.arrays;
    max_in_flight_ = hello.max_in_flight;
    max_batch_ = hello.max_batch;
    window_ = std::max(1, std::min(options.window, hello.max_in_flight));
  } catch (const ProtocolError& e) {
    fail("handshake", e.what(), true);
  }
}

ProtocolAdapter::~ProtocolAdapter() { close(); }

properties::StepOutcome ProtocolAdapter::step(const reference::Case& c) {
  return std::move(step_batch(std::span<const reference::Case>(&c, 1))[0]);
}

std::vector<properties::StepOutcome> ProtocolAdapter::step_batch(
    std::span<const reference::Case> cases) {
  if (broken()) {
    throw properties::ImplementationFault(
        fmt::format("case {}: not run: the adapter was stopped after an earlier fault ({})",
                    last_id_ + 1, fault_),
        0);
  }
  if (closed_status_) {
    throw properties::ImplementationFault(
        fmt::format("case {}: not run: the adapter was closed", last_id_ + 1), 0);
  }
  // Consecutive cases go out as adapter batches of up to max_batch, each sent whole: the
  // adapter reads a whole batch before it answers any of it.
  const std::size_t group = static_cast<std::size_t>(std::max(1, max_batch_));
  const std::size_t room = child_->stdin_capacity() / 2;
  std::vector<properties::StepOutcome> out(cases.size());
  std::deque<InFlight> in_flight;
  std::size_t unread = 0;  // request bytes sent and not yet answered
  std::size_t next = 0;    // the next case to send
  std::size_t done = 0;
  try {
    for (; done < cases.size(); ++done) {
      while (next < cases.size()) {
        const std::size_t begin = next / group * group;
        const std::size_t size = std::min(group, cases.size() - begin);
        if (next == begin && !in_flight.empty()) {
          // Another batch (or case) ahead of the answers: only what the adapter takes ahead
          // and the pipe holds unread, so that sending never waits on the adapter.
          std::size_t bytes = 0;
          for (std::size_t i = begin; i < begin + size; ++i)
            bytes += array_bytes(cases[i], arrays_);
          if (in_flight.size() + size > static_cast<std::size_t>(window_) || unread + bytes > room)
            break;
        }
        std::optional<BatchPosition> position;
        if (max_batch_ > 1)
          position = BatchPosition{static_cast<int>(next - begin), static_cast<int>(size)};
        Frame request = encode_step(last_id_ + 1, cases[next], arrays_, position);
        const std::size_t bytes = request.line.size() + 1 + request.payload.size();
        const std::int64_t id = ++last_id_;
        in_flight.push_back(
            InFlight{id, next, bytes, Clock::now(), next == begin, static_cast<int>(size)});
        unread += bytes;
        send(request, fmt::format("case {}", id),
             after(case_timeout_s_ * static_cast<double>(size)), case_timeout_s_, false, next);
        ++next;
      }
      const InFlight f = in_flight.front();
      // With cases queued behind this one the adapter stays busy after answering it, so
      // noticing the answer a little late costs nothing, and napping spares the adapter's
      // write a wake-up (ChildProcess::set_napping).
      child_->set_napping(in_flight.size() > 1);
      out[f.position] = answer(f, cases[f.position]);
      in_flight.pop_front();
      unread -= f.bytes;
    }
  } catch (const properties::ImplementationFault& f) {
    // The answers read before the fault are kept.
    out.resize(done);
    throw properties::ImplementationFault(f.what(), f.position(), std::move(out));
  }
  return out;
}

properties::StepOutcome ProtocolAdapter::answer(const InFlight& f, const reference::Case& c) {
  // The adapter starts a case once it has answered the one before (a batch, once it has
  // read all of it: its first answer may take the whole batch's time).
  const double allowed = case_timeout_s_ * (f.opens_batch ? f.batch_size : 1);
  const auto deadline = std::max(f.sent, last_answer_) +
                        std::chrono::duration_cast<Clock::duration>(Seconds{allowed});
  const std::string context = fmt::format("case {}", f.id);
  const Frame frame =
      receive(context, deadline, allowed, false, arrays_ == ArrayEncoding::binary, f.position);
  last_answer_ = Clock::now();
  try {
    return decode_answer(frame, f.id, c, declaration_.capabilities, arrays_);
  } catch (const ProtocolError& e) {
    fail(context, e.what(), false, f.position);
  }
}

ChildExit ProtocolAdapter::close() noexcept {
  try {
    if (closed_status_) return *closed_status_;
    if (!child_) return ChildExit{};
    if (!broken() && child_->running()) {
      // Whether bye arrives or not, stop() follows: closing stdin means the same.
      child_->write_all(encode_bye() + "\n", after(bye_write_s));
    }
    closed_status_ = child_->stop();
    return *closed_status_;
  } catch (...) {
    closed_status_ = ChildExit{};
    return *closed_status_;
  }
}

std::string ProtocolAdapter::stderr_tail() {
  return child_ ? child_->stderr_tail() : std::string();
}

std::string ProtocolAdapter::ended(const std::string& otherwise) {
  if (const auto s = child_->wait_for_exit(after(exit_wait_s))) return "adapter " + s->describe();
  return otherwise;
}

void ProtocolAdapter::send(const Frame& request, const std::string& context,
                           Clock::time_point deadline, double timeout_s, bool starting,
                           std::optional<std::size_t> position) {
  try {
    // One buffer, so that a small message goes out in one write.
    std::string bytes;
    bytes.reserve(request.line.size() + 1 + request.payload.size());
    bytes.append(request.line).append(1, '\n').append(request.payload);
    switch (child_->write_all(bytes, deadline)) {
      case ChildProcess::WriteStatus::ok:
        return;
      case ChildProcess::WriteStatus::timed_out:
        fail(context, fmt::format("adapter did not read its input within {:g} s", timeout_s),
             starting, position);
      case ChildProcess::WriteStatus::closed:
        fail(context, ended("adapter closed its stdin"), starting, position);
    }
  } catch (const std::system_error& e) {
    fail(context, e.what(), starting, position);
  }
  fail(context, "unexpected state writing the request", starting, position);
}

Frame ProtocolAdapter::receive(const std::string& context, Clock::time_point deadline,
                               double timeout_s, bool starting, bool payload,
                               std::optional<std::size_t> position) {
  try {
    ChildProcess::Line line = child_->read_line(deadline);
    switch (line.status) {
      case ChildProcess::Line::Status::ok: {
        if (!payload) return Frame{std::move(line.text), {}};
        std::size_t size = 0;
        try {
          size = payload_size(line.text, child_->options().max_line_bytes);
        } catch (const ProtocolError& e) {
          fail(context, e.what(), starting, position);
        }
        ChildProcess::Line bytes = child_->read_bytes(size, deadline);
        if (bytes.status == ChildProcess::Line::Status::ok) {
          return Frame{std::move(line.text), std::move(bytes.text)};
        }
        if (bytes.status == ChildProcess::Line::Status::timed_out) {
          fail(context,
               fmt::format("the answer's {}-byte payload did not arrive within {:g} s", size,
                           timeout_s),
               starting, position);
        }
        fail(context,
             ended("adapter closed its stdout") +
                 fmt::format(" before the end of the answer's {}-byte payload", size),
             starting, position);
      }
      case ChildProcess::Line::Status::timed_out:
        // An adapter that exited while a grandchild holds its stdout open lands here.
        if (const auto s = child_->exit_status())
          fail(context, "adapter " + s->describe(), starting, position);
        fail(context, fmt::format("no answer within {:g} s", timeout_s), starting, position);
      case ChildProcess::Line::Status::closed: {
        std::string what = ended("adapter closed its stdout");
        if (const auto& rest = child_->unterminated_output(); !rest.empty()) {
          what += fmt::format(" after writing an unterminated line '{}'",
                              detail::printable(rest, detail::quote_limit));
        }
        fail(context, what, starting, position);
      }
      case ChildProcess::Line::Status::too_long:
        fail(context,
             fmt::format("answer is longer than {} bytes", child_->options().max_line_bytes),
             starting, position);
    }
  } catch (const std::system_error& e) {
    fail(context, e.what(), starting, position);
  }
  fail(context, "unexpected state reading the answer", starting, position);
}

void ProtocolAdapter::fail(const std::string& context, const std::string& what, bool starting,
                           std::optional<std::size_t> position) {
  std::string message = fmt::format("{}: {}", context, what);
  // Taken before stop(), which would report its own SIGTERM for a live adapter.
  const std::optional<ChildExit> ended_by_itself = child_ ? child_->exit_status() : std::nullopt;
  if (child_) {
    // Stop first: an exiting adapter's last words are then all in the ring buffer.
    child_->stop(Seconds{0});
    const std::string tail = trim(child_->stderr_tail());
    if (!tail.empty()) {
      message += fmt::format(" (stderr: {})", detail::printable(tail, tail.size(), true));
    }
  }
  fault_ = message;
  if (starting) throw AdapterStartFailure(message, ended_by_itself);
  throw properties::ImplementationFault(message, position);
}

}  // namespace sgdc::conformance::protocol