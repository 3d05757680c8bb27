#include "sgdc/conformance/protocol/adapter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "sgdc/conformance/protocol/messages.hpp"
#include "text.hpp"

namespace sgdc::protocol {
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

// Equal sizes and scalars (lr's bits), and `arrays_match` for each array pair of equal size.
template <class ArraysMatch>
bool cases_match(const Case& a, const Case& b, ArraysMatch arrays_match) {
  const auto match = [&](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && (x.empty() || arrays_match(x.data(), y.data(), x.size()));
  };
  return a.n == b.n && a.d == b.d && a.k == b.k && a.num_shards == b.num_shards &&
         a.step == b.step && std::memcmp(&a.lr, &b.lr, sizeof a.lr) == 0 &&
         match(a.kernel, b.kernel) && match(a.bias, b.bias) && match(a.x, b.x) && match(a.y, b.y);
}

// Equal bits in every field (NaN payloads and -0 included).
bool same_case(const Case& a, const Case& b) {
  return cases_match(a, b, [](const float* x, const float* y, std::size_t size) {
    return std::memcmp(x, y, size * sizeof(float)) == 0;
  });
}

// A cheap test that a planned case is the one sent ahead before: sizes, scalars and the
// ends of every array. step() compares in full before it uses an answer, so a wrong
// "same" costs only time.
bool looks_same(const Case& a, const Case& b) {
  return cases_match(a, b, [](const float* x, const float* y, std::size_t size) {
    const std::size_t n = std::min<std::size_t>(size, 8);
    return std::memcmp(x, y, n * sizeof(float)) == 0 &&
           std::memcmp(x + size - n, y + size - n, n * sizeof(float)) == 0;
  });
}

// Bytes a case's arrays take in a request: a lower bound of its size.
std::size_t array_bytes(const Case& c, ArrayEncoding arrays) {
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
constexpr std::size_t quote_limit = 200;

}  // namespace

ProtocolAdapter::ProtocolAdapter(std::string command, double case_timeout_s,
                                 double handshake_timeout_s, ChildProcess::Options options,
                                 ArrayEncoding offer, int window)
    : case_timeout_s_(case_timeout_s) {
  check_timeout("case timeout", case_timeout_s);
  check_timeout("handshake timeout", handshake_timeout_s);
  try {
    child_ = std::make_unique<ChildProcess>(command, options);
  } catch (const std::system_error& e) {
    throw AdapterStartFailure(fmt::format("cannot start adapter '{}': {}",
                                          detail::printable(command, quote_limit), e.what()));
  }
  const bool offer_binary = offer == ArrayEncoding::binary;
  const auto deadline = after(handshake_timeout_s);
  send(Frame{encode_hello(offer_binary), {}}, "handshake", deadline, handshake_timeout_s, true);
  const Frame reply = receive("handshake", deadline, handshake_timeout_s, true, false);
  try {
    Hello hello = decode_hello_reply(reply.line, offer_binary);
    declaration_ = std::move(hello.declaration);
    arrays_ = hello.arrays;
    window_ = std::min(window, hello.max_in_flight);
  } catch (const ProtocolError& e) {
    fail("handshake", e.what(), true);
  }
}

ProtocolAdapter::~ProtocolAdapter() { close(); }

StepOutcome ProtocolAdapter::step(const Case& c) {
  if (broken()) {
    throw ImplementationFault(
        fmt::format("case {}: not run: the adapter was stopped after an earlier fault ({})",
                    last_id_ + 1, fault_));
  }
  if (closed_status_) {
    throw ImplementationFault(
        fmt::format("case {}: not run: the adapter was closed", last_id_ + 1));
  }
  // A case sent ahead: answers are read in order, so those sent before it come first
  // (and are dropped: the plan changed).
  for (std::size_t j = 0; j < sent_.size(); ++j) {
    if (!same_case(sent_[j].c, c)) continue;
    for (; j > 0; --j) {
      collect(sent_.front());
      sent_.pop_front();
    }
    collect(sent_.front());
    StepOutcome outcome = std::move(*sent_.front().outcome);
    sent_.pop_front();
    return outcome;
  }
  // Not sent ahead: its answer comes after theirs, which are kept for later.
  for (Sent& s : sent_) collect(s);
  const std::int64_t id = ++last_id_;
  const std::string context = fmt::format("case {}", id);
  const auto deadline = after(case_timeout_s_);
  send(encode_step(id, c, arrays_), context, deadline, case_timeout_s_, false);
  child_->set_napping(false);  // the only case in flight: its answer is awaited at once
  return answer(id, c, context, deadline);
}

StepOutcome ProtocolAdapter::answer(std::int64_t id, const Case& c, const std::string& context,
                                    Clock::time_point deadline) {
  const Frame frame =
      receive(context, deadline, case_timeout_s_, false, arrays_ == ArrayEncoding::binary);
  last_answer_ = Clock::now();
  try {
    return decode_answer(frame, id, c, declaration_.capabilities, arrays_);
  } catch (const ProtocolError& e) {
    fail(context, e.what(), false);
  }
}

void ProtocolAdapter::collect(Sent& s) {
  if (s.outcome) return;
  // The adapter starts a case sent ahead once it has answered the one before.
  const auto deadline = std::max(s.sent, last_answer_) +
                        std::chrono::duration_cast<Clock::duration>(Seconds{case_timeout_s_});
  // With cases queued behind this one the adapter stays busy after answering it, so
  // noticing the answer a little late costs nothing, and napping spares the adapter's
  // write a wake-up (ChildProcess::set_napping).
  child_->set_napping(&s != &sent_.back());
  s.outcome = answer(s.id, s.c, fmt::format("case {}", s.id), deadline);
  unread_bytes_ -= s.bytes;
}

void ProtocolAdapter::prefetch(std::span<const Case> upcoming) noexcept {
  if (broken() || closed_status_ || window_ <= 1) return;
  try {
    // Answers the plan no longer asks for first.
    while (!sent_.empty() && sent_.front().outcome &&
           (upcoming.empty() || !looks_same(sent_.front().c, upcoming.front()))) {
      sent_.pop_front();
    }
    std::size_t k = 0;
    for (; k < sent_.size(); ++k) {
      // Another plan than the cases already sent: step() sorts it out.
      if (k >= upcoming.size() || !looks_same(sent_[k].c, upcoming[k])) return;
    }
    const std::size_t room = child_->stdin_capacity() / 2;
    for (; k < upcoming.size() && static_cast<int>(sent_.size()) < window_; ++k) {
      // Only what the pipe holds unread: sending ahead must never wait for the adapter.
      // The arrays alone tell a case that cannot fit before it is encoded for nothing.
      if (unread_bytes_ + array_bytes(upcoming[k], arrays_) > room) return;
      Frame request = encode_step(last_id_ + 1, upcoming[k], arrays_);
      const std::size_t bytes = request.line.size() + 1 + request.payload.size();
      if (unread_bytes_ + bytes > room) return;
      // Recorded first: once sent, its answer will come (a failed send clears it all).
      const std::int64_t id = ++last_id_;
      sent_.push_back(Sent{id, upcoming[k], bytes, Clock::now(), std::nullopt});
      unread_bytes_ += bytes;
      send(request, fmt::format("case {}", id), after(case_timeout_s_), case_timeout_s_, false);
    }
  } catch (...) {
    // The fault is recorded (broken()); the next step() reports it.
  }
}

ExitStatus ProtocolAdapter::close() noexcept {
  try {
    if (closed_status_) return *closed_status_;
    if (!child_) return ExitStatus{};
    // Cases sent ahead are answered before bye is read; a fault ends the wait.
    try {
      for (Sent& s : sent_) collect(s);
    } catch (const ImplementationFault&) {
    }
    sent_.clear();
    if (!broken() && child_->running()) {
      // Whether bye arrives or not, stop() follows: closing stdin means the same.
      child_->write_all(encode_bye() + "\n", after(bye_write_s));
    }
    closed_status_ = child_->stop();
    return *closed_status_;
  } catch (...) {
    closed_status_ = ExitStatus{};
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
                           Clock::time_point deadline, double timeout_s, bool starting) {
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
             starting);
      case ChildProcess::WriteStatus::closed:
        fail(context, ended("adapter closed its stdin"), starting);
    }
  } catch (const std::system_error& e) {
    fail(context, e.what(), starting);
  }
  fail(context, "unexpected state writing the request", starting);
}

Frame ProtocolAdapter::receive(const std::string& context, Clock::time_point deadline,
                               double timeout_s, bool starting, bool payload) {
  try {
    ChildProcess::Line line = child_->read_line(deadline);
    switch (line.status) {
      case ChildProcess::Line::Status::ok: {
        if (!payload) return Frame{std::move(line.text), {}};
        std::size_t size = 0;
        try {
          size = payload_size(line.text, child_->options().max_line_bytes);
        } catch (const ProtocolError& e) {
          fail(context, e.what(), starting);
        }
        ChildProcess::Line bytes = child_->read_bytes(size, deadline);
        if (bytes.status == ChildProcess::Line::Status::ok) {
          return Frame{std::move(line.text), std::move(bytes.text)};
        }
        if (bytes.status == ChildProcess::Line::Status::timed_out) {
          fail(context,
               fmt::format("the answer's {}-byte payload did not arrive within {:g} s", size,
                           timeout_s),
               starting);
        }
        fail(context,
             ended("adapter closed its stdout") +
                 fmt::format(" before the end of the answer's {}-byte payload", size),
             starting);
      }
      case ChildProcess::Line::Status::timed_out:
        // An adapter that exited while a grandchild holds its stdout open lands here.
        if (const auto s = child_->exit_status())
          fail(context, "adapter " + s->describe(), starting);
        fail(context, fmt::format("no answer within {:g} s", timeout_s), starting);
      case ChildProcess::Line::Status::closed: {
        std::string what = ended("adapter closed its stdout");
        if (const auto& rest = child_->unterminated_output(); !rest.empty()) {
          what += fmt::format(" after writing an unterminated line '{}'",
                              detail::printable(rest, quote_limit));
        }
        fail(context, what, starting);
      }
      case ChildProcess::Line::Status::too_long:
        fail(context,
             fmt::format("answer is longer than {} bytes", child_->options().max_line_bytes),
             starting);
    }
  } catch (const std::system_error& e) {
    fail(context, e.what(), starting);
  }
  fail(context, "unexpected state reading the answer", starting);
}

void ProtocolAdapter::fail(const std::string& context, const std::string& what, bool starting) {
  sent_.clear();
  unread_bytes_ = 0;
  std::string message = fmt::format("{}: {}", context, what);
  // Taken before stop(), which would report its own SIGTERM for a live adapter.
  const std::optional<ExitStatus> ended_by_itself = child_ ? child_->exit_status() : std::nullopt;
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
  throw ImplementationFault(message, true);
}

}  // namespace sgdc::protocol
