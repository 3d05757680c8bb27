#pragma once
/// \file
/// What the properties test: any implementation of the step, in process or behind an
/// adapter, with what it declares about itself.

#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc {

/// Optional outputs and behaviours an implementation promises.
struct Capabilities {
  bool grads = false;         ///< reports grad_kernel and grad_bias
  bool step_counter = false;  ///< reports the step counter after the update
  bool shard_layout = false;  ///< reports which parameter elements each shard stores
  /// Really splits the work over num_shards, so results may differ across shard counts
  /// within the bound; an unsharded implementation must give identical bits.
  bool sharded = false;
  /// The most shards the implementation can run (e.g. its device count); 0: no limit.
  /// Properties that choose shard counts themselves stay within it.
  int max_shards = 0;
};

/// Who is under test and how it computes.
struct Declaration {
  std::string name;
  std::string version;
  Capabilities capabilities;
  ErrorModel arithmetic;  ///< unit roundoff and subnormal policy the bounds assume
};

/// One step's outcome: a result, or the implementation's own rejection of the input
/// (protocol `op:error`), which is an answer, not a fault.
struct StepOutcome {
  std::optional<StepResult> result;
  std::string rejection;
};

/// The implementation broke: crashed, hung, or answered outside the protocol. The
/// message names what went wrong; `fatal` is true when no further case can be run.
class ImplementationFault : public std::runtime_error {
 public:
  explicit ImplementationFault(const std::string& what, bool fatal = true)
      : std::runtime_error(what), fatal_(fatal) {}
  bool fatal() const { return fatal_; }

 private:
  bool fatal_;
};

/// An implementation of the step. `step` may be called many times, with any case.
class Implementation {
 public:
  virtual ~Implementation() = default;
  virtual const Declaration& declaration() const = 0;
  /// Runs one step. Throws ImplementationFault when the implementation breaks.
  virtual StepOutcome step(const Case& c) = 0;
  /// A hint: the cases that will probably be stepped next, in order, the next step()'s
  /// first. An implementation may start them early (an adapter in another process then
  /// works while the suite checks); step() of an equal case then returns that answer,
  /// and a step() of any other case must still be answered as if no hint had come.
  /// Ignored by default. Never throws.
  virtual void prefetch(std::span<const Case> upcoming) noexcept { (void)upcoming; }
  /// How many upcoming cases prefetch() can use; 0 (the default): don't hint.
  virtual int prefetch_window() const noexcept { return 0; }
};

}  // namespace sgdc
