#include "sgdc/conformance/builtin/catalogue.hpp"

#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "sgdc/conformance/builtin/float32_step.hpp"

namespace sgdc::conformance::builtin {

namespace {

Entry variant(std::string name, std::string description, Recipe recipe, bool sharded = false) {
  return {std::move(name), Kind::variant, std::move(description), recipe, sharded};
}

Entry mutant(std::string name, Bug bug, std::string description, std::string named_by = {}) {
  Recipe recipe;
  recipe.order = Order::sequential;
  recipe.bug = bug;
  return {std::move(name), Kind::mutant, std::move(description), recipe,
          false,           {},           std::move(named_by)};
}

// A step whose products read their inputs in `format`, declared (a variant) or not (a mutant).
Entry reduced_matmul(std::string name, reference::Format format, bool declared,
                     std::string description, std::string named_by = {}) {
  Recipe recipe;
  recipe.order = Order::sequential;
  recipe.matmul_inputs = format;
  reference::ErrorModel arithmetic;
  if (declared) arithmetic = {.u = format.unit_roundoff(), .format = format};
  return {std::move(name),
          declared ? Kind::variant : Kind::mutant,
          std::move(description),
          recipe,
          false,
          arithmetic,
          std::move(named_by)};
}

// An Adagrad step (its recipe runs Adagrad alone): correct in `form` (a variant) or with
// `bug` (a mutant of a torch-form step), declared as `support` says.
Entry adagrad(std::string name, Kind kind, AdagradForm form, Bug bug,
              properties::AdagradSupport support, std::string description,
              std::string named_by = {}) {
  Recipe recipe;
  recipe.order =
      kind == Kind::variant && form == AdagradForm::optax ? Order::pairwise : Order::sequential;
  recipe.adagrad = form;
  recipe.bug = bug;
  Entry e{std::move(name), kind, std::move(description), recipe, false, {}, std::move(named_by)};
  e.declared.optimizers = {reference::Optimizer::Kind::adagrad};
  e.adagrad = support;
  return e;
}

// torch.optim.Adagrad's declaration: eps outside the root, weight decay coupled only.
constexpr properties::AdagradSupport torch_adagrad{.coupled_decay = true};
// optax.adagrad's: eps inside the root; decay chained before it (coupled) or after.
constexpr properties::AdagradSupport optax_adagrad{
    .coupled_decay = true, .decoupled_decay = true, .eps_root = true};

// A step that clips the gradients to a global norm (docs/spec/step.md, "Gradient
// clipping") in the convention of `eps` (torch's clip_grad_norm_ 1e-6, optax's 0),
// declaring it for max_norm in [1e-7, 1e4]: correct (a variant) or with a clipping `bug`
// (a mutant).
Entry clipping(std::string name, Kind kind, float eps, Bug bug, std::string description,
               std::string named_by = {}) {
  Recipe recipe;
  recipe.order = eps == 0.0f && kind == Kind::variant ? Order::pairwise : Order::sequential;
  recipe.bug = bug;
  Entry e{std::move(name), kind, std::move(description), recipe, false, {}, std::move(named_by)};
  e.declared.clipping = properties::DeclaredClipping{.max_norm = {1e-7f, 1e4f}, .eps = eps};
  return e;
}

// A step in mixed precision by stage as FSDP2 runs it (docs/spec/step.md, "Mixed
// precision by stage"): computed in `computed`'s stages, declaring `declared`'s; sharded,
// its ranks following num_shards. A variant where both agree, else a mutant.
Entry staged(std::string name, reference::Stages computed, reference::Stages declared,
             std::string description, std::string named_by = {}) {
  Recipe recipe;
  recipe.order = Order::sequential;
  recipe.stages = computed;
  reference::ErrorModel arithmetic;
  arithmetic.stages = declared;
  return {std::move(name),
          computed == declared ? Kind::variant : Kind::mutant,
          std::move(description),
          recipe,
          true,
          arithmetic,
          std::move(named_by)};
}

// FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32) on float32
// master weights, and the stages a bug changes.
constexpr reference::Stages bf16_params{.param = reference::formats::bfloat16};
constexpr reference::Stages bf16_reduce{.param = reference::formats::bfloat16,
                                        .reduce = reference::formats::bfloat16};
constexpr reference::Stages bf16_master{.param = reference::formats::bfloat16,
                                        .master = reference::formats::bfloat16};

std::vector<Entry> make_catalogue() {
  std::vector<Entry> c;
  c.push_back({"float32", Kind::reference,
               "Eigen float32: x W + b - y, mean of squares, x^T r scaled by 2/(N K)", Recipe{},
               false});
  c.push_back(variant("sequential", "float32 loops, every sum left to right",
                      Recipe{.order = Order::sequential}));
  c.push_back(variant("reversed", "float32 loops, every sum right to left",
                      Recipe{.order = Order::reversed}));
  c.push_back(variant("pairwise", "float32 loops, pairwise sums (numpy's order)",
                      Recipe{.order = Order::pairwise}));
  c.push_back(variant("sharded",
                      "rows split over num_shards uneven parts, per-shard sums reduced pairwise "
                      "(an all-reduce), one scale at the end",
                      Recipe{.order = Order::sharded}, true));
  c.push_back(variant("float64", "every intermediate in double, each output rounded once",
                      Recipe{.order = Order::sequential, .wide = true}));
  c.push_back(variant("fma-update", "update p' = fma(-lr, g, p) with one rounding",
                      Recipe{.order = Order::sequential, .fma_update = true}));
  c.push_back(variant("scale-first",
                      "2/(N K) applied to each residual before the reductions, as autodiff "
                      "of mean() does",
                      Recipe{.order = Order::pairwise, .scale_first = true}));
  c.push_back(variant("float64-buffer",
                      "float32 gradients; the momentum buffer (Adam: both moments) and the "
                      "direction computed in double",
                      Recipe{.order = Order::sequential, .wide_state = true}));
  c.push_back(variant("adam-torch",
                      "Adam as torch.optim.Adam(W) computes it: lerp for the first moment, "
                      "fused multiply-adds, bias corrections in double folded into lr / bc1 "
                      "and sqrt(v) / sqrt(bc2)",
                      Recipe{.order = Order::sequential, .adam = AdamForm::torch}));
  c.push_back(variant("adam-optax",
                      "Adam as optax under jit computes it: fused multiply-adds, bias "
                      "corrections in float32 applied as reciprocals, p' = fma(-lr, u, p)",
                      Recipe{.order = Order::pairwise, .adam = AdamForm::optax_fused}));
  c.push_back(adagrad("adagrad-torch", Kind::variant, AdagradForm::torch, Bug::none, torch_adagrad,
                      "Adagrad as torch.optim.Adagrad computes it: the sum by addcmul (one "
                      "rounding), sqrt(sum) + eps, addcdiv; declares adagrad alone, eps "
                      "outside the root"));
  c.push_back(adagrad("adagrad-optax", Kind::variant, AdagradForm::optax, Bug::none, optax_adagrad,
                      "Adagrad as optax.adagrad under jit computes it: rsqrt(sum + eps) times "
                      "the gradient, p' = fma(-lr, u, p); declares adagrad alone, eps inside "
                      "the root"));
  c.push_back(reduced_matmul("tf32-matmul", reference::formats::tf32, true,
                             "products read x, W and the residual's gradient rounded to TF32, "
                             "accumulate in float32 (tensor cores with TF32 on); declares "
                             "compute format tf32"));
  c.push_back(reduced_matmul("bf16-matmul", reference::formats::bfloat16, true,
                             "products read their inputs rounded to bfloat16, accumulate in "
                             "float32; declares compute format bfloat16"));
  c.push_back(staged("bf16-params", bf16_params, bf16_params,
                     "FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32): "
                     "x, W, b cast to bfloat16, the output and each rank's gradients rounded "
                     "to it, the ranks' gradients summed in float32, float32 master weights; "
                     "declares those stages"));
  c.push_back(staged("bf16-params-bf16-reduce", bf16_reduce, bf16_reduce,
                     "as bf16-params with reduce_dtype=bfloat16: the ranks' gradients summed "
                     "in bfloat16; declares it"));
  c.push_back(staged("bf16-master", bf16_master, bf16_master,
                     "as bf16-params with the parameters and optimizer state stored in "
                     "bfloat16 (no float32 master weights); declares it"));
  c.push_back(clipping("clip-torch", Kind::variant, 1e-6f, Bug::none,
                       "gradients clipped as torch.nn.utils.clip_grad_norm_ does: a norm per "
                       "tensor, their norm, max_norm / (norm + 1e-6) clamped to 1; declares "
                       "clipping with eps 1e-6"));
  c.push_back(clipping("clip-optax", Kind::variant, 0.0f, Bug::none,
                       "gradients clipped as optax.clip_by_global_norm does: the norm of every "
                       "element, (g / norm) * max_norm where norm >= max_norm; declares "
                       "clipping with eps 0"));
  {
    // The mean-of-shard-means mutant's step, declared for what it is right for: batches
    // that split evenly over the shards (a padding sampler).
    Entry even = variant("even-batch-shard-means",
                         "averages per-shard means, declaring even batches (N a multiple of "
                         "num_shards, as a padding DistributedSampler guarantees), where that "
                         "is the batch's mean",
                         Recipe{.order = Order::sequential, .bug = Bug::mean_of_shard_means}, true);
    even.declared.even_batches = true;
    c.push_back(std::move(even));
  }
  {
    // The no-decay-on-bias step, declared for what it is: a bias in a group of its own.
    Entry groups = variant("no-decay-on-bias",
                           "the bias in a parameter group with weight_decay=0 (torch.optim "
                           "parameter groups, optax's mask), declaring that group",
                           Recipe{.order = Order::sequential, .bug = Bug::no_decay_on_bias});
    groups.declared.bias_group = properties::DeclaredGroup{.weight_decay = {{0.0f, 0.0f}}};
    c.push_back(std::move(groups));
  }
  c.push_back(mutant("post-update-loss", Bug::post_update_loss,
                     "returns the loss re-evaluated after the update (logging the loss after "
                     "optimizer.step())",
                     "is the loss after the update"));
  c.push_back(mutant("mean-over-batch", Bug::mean_over_batch,
                     "divides by N, not N*K (a per-example sum of squares averaged over the "
                     "batch, as reduction='sum' then /batch_size does)",
                     "a mean over the batch only"));
  c.push_back(mutant("grad-times-shards", Bug::grad_times_shards,
                     "all-reduce SUM of gradients that each shard already averaged over the "
                     "full batch (psum where pmean belongs)",
                     "per-shard means summed"));
  c.push_back(mutant("drop-remainder-rows", Bug::drop_remainder_rows,
                     "uses only floor(N/S)*S rows (a sampler with drop_last, or N // S rows "
                     "per shard)",
                     "remainder rows"));
  c.push_back(mutant("mean-of-shard-means", Bug::mean_of_shard_means,
                     "averages per-shard means, which weights rows of small shards more "
                     "when N % S != 0",
                     "mean of per-shard means"));
  c.push_back(mutant("half-precision-grad", Bug::half_precision_grad,
                     "gradients kept in float16 (a mixed-precision cast left in place)",
                     "all float16 values"));
  c.push_back(mutant("reshape-not-transpose", Bug::reshape_not_transpose,
                     "x.reshape(D, N) where x.T belongs (same shape, wrong elements)",
                     "x.reshape(D, N)"));
  c.push_back(mutant("wrong-sign", Bug::wrong_sign, "p + lr*g (gradient ascent)", "wrong sign"));
  c.push_back(mutant("missing-factor-two", Bug::missing_factor_two,
                     "gradient of r^2 taken as r (a hand-written derivative that drops the 2)",
                     "factor of 2 missing"));
  c.push_back(mutant("bias-not-updated", Bug::bias_not_updated,
                     "bias left out of the optimizer's parameter list",
                     "the bias's update is missing"));
  c.push_back(mutant("lr-twice", Bug::lr_twice,
                     "learning rate applied by both a scaling transform and the update",
                     "lr applied twice"));
  c.push_back(mutant("step-not-advanced", Bug::step_not_advanced,
                     "step counter returned unchanged (state not threaded back)",
                     "counter was not advanced"));
  c.push_back(mutant("nondeterministic", Bug::nondeterministic,
                     "reduction order varies from call to call (atomics or thread races)",
                     "differ by rounding alone"));
  c.push_back(mutant("skip-tiny-updates", Bug::skip_tiny_updates,
                     "skips updates smaller than 1e-6 of the parameter (an 'optimisation' or "
                     "an epsilon test)",
                     "update is missing"));
  c.push_back(mutant("unbiased-mean", Bug::unbiased_mean,
                     "divides by N*K - 1 (an unbiased-variance habit)", "N*K - 1"));
  c.push_back(
      mutant("rows-past-16-dropped", Bug::rows_past_16_dropped,
             "a kernel that reads only the first 16 batch rows (a remainder loop never run)",
             "rows past the 16th"));
  c.push_back(mutant("chunked-mean-32", Bug::chunked_mean_32,
                     "gradient accumulation over chunks of 32 rows, each chunk's mean weighted "
                     "equally (wrong when the last chunk is short)",
                     "chunks of 32 rows"));
  c.push_back(mutant("columns-past-8-dropped", Bug::columns_past_8_dropped,
                     "input columns past the last multiple of 8 left out when D > 8 (a vector "
                     "loop without its tail)",
                     "columns past the 8th"));
  c.push_back(mutant("float32-counter", Bug::float32_counter,
                     "step counter kept in float32: it stops advancing at 2^24",
                     "counter kept in float32"));
  c.push_back(mutant("int32-counter", Bug::int32_counter,
                     "step counter kept in a signed 32-bit integer: it wraps at 2^31",
                     "counter kept in int32"));
  c.push_back(mutant("fresh-buffer-every-step", Bug::fresh_buffer_every_step,
                     "the momentum buffer started afresh at every step (state not threaded back)",
                     "state started afresh"));
  c.push_back(mutant("dampening-on-first-step", Bug::dampening_on_first_step,
                     "a fresh buffer dampened, (1 - dampening) g, where the first step keeps g",
                     "dampened first buffer"));
  c.push_back(mutant("nesterov-without-lookahead", Bug::nesterov_without_lookahead,
                     "Nesterov's direction g + mu buf from the buffer before the step, not after",
                     "from the buffer before the step"));
  c.push_back(mutant("decay-convention-swapped", Bug::decay_convention_swapped,
                     "weight decay coupled where it is declared decoupled, and back",
                     "where the case's"));
  c.push_back(mutant("buffer-shared", Bug::buffer_shared,
                     "the bias's momentum buffer read from the kernel's (one buffer for two "
                     "parameters)",
                     "one buffer shared between kernel and bias"));
  c.push_back(mutant("adam-bias-correction-off-by-one", Bug::adam_bias_correction_off_by_one,
                     "Adam's bias correction 1 - b^t with t the counter before the step, not "
                     "after (the increment placed after its use)",
                     "t = step, not step + 1"));
  c.push_back(mutant("adam-eps-inside", Bug::adam_eps_inside,
                     "eps inside the square root, sqrt(vh + eps), where the declaration puts it "
                     "outside",
                     "eps inside the square root"));
  c.push_back(mutant("adam-b2-on-gradient", Bug::adam_b2_on_gradient,
                     "the second moment averages the gradient, not its square",
                     "not of its square"));
  c.push_back(mutant("adam-decay-in-moment", Bug::adam_decay_in_moment,
                     "decoupled weight decay also added to the first moment's gradient",
                     "weight decay inside Adam's moment"));
  c.push_back(mutant("adam-moments-bfloat16", Bug::adam_moments_bfloat16,
                     "both moments kept in bfloat16 (a low-precision optimizer state) without "
                     "declaring it",
                     "moments kept in bfloat16"));
  c.push_back(mutant("adam-state-not-advanced", Bug::adam_state_not_advanced,
                     "the moments returned as they came in (state not threaded back)",
                     "moments are returned as they came in"));
  c.push_back(mutant("adam-decay-convention-swapped", Bug::adam_decay_convention_swapped,
                     "Adam's weight decay coupled (torch.optim.Adam) where it is declared "
                     "decoupled (AdamW), and back",
                     "where the case's Adam"));
  c.push_back(mutant("sum-not-mean", Bug::sum_not_mean,
                     "loss and gradients summed over the N*K elements (reduction='sum' where the "
                     "mean belongs)",
                     "a sum where the mean belongs"));
  c.push_back(mutant("clipped-gradients", Bug::clipped_gradients,
                     "gradients clipped to a global norm of 1 (clip_grad_norm_(max_norm=1.0) left "
                     "in a step that declares no clipping)",
                     "clipping to a global norm"));
  c.push_back(mutant("momentum-on-plain-sgd", Bug::momentum_on_plain_sgd,
                     "a plain-SGD case stepped as Nesterov momentum 0.9's first step, (1 + mu) g "
                     "(an optimizer built with the training script's momentum)",
                     "looks like momentum"));
  c.push_back(mutant("decay-in-loss", Bug::decay_in_loss,
                     "weight decay also as L2 regularisation in the loss: the reported gradient "
                     "carries wd * p, and the optimizer decays once more",
                     "L2 regularisation in the loss"));
  c.push_back(mutant("gradients-accumulate", Bug::gradients_accumulate,
                     "each plain-SGD step's gradient added to the one kept from the last call of "
                     "the same shape (optimizer.zero_grad() missing from the training step)",
                     "gradients accumulate across calls"));
  c.push_back(mutant("no-decay-on-bias-undeclared", Bug::no_decay_on_bias,
                     "the bias in a parameter group with weight_decay=0, declared as one group "
                     "for both parameters",
                     "the bias stepped without weight decay"));
  {
    Entry ignored = mutant("bias-group-ignored", Bug::bias_group_ignored,
                           "declares the bias's group without weight decay, then steps the bias "
                           "with the kernel's (the group built but its parameters left in the "
                           "default one)",
                           "parameter group is not applied");
    ignored.declared.bias_group = properties::DeclaredGroup{.weight_decay = {{0.0f, 0.0f}}};
    c.push_back(std::move(ignored));
  }
  c.push_back(reduced_matmul("tf32-matmul-undeclared", reference::formats::tf32, false,
                             "TF32 products (torch.backends.cuda.matmul.allow_tf32 left on) "
                             "declared as float32",
                             "matrix products in tf32"));
  c.push_back(reduced_matmul("bf16-matmul-undeclared", reference::formats::bfloat16, false,
                             "bfloat16 products (an autocast region around the step) declared "
                             "as float32",
                             "matrix products in bfloat16"));
  c.push_back(adagrad("adagrad-eps-swapped", Kind::mutant, AdagradForm::torch,
                      Bug::adagrad_eps_swapped, torch_adagrad,
                      "declares torch's Adagrad (eps outside the root), computes optax's "
                      "sqrt(sum + eps)",
                      "eps on the other side of the square root"));
  c.push_back(adagrad("adagrad-sum-reset-every-step", Kind::mutant, AdagradForm::torch,
                      Bug::adagrad_sum_reset_every_step, torch_adagrad,
                      "the sum of squares started afresh at every step (the optimizer rebuilt "
                      "per step, its state lost)",
                      "state started afresh"));
  c.push_back(adagrad("adagrad-initial-value-ignored", Kind::mutant, AdagradForm::torch,
                      Bug::adagrad_initial_value_ignored, torch_adagrad,
                      "a fresh sum of 0 whatever initial_accumulator_value says (torch's "
                      "default where optax's 0.1 was declared)",
                      "not at initial_accumulator_value"));
  c.push_back(clipping("clip-not-applied", Kind::mutant, 1e-6f, Bug::clip_not_applied,
                       "declares clipping, never clips (clip_grad_norm_ called on a model "
                       "whose gradients were already consumed, or its result discarded)",
                       "declared clipping is not applied"));
  c.push_back(clipping("clip-local-shard-norm", Kind::mutant, 1e-6f, Bug::clip_local_shard_norm,
                       "each shard clips its part of the gradients by the norm of that part "
                       "alone (a norm of local tensors where the global norm belongs)",
                       "the norm of each rank's local shards"));
  c.push_back(clipping("clip-per-parameter", Kind::mutant, 1e-6f, Bug::clip_per_parameter,
                       "kernel and bias each clipped to max_norm by its own norm "
                       "(clip_grad_norm_ called once per parameter)",
                       "each clipped to max_norm by its own norm"));
  c.push_back(clipping("clip-after-decay", Kind::mutant, 1e-6f, Bug::clip_after_decay,
                       "weight decay added to the gradients before they are clipped, so the "
                       "norm and the clip include it",
                       "weight decay added to the gradients before they are clipped"));
  c.push_back(clipping("clip-reported-gradients", Kind::mutant, 1e-6f, Bug::clip_reported_gradients,
                       "reports the clipped gradients (what .grad holds after "
                       "clip_grad_norm_) where the loss's gradients belong",
                       "are the clipped gradients"));
  c.push_back(clipping("clip-eps-swapped", Kind::mutant, 0.0f, Bug::clip_eps_swapped,
                       "declares optax's clipping (eps 0), computes torch's max_norm / "
                       "(norm + 1e-6)",
                       "where optax's clip_by_global_norm (eps 0) is declared"));
  c.push_back(staged("bf16-reduce-undeclared", bf16_reduce, bf16_params,
                     "MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=bfloat16) "
                     "declared with a float32 reduction: the ranks' gradients summed in "
                     "bfloat16",
                     "reduced in bfloat16 where reduce_dtype"));
  c.push_back(staged("bf16-master-undeclared", bf16_master, bf16_params,
                     "the model converted to bfloat16 before fully_shard, declared with "
                     "float32 master weights: parameters and optimizer state stored and "
                     "updated in bfloat16",
                     "bfloat16 master weights where"));
  c.push_back(staged("bf16-params-not-applied", {}, bf16_params,
                     "declares param_dtype=bfloat16 (the MixedPrecisionPolicy never passed "
                     "to fully_shard), computes every stage in float32",
                     "param_dtype bfloat16 is not applied"));
  return c;
}

// Each parameter group stepped as a case of its own, as an optimizer with parameter
// groups does: the bias's outputs from the case its group sees.
reference::StepResult grouped_step(const reference::Case& c, const Recipe& recipe) {
  if (!c.bias_group) return float32_step(c, recipe);
  reference::StepResult r = float32_step(reference::kernel_group_case(c), recipe);
  reference::StepResult bias = float32_step(reference::bias_group_case(c), recipe);
  reference::take_bias_outputs(r, std::move(bias));
  return r;
}

// The case as the bug's step sees it: its bias without decay (a group it may not
// declare), or without the group it declared.
reference::Case as_stepped(const reference::Case& c, Bug bug) {
  reference::Case s = c;
  if (bug == Bug::no_decay_on_bias && c.optimizer.kind != reference::Optimizer::Kind::sgd) {
    s.bias_group = s.bias_group.value_or(reference::ParamGroup{});
    s.bias_group->weight_decay = 0.0f;
  }
  if (bug == Bug::bias_group_ignored) s.bias_group.reset();
  return s;
}

class Builtin final : public properties::Implementation {
 public:
  explicit Builtin(const Entry& entry) : entry_(entry) {
    declaration_.name = "builtin:" + entry.name;
    declaration_.version = SGDC_VERSION;
    declaration_.capabilities.grads = true;
    declaration_.capabilities.step_counter = true;
    declaration_.capabilities.sharded = entry.sharded;
    declaration_.counter = builtin_counter;
    declaration_.arithmetic = entry.arithmetic;
    declaration_.recipe = entry.declared;
    declaration_.capabilities.momentum = properties::MomentumSupport{
        .dampening = true, .nesterov = true, .coupled_decay = true, .decoupled_decay = true};
    declaration_.capabilities.adam =
        properties::AdamSupport{.coupled_decay = true, .decoupled_decay = true, .eps_root = true};
    declaration_.capabilities.adagrad = entry.adagrad;
  }
  const properties::Declaration& declaration() const override { return declaration_; }
  properties::StepOutcome step(const reference::Case& c) override {
    reference::StepResult r = grouped_step(as_stepped(c, entry_.recipe.bug), entry_.recipe);
    if (entry_.recipe.bug == Bug::gradients_accumulate &&
        c.optimizer.kind == reference::Optimizer::Kind::sgd)
      accumulate(c, r);
    return {std::move(r), {}};
  }
  // Every step is a pure function of its case, but for the mutant that keeps the last
  // call's gradients: its outcomes depend on the order of the calls, which side-by-side
  // evaluation would change. (The nondeterministic mutant's coin is behind a mutex; its
  // outcomes differ from run to run whatever the threads.)
  bool concurrent_steps() const override { return entry_.recipe.bug != Bug::gradients_accumulate; }

 private:
  // A .grad that is never zeroed: this call's gradient is added to what the last call of
  // the same shape left, and the update uses the sum.
  void accumulate(const reference::Case& c, reference::StepResult& r) {
    const std::lock_guard lock(mutex_);
    auto& [kernel, bias] = grads_[{c.d, c.k}];
    kernel.resize(r.grad_kernel.size(), 0.0f);
    bias.resize(r.grad_bias.size(), 0.0f);
    for (auto [kept, g, p, p_new] : {std::tuple{&kernel, &r.grad_kernel, &c.kernel, &r.kernel},
                                     std::tuple{&bias, &r.grad_bias, &c.bias, &r.bias}}) {
      for (std::size_t i = 0; i < kept->size(); ++i) {
        (*kept)[i] += (*g)[i];
        (*g)[i] = (*kept)[i];
        (*p_new)[i] = (*p)[i] - c.lr * (*kept)[i];
      }
    }
  }

  const Entry& entry_;
  properties::Declaration declaration_;
  std::mutex mutex_;
  std::map<std::pair<int, int>, std::pair<std::vector<float>, std::vector<float>>> grads_;
};

}  // namespace

const std::vector<Entry>& catalogue() {
  static const std::vector<Entry> entries = make_catalogue();
  return entries;
}

const Entry& find(std::string_view name) {
  for (const Entry& e : catalogue()) {
    if (e.name == name) return e;
  }
  std::string known;
  for (const Entry& e : catalogue()) known += (known.empty() ? "" : ", ") + e.name;
  throw std::invalid_argument("no built-in implementation named \"" + std::string(name) +
                              "\"; known: " + known);
}

std::unique_ptr<properties::Implementation> make(const Entry& entry) {
  return std::make_unique<Builtin>(entry);
}

const char* to_string(Kind kind) {
  switch (kind) {
    case Kind::reference:
      return "reference";
    case Kind::variant:
      return "variant";
    case Kind::mutant:
      return "mutant";
  }
  return "?";
}

}  // namespace sgdc::conformance::builtin