#pragma once
/// \file
/// The training configuration an implementation declares it runs (hello field "recipe",
/// `run --recipe FILE`; docs/spec/protocol.md): which optimizers, where each
/// hyperparameter lies, and whether every batch splits evenly over the shards. Cases are
/// then drawn, and shrunk, only inside it; whatever it leaves undeclared is drawn as
/// without a recipe.

#include <array>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/hyperparameters.hpp"

namespace sgdc::properties {

struct Capabilities;

/// Where one declared hyperparameter lies: one value (lo == hi) or the closed range
/// [lo, hi].
struct ValueRange {
  float lo = 0.0f;
  float hi = 0.0f;
  bool fixed() const { return lo == hi; }
  bool contains(float v) const { return v >= lo && v <= hi; }
  friend bool operator==(const ValueRange&, const ValueRange&) = default;
};

/// The bias's own parameter group, as torch.optim's parameter groups and optax's `mask`
/// or `multi_transform` make one (docs/spec/protocol.md, "Parameter groups"): where its
/// learning rate and weight decay lie; each left out is the kernel's.
struct DeclaredGroup {
  std::optional<ValueRange> lr;
  std::optional<ValueRange> weight_decay;
  friend bool operator==(const DeclaredGroup&, const DeclaredGroup&) = default;
};

/// Global-norm gradient clipping before the optimizer, as torch's `clip_grad_norm_` and
/// `optax.clip_by_global_norm` do it (docs/spec/protocol.md, "Gradient clipping"): where
/// max_norm lies, and the eps the library adds to the norm (torch 1e-6, optax 0).
struct DeclaredClipping {
  ValueRange max_norm;
  float eps = 0.0f;
  friend bool operator==(const DeclaredClipping&, const DeclaredClipping&) = default;
};

/// A declared recipe (see the file comment).
struct DeclaredRecipe {
  /// The optimizers the implementation runs; empty: plain SGD and every optimizer its
  /// capabilities take, as without a recipe.
  std::vector<reference::Optimizer::Kind> optimizers;
  /// Where each hyperparameter lies, indexed as reference::hyperparameters; none: drawn
  /// as without a recipe.
  std::array<std::optional<ValueRange>, reference::hyperparameters.size()> ranges{};
  /// N is always a multiple of num_shards (a sampler that pads the batch, as a
  /// DistributedSampler without drop_last does): only such cases are drawn and shrunk to.
  bool even_batches = false;
  /// The bias's parameter group: every case drawn carries it (reference::Case::bias_group);
  /// none: the bias takes the kernel's hyperparameters, as without a recipe.
  std::optional<DeclaredGroup> bias_group;
  /// Clipping: every case drawn carries it (reference::Case::clip); none: no clipping, as
  /// without a recipe.
  std::optional<DeclaredClipping> clipping;

  /// True when nothing is declared.
  bool empty() const;
  /// Whether cases of optimizer `kind` may be drawn (before the capabilities say so).
  bool runs(reference::Optimizer::Kind kind) const;
  /// The declared range of hyperparameter `name` (a name of reference::hyperparameters).
  const std::optional<ValueRange>& range(std::string_view name) const;
  /// Whether case `c` lies inside: its optimizer is run, each declared hyperparameter its
  /// optimizer takes lies in its range, and with even batches num_shards divides n.
  bool admits(const reference::Case& c) const;

  friend bool operator==(const DeclaredRecipe&, const DeclaredRecipe&) = default;
};

/// Throws std::invalid_argument naming the field ("recipe.lr: ...") when cases cannot be
/// drawn inside `r` for an implementation with `caps`: an optimizer it does not take, a
/// range that is empty, not finite or outside the hyperparameter's domain, a value that
/// is neither 0 nor a normal float32, a hyperparameter no optimizer of the recipe takes,
/// or a nonzero dampening, eps_root or weight decay the capabilities do not take.
void validate(const DeclaredRecipe& r, const Capabilities& caps);

/// `declared` narrowed by `asked` (a run's `--recipe`): the optimizers both run, each
/// range the intersection of both, even batches if either says so. Throws
/// std::invalid_argument naming the field when an intersection is empty.
DeclaredRecipe narrow(const DeclaredRecipe& declared, const DeclaredRecipe& asked);

/// The bias group a case of optimizer `kind` takes under `group`: each declared value the
/// optimizer takes drawn inside its range (weight decay only where it decays); none when
/// that leaves nothing.
std::optional<reference::ParamGroup> draw_group(std::mt19937_64& rng, const DeclaredGroup& group,
                                                reference::Optimizer::Kind kind);

/// The 2-norm of the loss's gradients of `c` (kernel and bias together), computed in
/// double: for drawing max_norm and for reports, not for verdicts.
double gradient_norm(const reference::Case& c);

/// The clipping a case takes under `clipping`, drawn so that both of its branches come:
/// with a range, max_norm between a tenth and ten times the norm of the case's gradients
/// (as near as the range allows); with a fixed max_norm, in half the cases the targets `y`
/// moved so that the gradients' norm is that much (their residuals scaled). In one case
/// of four the gradients are first made tiny (a norm in [1e-6, 1e-3]), where eps counts.
void draw_clipping(std::mt19937_64& rng, const DeclaredClipping& clipping, reference::Case& c);

/// A value inside `range`: the value of a fixed one; else either end in one case of four
/// each, otherwise log-uniform when lo > 0, uniform when lo = 0.
float draw_inside(std::mt19937_64& rng, const ValueRange& range);

}  // namespace sgdc::properties
