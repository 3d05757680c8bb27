#pragma once
/// \file
/// An implementation behind an out-of-process adapter that speaks the protocol
/// (docs/spec/protocol.md).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sgdc/conformance/protocol/adapter_start_failure.hpp"
#include "sgdc/conformance/protocol/array_encoding.hpp"
#include "sgdc/conformance/protocol/child_exit.hpp"
#include "sgdc/conformance/protocol/messages.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance::protocol {

class ChildProcess;

/// How an adapter is run and spoken to.
struct AdapterOptions {
  double case_timeout_s = 60.0;  ///< per case, from sending it (or the answer before) to its answer
  double handshake_timeout_s = 60.0;  ///< from start to the hello reply (imports can be slow)
  /// Array encoding offered in the handshake: binary (used if the adapter accepts it) or
  /// base64 only (the protocol's base encoding).
  ArrayEncoding offer = ArrayEncoding::binary;
  /// Most cases sent ahead of their answers, within the adapter's declared max_in_flight
  /// (1: one at a time).
  int window = 8;
  /// Copy the adapter's stderr to this process's stderr as well as keeping its tail.
  bool tee_stderr = false;
};

/// Runs an adapter command once and sends it every case. The constructor starts it and
/// does the handshake; step_batch() sends cases (ids 1, 2, ...) and returns their results
/// or rejections, in order. Cases go out ahead of their answers while the adapter declares
/// it takes them (`max_in_flight`) and the pipe holds them unread; an adapter that declares
/// `max_batch` gets consecutive cases as batches, each sent whole. Any fault (exit, crash,
/// no answer in time, anything outside the protocol) stops the adapter and throws
/// ImplementationFault whose message names the case and what went wrong, quoting the
/// adapter's stderr when it is captured, e.g. "case 7: adapter exited with status 1
/// (stderr: ...)", with the case's position in the batch. Every later step throws at once.
/// Destruction says bye and stops the adapter.
class ProtocolAdapter : public properties::Implementation {
 public:
  /// Starts `command` (via /bin/sh -c) and does the handshake. Throws std::invalid_argument
  /// for a timeout that is not positive and finite, and AdapterStartFailure when the
  /// command cannot be started or the handshake fails.
  explicit ProtocolAdapter(std::string command, const AdapterOptions& options = {});
  ~ProtocolAdapter() override;

  ProtocolAdapter(const ProtocolAdapter&) = delete;
  ProtocolAdapter& operator=(const ProtocolAdapter&) = delete;

  /// What the adapter declared in its hello reply.
  const properties::Declaration& declaration() const override { return declaration_; }

  properties::StepOutcome step(const reference::Case& c) override;
  std::vector<properties::StepOutcome> step_batch(std::span<const reference::Case> cases) override;
  /// The adapter's declared max_batch, when it batches.
  std::size_t preferred_batch() const override {
    return max_batch_ > 1 ? static_cast<std::size_t>(max_batch_) : 0;
  }

  /// Says bye and stops the adapter; returns how it ended (status 0 for a well-behaved
  /// adapter). Idempotent; never throws.
  ChildExit close() noexcept;

  /// True once a fault has stopped the adapter.
  bool broken() const { return !fault_.empty(); }

  /// What the adapter chose in the handshake.
  ArrayEncoding array_encoding() const { return arrays_; }
  int max_in_flight() const { return max_in_flight_; }
  int max_batch() const { return max_batch_; }

  /// The id of the last case sent (0 before the first).
  std::int64_t last_id() const { return last_id_; }

  /// The last bytes of the adapter's stderr (empty unless captured).
  std::string stderr_tail();

 private:
  using Clock = std::chrono::steady_clock;

  // A case sent and not yet answered.
  struct InFlight {
    std::int64_t id;
    std::size_t position;  // in the batch being stepped
    std::size_t bytes;     // of the request
    Clock::time_point sent;
    bool opens_batch;  // the first case of an adapter batch: its answer may take longer
    int batch_size;
  };

  void send(const Frame& request, const std::string& context, Clock::time_point deadline,
            double timeout_s, bool starting, std::optional<std::size_t> position = std::nullopt);
  Frame receive(const std::string& context, Clock::time_point deadline, double timeout_s,
                bool starting, bool payload, std::optional<std::size_t> position = std::nullopt);
  // Reads and decodes the oldest answer in flight.
  properties::StepOutcome answer(const InFlight& f, const reference::Case& c);
  std::string ended(const std::string& otherwise);
  [[noreturn]] void fail(const std::string& context, const std::string& what, bool starting,
                         std::optional<std::size_t> position = std::nullopt);

  std::unique_ptr<ChildProcess> child_;
  properties::Declaration declaration_;
  ArrayEncoding arrays_ = ArrayEncoding::base64;
  int max_in_flight_ = 1;
  int max_batch_ = 1;
  int window_ = 1;
  double case_timeout_s_;
  Clock::time_point last_answer_{};
  std::int64_t last_id_ = 0;
  std::string fault_;
  std::optional<ChildExit> closed_status_;
};

}  // namespace sgdc::conformance::protocol
