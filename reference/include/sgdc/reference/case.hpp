#pragma once
/// \file
/// The inputs of one SGD step, as `docs/spec/step.md` defines them.

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sgdc/reference/outputs.hpp"

namespace sgdc::reference {

/// The optimizer that makes the update from the gradient (docs/spec/step.md,
/// "Optimizers"). Hyperparameters are float32 values; the default is plain SGD.
struct Optimizer {
  enum class Kind {
    sgd,       ///< p' = p - lr (g + wd p)
    momentum,  ///< SGD with a momentum buffer (heavy ball or Nesterov)
    adam,      ///< Adam: two moments, bias correction (AdamW with decoupled decay)
    adagrad,   ///< Adagrad: a running sum of squared gradients scales each element's step
  };
  /// Where the weight decay enters with momentum or Adam.
  enum class Decay {
    coupled,    ///< added to the gradient, so it enters the state (torch.optim.SGD, Adam)
    decoupled,  ///< added to the state's direction, outside the state (AdamW)
  };
  Kind kind = Kind::sgd;
  float momentum = 0.0f;  ///< mu
  float dampening = 0.0f;
  bool nesterov = false;
  float weight_decay = 0.0f;
  Decay decay = Decay::coupled;
  float b1 = 0.0f;        ///< Adam's first-moment decay, in [0, 1)
  float b2 = 0.0f;        ///< Adam's second-moment decay, in [0, 1)
  float eps = 0.0f;       ///< Adam's epsilon outside the square root, > 0
  float eps_root = 0.0f;  ///< Adam's epsilon inside the square root (optax), >= 0
  /// Adagrad's accumulator before its first step (torch 0, optax 0.1), >= 0.
  float initial_accumulator_value = 0.0f;

  friend bool operator==(const Optimizer&, const Optimizer&) = default;
};

/// The dampening a momentum step applies to the buffer: `o.dampening`, and 0 when the
/// momentum is 0, where there is no buffer to dampen and the buffer after the step is the
/// decayed gradient (docs/spec/step.md, Optimizers; torch.optim.SGD keeps no buffer there).
inline float applied_dampening(const Optimizer& o) {
  return o.momentum == 0.0f ? 0.0f : o.dampening;
}

/// What one optimizer is, as data: its name and the state it keeps between steps. The
/// rest of its definition (hyperparameters: hyperparameters.hpp; its update, bound and
/// certificate: the reference's sources) reads this row.
struct OptimizerInfo {
  Optimizer::Kind kind;
  const char* name;  ///< as in the protocol, fixtures, recipes and reports
  /// Keeps a buffer (momentum_kernel, momentum_bias): the momentum buffer, Adam's first
  /// moment.
  bool buffer;
  /// Keeps a second moment (second_moment_kernel, second_moment_bias): Adam's second
  /// moment, Adagrad's sum of squared gradients.
  bool second_moment;
};

/// Every optimizer, in protocol order.
inline constexpr std::array<OptimizerInfo, 4> optimizer_table{{
    {Optimizer::Kind::sgd, "sgd", false, false},
    {Optimizer::Kind::momentum, "momentum", true, false},
    {Optimizer::Kind::adam, "adam", true, true},
    {Optimizer::Kind::adagrad, "adagrad", false, true},
}};

static_assert([] {
  for (std::size_t i = 0; i < optimizer_table.size(); ++i)
    if (static_cast<std::size_t>(optimizer_table[i].kind) != i) return false;
  return true;
}());

/// The table row of `kind`.
constexpr const OptimizerInfo& info(Optimizer::Kind kind) {
  return optimizer_table[static_cast<std::size_t>(kind)];
}

/// "sgd", "momentum", "adam", "adagrad"; "coupled", "decoupled"; and back.
const char* to_string(Optimizer::Kind kind);
const char* to_string(Optimizer::Decay decay);
std::optional<Optimizer::Kind> parse_optimizer_kind(std::string_view name);
std::optional<Optimizer::Decay> parse_decay(std::string_view name);

/// The bias's own hyperparameters when it sits in a parameter group of its own
/// (docs/spec/step.md, "Parameter groups"): torch.optim's parameter groups, optax's
/// `mask` and `multi_transform`. Each value left out is the kernel's.
struct ParamGroup {
  std::optional<float> lr;            ///< the group's learning rate
  std::optional<float> weight_decay;  ///< the group's weight decay (0: no decay on the bias)

  friend bool operator==(const ParamGroup&, const ParamGroup&) = default;
};

/// Global-norm gradient clipping before the optimizer (docs/spec/step.md, "Gradient
/// clipping"): the loss's gradients, kernel and bias together, scaled by
/// min(1, max_norm / (norm + eps)), norm the 2-norm of them all. torch's
/// `clip_grad_norm_` adds eps = 1e-6 (as a float32); `optax.clip_by_global_norm` is eps = 0.
struct Clipping {
  float max_norm = 0.0f;  ///< > 0 and finite
  float eps = 0.0f;       ///< >= 0 and finite

  friend bool operator==(const Clipping&, const Clipping&) = default;
};

/// One input of the step. Matrices are row-major float32.
struct Case {
  int n = 0;                  ///< batch rows N
  int d = 0;                  ///< input features D
  int k = 0;                  ///< output features K
  std::vector<float> kernel;  ///< W, [d][k] (Flax convention y = x @ W + b)
  std::vector<float> bias;    ///< b, [k]
  std::vector<float> x;       ///< [n][d]
  std::vector<float> y;       ///< [n][k]
  float lr = 0.0f;            ///< learning rate of plain SGD
  int num_shards = 1;         ///< informational: must not change any result of the baseline
  std::int64_t step = 0;      ///< optimizer step counter before the update
  Optimizer optimizer;        ///< plain SGD unless it says otherwise
  /// The momentum buffer before the step, [d][k] and [k], with a momentum optimizer, or
  /// Adam's first moment; both empty: fresh state, the optimizer's first step.
  std::vector<float> momentum_kernel, momentum_bias;
  /// Adam's second moment or Adagrad's sum of squares before the step, [d][k] and [k],
  /// every value >= 0; empty in fresh state (Adagrad's sum is then
  /// optimizer.initial_accumulator_value).
  std::vector<float> second_moment_kernel, second_moment_bias;
  /// The bias's parameter group; none: the bias takes the kernel's hyperparameters.
  std::optional<ParamGroup> bias_group;
  /// Global-norm clipping of the gradients before the optimizer; none: no clipping.
  std::optional<Clipping> clip;

  /// True for fresh optimizer state: no momentum buffer or moments yet.
  bool fresh_state() const {
    return momentum_kernel.empty() && momentum_bias.empty() && second_moment_kernel.empty() &&
           second_moment_bias.empty();
  }

  /// Throws std::invalid_argument naming the offending field when a dimension is not
  /// positive, an array's length disagrees with n, d, k, or the optimizer state does not
  /// fit the optimizer.
  void validate() const;
};

/// One array input of the table below.
struct InputArray {
  const char* name;  ///< as in the protocol and fixtures
  std::vector<float> Case::*member;
  Extent extent;
  bool state;  ///< optimizer state: empty in fresh state, and sent only when present
  bool second_moment = false;  ///< a second moment (else, for state, the buffer)

  /// Whether an optimizer of `kind` keeps this array (state or not).
  bool kept_by(Optimizer::Kind kind) const {
    return !state || (second_moment ? info(kind).second_moment : info(kind).buffer);
  }
};

/// The array inputs in protocol order (the scalar `lr` comes before them).
inline constexpr std::array<InputArray, 8> input_arrays{{
    {"kernel", &Case::kernel, Extent::kernel, false},
    {"bias", &Case::bias, Extent::bias, false},
    {"x", &Case::x, Extent::x, false},
    {"y", &Case::y, Extent::y, false},
    {"momentum_kernel", &Case::momentum_kernel, Extent::kernel, true},
    {"momentum_bias", &Case::momentum_bias, Extent::bias, true},
    {"second_moment_kernel", &Case::second_moment_kernel, Extent::kernel, true, true},
    {"second_moment_bias", &Case::second_moment_bias, Extent::bias, true, true},
}};

/// Whether output `info` is part of the result of case `c` for an implementation that
/// reports gradients (`grads`) or not.
bool reports(const OutputInfo& info, const Case& c, bool grads);

/// The case the bias's group sees: `c` with the bias group's lr and weight decay, and no
/// group. Every output of `c` of the bias's extent is that output of this case (the bias
/// gradient does not read either value); every other output is that of `c` without its
/// group. `c` itself when it has no group.
Case bias_group_case(Case c);

/// `c` without its bias group: the case every output but the bias's is computed from.
Case kernel_group_case(Case c);

/// Every output of the bias's extent moved from `bias` (the outputs of
/// bias_group_case(c)) into `out` (those of kernel_group_case(c)): the outputs of `c`.
template <class T>
void take_bias_outputs(PerOutput<T>& out, PerOutput<T>&& bias) {
  for (const OutputInfo& info : output_table)
    if (info.extent == Extent::bias) out[info.output] = std::move(bias[info.output]);
}

/// True when some input (lr included) is NaN or infinite.
bool has_nonfinite_input(const Case& c);

/// Part `part` (0-based) of `count` items split into `parts` contiguous parts as
/// numpy.array_split and torch.tensor_split split them: the first count % parts parts
/// hold one item more. [first, second). A shard's rows (precision stages) and its
/// flat parameters (placement) alike.
std::pair<std::int64_t, std::int64_t> split_part(std::int64_t count, int parts, int part);

/// The case with every NaN or infinite input (lr included) read as 0: the outputs that do
/// not depend on those inputs are the same as the original case's.
Case with_nonfinite_as_zero(Case c);

/// All inputs, exactly (9 significant digits and hexfloat), e.g. for counterexamples;
/// RapidCheck finds it by its name.
void showValue(const Case& c, std::ostream& os);

}  // namespace sgdc::reference
