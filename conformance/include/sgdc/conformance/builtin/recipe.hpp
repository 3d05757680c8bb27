#pragma once
/// \file
/// How a built-in float32 step computes: its summation order, accumulator, where the
/// scale is applied, and (for the mutant catalogue) which single bug it carries.

#include "sgdc/reference/error_model.hpp"

namespace sgdc::conformance::builtin {

/// Order in which a reduction adds its terms.
enum class Order {
  eigen,       ///< Eigen's own float32 products and reductions (the embedded default)
  sequential,  ///< left to right
  reversed,    ///< right to left
  pairwise,    ///< recursive halves, as numpy's sum does
  sharded,     ///< rows split over num_shards uneven parts, each summed, then reduced
};

/// One deliberate bug of the mutant catalogue (docs/mutants.md); `none` for a correct step.
enum class Bug {
  none,
  post_update_loss,                 ///< returns the loss evaluated after the update
  mean_over_batch,                  ///< divides by N instead of N*K
  grad_times_shards,                ///< sums per-shard mean gradients instead of averaging them
  drop_remainder_rows,              ///< uses only floor(N/S)*S rows
  mean_of_shard_means,              ///< averages per-shard means, wrong when shards are uneven
  half_precision_grad,              ///< gradients rounded to float16
  reshape_not_transpose,            ///< x.reshape(D, N) where x.T belongs
  wrong_sign,                       ///< p + lr*g
  missing_factor_two,               ///< gradient of r^2 taken as r
  bias_not_updated,                 ///< b' = b
  lr_twice,                         ///< p - lr*(lr*g)
  step_not_advanced,                ///< step counter returned unchanged
  nondeterministic,                 ///< reduction order differs from call to call
  skip_tiny_updates,                ///< leaves p when |lr*g| < 1e-6 |p|
  unbiased_mean,                    ///< divides by N*K - 1
  rows_past_16_dropped,             ///< a kernel that silently reads only the first 16 batch rows
  chunked_mean_32,                  ///< equal-weight mean of the means over chunks of 32 rows
  columns_past_8_dropped,           ///< input columns past the last multiple of 8 left out (D > 8)
  float32_counter,                  ///< step counter kept in float32: stops advancing at 2^24
  int32_counter,                    ///< step counter kept in int32: wraps to negative at 2^31
  fresh_buffer_every_step,          ///< the momentum buffer started afresh at every step
  dampening_on_first_step,          ///< a fresh buffer dampened: (1 - dampening) g, not g
  nesterov_without_lookahead,       ///< Nesterov's direction from the old buffer: g + mu buf
  decay_convention_swapped,         ///< coupled weight decay applied decoupled, and back
  buffer_shared,                    ///< the bias's buffer read from the kernel's
  adam_bias_correction_off_by_one,  ///< Adam's bias correction with t = step, not step + 1
  adam_eps_inside,                  ///< sqrt(vh + eps) where sqrt(vh + eps_root) + eps belongs
  adam_b2_on_gradient,              ///< v' = b2 v + (1 - b2) ge: the gradient, not its square
  adam_decay_in_moment,             ///< decoupled decay added to the first moment's gradient
  adam_moments_bfloat16,            ///< both moments kept in bfloat16, undeclared
  adam_state_not_advanced,          ///< the moments returned as they came in
  adam_decay_convention_swapped,    ///< Adam's coupled decay applied decoupled (AdamW), and back
  sum_not_mean,                     ///< loss and gradients summed over the N*K elements
  clipped_gradients,                ///< gradients clipped to a global norm of 1 (undeclared)
  momentum_on_plain_sgd,            ///< a plain-SGD case stepped as Nesterov's first step
  decay_in_loss,                    ///< weight decay also in the loss: in the reported gradient
  gradients_accumulate,             ///< each plain-SGD gradient added to the last call's
  no_decay_on_bias,                 ///< the bias stepped without weight decay (a param group)
  bias_group_ignored,               ///< the bias stepped with the kernel's hyperparameters
  adagrad_eps_swapped,              ///< Adagrad's eps on the other side of the square root
  adagrad_sum_reset_every_step,     ///< Adagrad's sum started afresh at every step
  adagrad_initial_value_ignored,    ///< a fresh sum of 0, not initial_accumulator_value
  clip_not_applied,                 ///< clipping declared, the gradients never clipped
  clip_local_shard_norm,            ///< each shard clipped by the norm of its own part
  clip_per_parameter,               ///< kernel and bias each clipped by its own norm
  clip_after_decay,                 ///< weight decay added to the gradients before clipping
  clip_reported_gradients,          ///< the clipped gradients reported, not the loss's
  clip_eps_swapped,                 ///< the other library's eps: 1e-6 for 0, and back
};

/// How a built-in computes Adam's update (docs/error-model.md, section 14).
enum class AdamForm {
  textbook,     ///< float32, each operation rounded; bias corrections 1 - powf(b, t), divisions
  torch,        ///< torch.optim.Adam(W): lerp, fma, corrections in double, lr/bc1 folded in
  optax_fused,  ///< optax.adam(w) under jit: fused multiply-adds, corrections in float32 as
                ///< reciprocals times the moments
};

/// How a built-in computes Adagrad's update (docs/error-model.md, section 16).
enum class AdagradForm {
  torch,  ///< torch.optim.Adagrad: addcmul (an FMA) into the sum, sqrt + eps, addcdiv
  optax,  ///< optax.adagrad under jit: rsqrt(sum + eps) times the gradient, fma(-lr, u, p)
};

/// A built-in implementation's way of computing the step.
struct Recipe {
  Order order = Order::eigen;
  bool wide = false;         ///< accumulate in double, round each output once
  bool fma_update = false;   ///< p' = fma(-lr, g, p), one rounding
  bool scale_first = false;  ///< scale residuals by 2/(N K) before reducing (as autodiff does)
  bool wide_state = false;   ///< the momentum buffer (Adam: moments) and direction in double
  AdamForm adam = AdamForm::textbook;
  AdagradForm adagrad = AdagradForm::torch;
  /// The products' inputs (x and W in x W, x and the residual's gradient in x^T r) rounded
  /// to this format, the products accumulated in float32: what tensor cores do.
  reference::Format matmul_inputs = reference::formats::float32;
  /// Mixed precision by stage, as computed (the declaration may say otherwise): all
  /// float32 for none.
  reference::Stages stages{};
  Bug bug = Bug::none;
};

}  // namespace sgdc::conformance::builtin