#pragma once
/// \file
/// An implementation behind an out-of-process adapter that speaks protocol v1.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "sgdc/conformance/protocol/adapter_start_failure.hpp"
#include "sgdc/conformance/protocol/array_encoding.hpp"
#include "sgdc/conformance/protocol/child_process.hpp"
#include "sgdc/conformance/protocol/exit_status.hpp"
#include "sgdc/conformance/protocol/messages.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::protocol {

/// Runs an adapter command once and sends it every case over protocol v1. The
/// constructor starts it and does the handshake; step() sends one case (ids 1, 2, ...)
/// and returns its result or rejection. Any fault (exit, crash, no answer in time,
/// anything outside the protocol) stops the adapter and throws ImplementationFault
/// whose message names the case and what went wrong, quoting the adapter's stderr when
/// it is captured, e.g. "case 7: adapter exited with status 1 (stderr: ...)". Every
/// later step() throws at once. Destruction says bye and stops the adapter.
class ProtocolAdapter : public Implementation {
 public:
  /// Starts `command` (via /bin/sh -c) and does the handshake, waiting at most
  /// `handshake_timeout_s` for the hello reply; each later case may take
  /// `case_timeout_s` from sending to answer. With `offer` binary, the hello offers
  /// binary arrays (docs/protocol-extensions.md), used when the adapter accepts them;
  /// with base64 it offers nothing and every array is base64, as in the published v1.
  /// `window`: the most cases sent ahead of their answers on prefetch() hints (1: none),
  /// within the adapter's declared "max_in_flight" (docs/protocol-extensions.md).
  /// Throws std::invalid_argument for a timeout that is not positive and finite, and
  /// AdapterStartFailure when the command cannot be started or the handshake fails.
  ProtocolAdapter(std::string command, double case_timeout_s, double handshake_timeout_s,
                  ChildProcess::Options options = {}, ArrayEncoding offer = ArrayEncoding::binary,
                  int window = default_window);

  /// Cases sent ahead by default, to adapters that accept them.
  static constexpr int default_window = 8;
  ~ProtocolAdapter() override;

  ProtocolAdapter(const ProtocolAdapter&) = delete;
  ProtocolAdapter& operator=(const ProtocolAdapter&) = delete;

  /// What the adapter declared in its hello reply.
  const Declaration& declaration() const override { return declaration_; }

  /// Sends `c` as the next case and returns the answer; a case sent ahead by prefetch()
  /// is not sent again. Throws ImplementationFault (always fatal) when the adapter breaks
  /// or has broken before, also on a case sent ahead.
  StepOutcome step(const Case& c) override;

  /// Sends up to the window of `upcoming` cases ahead, each once, while the pipe to the
  /// adapter has room for them unread; the answers are read in order by later step()s.
  /// A fault while sending is reported by the next step().
  void prefetch(std::span<const Case> upcoming) noexcept override;
  int prefetch_window() const noexcept override { return window_; }

  /// Says bye and stops the adapter (see ChildProcess::stop); returns how it ended
  /// (status 0 for a well-behaved adapter). Idempotent; never throws.
  ExitStatus close() noexcept;

  /// True once a fault has stopped the adapter.
  bool broken() const { return !fault_.empty(); }

  /// The array encoding agreed in the handshake.
  ArrayEncoding array_encoding() const { return arrays_; }

  /// The id of the last case sent (0 before the first).
  std::int64_t last_id() const { return last_id_; }

  /// The last bytes of the adapter's stderr (empty unless captured).
  std::string stderr_tail();

 private:
  using Clock = ChildProcess::Clock;

  // A case sent ahead, and its answer once read.
  struct Sent {
    std::int64_t id;
    Case c;
    std::size_t bytes;  // of the request
    Clock::time_point sent;
    std::optional<StepOutcome> outcome;
  };

  // Writes `request` (its line gets the '\n').
  void send(const Frame& request, const std::string& context, Clock::time_point deadline,
            double timeout_s, bool starting);
  // Reads an answer's line and, with `payload`, the payload bytes it announces.
  Frame receive(const std::string& context, Clock::time_point deadline, double timeout_s,
                bool starting, bool payload);
  // Reads and decodes the answer to case `id`.
  StepOutcome answer(std::int64_t id, const Case& c, const std::string& context,
                     Clock::time_point deadline);
  // Reads the answer of a case sent ahead, unless read already.
  void collect(Sent& s);
  // How the adapter ended if it has (or does within a moment), else `otherwise`.
  std::string ended(const std::string& otherwise);
  [[noreturn]] void fail(const std::string& context, const std::string& what, bool starting);

  std::unique_ptr<ChildProcess> child_;
  Declaration declaration_;
  ArrayEncoding arrays_ = ArrayEncoding::base64;
  int window_ = 1;
  std::deque<Sent> sent_;         // cases sent ahead, in order; answered ones first
  std::size_t unread_bytes_ = 0;  // requests sent ahead and not yet answered
  Clock::time_point last_answer_{};
  double case_timeout_s_;
  std::int64_t last_id_ = 0;
  std::string fault_;
  std::optional<ExitStatus> closed_status_;
};

}  // namespace sgdc::protocol
