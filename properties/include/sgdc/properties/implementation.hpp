#pragma once
/// \file
/// What the properties test: any implementation of the step, in process or behind an
/// adapter, with what it declares about itself.

#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sgdc/properties/declared_recipe.hpp"
#include "sgdc/properties/sharding/placement.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/counter.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::properties {

/// What an implementation of SGD with momentum takes (hello field "momentum"); with it,
/// the implementation returns the buffer after every momentum step.
struct MomentumSupport {
  bool dampening = false;  ///< a dampening other than 0
  bool nesterov = false;
  bool coupled_decay = false;    ///< weight decay added to the gradient (into the buffer)
  bool decoupled_decay = false;  ///< weight decay added to the direction (outside the buffer)
};

/// What an implementation of Adam takes (hello field "adam"); with it, the implementation
/// returns both moments after every Adam step.
struct AdamSupport {
  bool coupled_decay = false;    ///< weight decay added to the gradient (torch.optim.Adam)
  bool decoupled_decay = false;  ///< weight decay outside the moments (AdamW)
  bool eps_root = false;         ///< an eps_root other than 0 (optax)
};

/// What an implementation of Adagrad takes (hello field "adagrad"); with it, the
/// implementation returns the sum of squares (as second_moment_kernel and
/// second_moment_bias) after every Adagrad step.
struct AdagradSupport {
  bool coupled_decay = false;    ///< weight decay added to the gradient (torch.optim.Adagrad)
  bool decoupled_decay = false;  ///< weight decay outside the sum (optax, decay chained after)
  /// Where its epsilon sits: inside the square root (optax.adagrad: eps = 0, eps_root above
  /// 0) rather than outside (torch.optim.Adagrad: eps above 0, eps_root = 0).
  bool eps_root = false;
};

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
  /// How the reported shard layout places the parameters (with `shard_layout`).
  sharding::PlacementRule placement = sharding::PlacementRule::flat;
  /// SGD with momentum, when the implementation offers it (plain SGD otherwise).
  std::optional<MomentumSupport> momentum;
  /// Adam, when the implementation offers it.
  std::optional<AdamSupport> adam;
  /// Adagrad, when the implementation offers it.
  std::optional<AdagradSupport> adagrad;
};

/// Whether `caps` declare the optimizer `kind` (plain SGD: always).
bool declares(const Capabilities& caps, reference::Optimizer::Kind kind);

/// The weight-decay conventions `caps` declare for the optimizer `kind`: {coupled,
/// decoupled}; none for plain SGD or an optimizer not declared.
std::pair<bool, bool> decay_conventions(const Capabilities& caps, reference::Optimizer::Kind kind);

/// Who is under test and how it computes.
struct Declaration {
  std::string name;
  std::string version;
  Capabilities capabilities;
  reference::ErrorModel arithmetic;  ///< unit roundoff and subnormal policy the bounds assume
  reference::Counter counter;        ///< the step counter's type and end (with step_counter)
  /// The training configuration it runs: cases are drawn only inside (validate() holds).
  DeclaredRecipe recipe;
};

/// Why case `c` lies outside what `d` declares, so that the suite never sends it such a
/// case (an optimizer or option it does not take, a case outside its recipe); none when
/// it lies inside. A fixture outside is not applicable to the implementation.
std::optional<std::string> outside_declaration(const reference::Case& c, const Declaration& d);

/// One step's outcome: a result, or the implementation's own rejection of the input
/// (protocol `op:error`), which is an answer, not a fault.
struct StepOutcome {
  std::optional<reference::StepResult> result;
  std::string rejection;
};

/// The implementation broke: crashed, hung, or answered outside the protocol. No further
/// case can be run. The message names what went wrong; `position`, when known, is the
/// index in the batch of the case it broke on, and `completed` the outcomes of the cases
/// before it, which were answered.
class ImplementationFault : public std::runtime_error {
 public:
  explicit ImplementationFault(const std::string& what,
                               std::optional<std::size_t> position = std::nullopt,
                               std::vector<StepOutcome> completed = {})
      : std::runtime_error(what), position_(position), completed_(std::move(completed)) {}
  std::optional<std::size_t> position() const { return position_; }
  const std::vector<StepOutcome>& completed() const { return completed_; }

 private:
  std::optional<std::size_t> position_;
  std::vector<StepOutcome> completed_;
};

/// An implementation of the step. The suite hands it cases to step, in batches; it may be
/// asked for any case, any number of times.
class Implementation {
 public:
  virtual ~Implementation() = default;
  virtual const Declaration& declaration() const = 0;
  /// Runs one step. Throws ImplementationFault when the implementation breaks.
  virtual StepOutcome step(const reference::Case& c) = 0;
  /// Runs every case of `cases`, in order, and returns their outcomes in the same order.
  /// The default steps them one by one; an implementation that gains from seeing many
  /// cases at once (an adapter in another process, a compiled framework) overrides it.
  /// Throws ImplementationFault as step() does.
  virtual std::vector<StepOutcome> step_batch(std::span<const reference::Case> cases);
  /// How many cases the implementation would like to be handed at once (e.g. an adapter's
  /// declared max_batch), 0 for no preference. The runner's batches grow to it; what is
  /// judged never depends on it.
  virtual std::size_t preferred_batch() const { return 0; }
  /// Whether step() may be called from several threads at once, each call's outcome the
  /// same whatever else runs beside it and in whatever order the calls come. The runner
  /// then evaluates a batch's drawn cases side by side, each case's steps handed to
  /// step_batch() apart from the others', on up to reference::oracle_threads() threads
  /// (what is judged and reported is the same as on one). False by default: the runner
  /// hands every round of steps of a batch to one step_batch() call, from one thread, in
  /// order, as an adapter in another process needs for its pipelining.
  virtual bool concurrent_steps() const { return false; }
};

}  // namespace sgdc::properties
