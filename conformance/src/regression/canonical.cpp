#include "sgdc/conformance/regression/canonical.hpp"
#include "sgdc/reference/worked_example.hpp"

#include <cmath>

#include "sgdc/conformance/regression/derive.hpp"

namespace sgdc::conformance::regression {

namespace {

reference::Case make(int n, int d, int k, int shards, float lr, std::vector<float> kernel,
                     std::vector<float> bias, std::vector<float> x, std::vector<float> y,
                     std::int64_t step = 0) {
  reference::Case c;
  c.n = n;
  c.d = d;
  c.k = k;
  c.num_shards = shards;
  c.lr = lr;
  c.kernel = std::move(kernel);
  c.bias = std::move(bias);
  c.x = std::move(x);
  c.y = std::move(y);
  c.step = step;
  return c;
}

// Readable values with a pattern that no row or column repeats: quarters in -2 .. 2.
std::vector<float> pattern(int count, int a, int b) {
  std::vector<float> v;
  for (int i = 0; i < count; ++i) v.push_back(static_cast<float>((a * i + b) % 17 - 8) * 0.25f);
  return v;
}

// Each value squared: a second moment, or a sum of squares, like the parameters'.
std::vector<float> squares(std::vector<float> v) {
  for (float& x : v) x *= x;
  return v;
}

// The case's optimizer at its first step: step 0, no state carried.
reference::Case first_step(reference::Case c) {
  c.step = 0;
  c.momentum_kernel.clear();
  c.momentum_bias.clear();
  c.second_moment_kernel.clear();
  c.second_moment_bias.clear();
  return c;
}

// Large terms whose sum nearly cancels: y within one ULP of fl(x W + b).
reference::Case heavy_cancellation() {
  reference::Case c = make(
      4, 3, 2, 2, 0.01f, {1021.5f, -997.25f, 1013.75f, 1003.0f, -1019.125f, 988.5f}, {-3.5f, 7.25f},
      {1009.0f, 1017.5f, -993.25f, -1001.75f, 1007.5f, 995.0f, 1011.25f, -999.5f, 1005.75f,
       991.125f, 1015.0f, -1003.5f},
      std::vector<float>(8, 0.0f));
  for (int i = 0; i < c.n; ++i) {
    for (int j = 0; j < c.k; ++j) {
      double pred = c.bias[j];
      for (int l = 0; l < c.d; ++l) pred += double(c.x[i * c.d + l]) * c.kernel[l * c.k + j];
      const float t = static_cast<float>(pred);
      c.y[i * c.k + j] = std::nextafter(t, (i + j) % 2 ? INFINITY : -INFINITY);
    }
  }
  return c;
}

Fixture canonical(std::string name, std::string description, const reference::Case& c,
                  const reference::ErrorModel& arithmetic = {}) {
  Provenance p;
  p.generator_version = SGDC_VERSION;
  p.mode = "canonical";
  p.parameters["set"] = "canonical";
  return derive_fixture(std::move(name), std::move(description), c, std::move(p), arithmetic);
}

}  // namespace

std::vector<Fixture> canonical_fixtures() {
  std::vector<Fixture> out;
  out.push_back(canonical(
      "worked-example",
      "the worked example of docs/spec/step.md: gW = 5, gb = 3, loss 2.5 (before the update), "
      "W' = 0.5, b' = -0.3 with the float32 lr 0.100000001490116",
      reference::worked_example()));
  out.push_back(canonical(
      "uneven-shards",
      "N % S != 0 and D != K: 7 rows over 3 shards, 3 inputs, 2 outputs; a mean over shard "
      "means or dropped remainder rows shows here",
      make(7, 3, 2, 3, 0.05f, pattern(6, 5, 3), pattern(2, 7, 1), pattern(21, 3, 2),
           pattern(14, 11, 4), 41)));
  out.push_back(canonical(
      "more-shards-than-rows",
      "S > N and D > K: 2 rows over 5 shards, 6 inputs, 1 output (empty shards)",
      make(2, 6, 1, 5, 0.125f, pattern(6, 2, 9), {0.75f}, pattern(12, 5, 7), {1.5f, -2.0f})));
  out.push_back(
      canonical("wide-output",
                "D < K and N % S != 0: 3 rows over 2 shards, 1 input, 4 outputs; N*K = 12 makes "
                "2/(N*K) inexact in binary",
                make(3, 1, 4, 2, 0.3f, {0.5f, -1.25f, 2.0f, 0.75f}, {0.25f, 0.0f, -0.5f, 1.0f},
                     {1.5f, -0.75f, 2.25f}, pattern(12, 7, 5), 7)));
  out.push_back(
      canonical("heavy-cancellation",
                "terms near 1e6 whose sum cancels to within one ULP: each residual is tiny next to "
                "the terms that make it, so only the bound's |terms| part allows the error",
                heavy_cancellation()));
  out.push_back(
      canonical("near-overflow",
                "residuals near 1.2e19: the loss (1.44e38) and the sum of squares (2.88e38) "
                "sit just below float32's largest value 3.4e38, gradients near 2.4e19",
                make(2, 1, 1, 2, 0.25f, {1.2e19f}, {0.0f}, {1.0f, 1.0f}, {0.0f, 0.0f})));
  out.push_back(canonical(
      "tiny-updates",
      "lr = 2^-21: every parameter moves by about 5e-7 of itself, a few ULPs; an update "
      "skipped as negligible shows here",
      make(3, 2, 2, 1, 0x1p-21f, {1.0f, -1.5f, 0.75f, 2.0f}, {0.5f, -1.0f},
           {1.0f, 0.5f, -0.25f, 1.5f, 2.0f, -1.0f}, {-0.5f, 1.0f, 0.25f, -2.0f, 1.5f, 0.0f})));
  out.push_back(canonical(
      "loss-overflows",
      "the exact loss 2^128 is beyond float32's range: it rounds to +inf, and +inf or NaN "
      "is acceptable for the outputs that may overflow",
      make(1, 1, 1, 1, 0x1p-70f, {0x1p63f}, {0x1p63f}, {1.0f}, {0.0f})));
  out.push_back(canonical(
      "subnormal-outputs",
      "normal inputs near 2^-126 whose step lands in the subnormal range: gradual "
      "underflow rounds to multiples of 2^-149, flush-to-zero gives 0",
      make(2, 1, 1, 1, 0.375f, {0x1p-126f}, {0x1p-149f}, {0.75f, -0.5f}, {0x1p-130f, 0x1p-140f})));
  out.push_back(canonical(
      "subnormal-inputs",
      "subnormal kernel, bias, x and y elements next to normal ones: a DAZ implementation "
      "reads them as 0",
      make(2, 2, 1, 2, 1.0f, {0x1p-130f, 0x1.4p-135f}, {-0x1p-147f},
           {0x1p-149f, 0x1.8p-140f, 3.0f, -0x1p-145f}, {0x1p-128f, -0x1p-149f})));
  out.push_back(canonical(
      "zero-lr-signed-zeros",
      "lr = 0 leaves every parameter unchanged; -0 in kernel, bias and targets; a step "
      "counter beyond a signed 32-bit integer (2^31 + 5)",
      make(2, 2, 2, 1, 0.0f, {-0.0f, 1.5f, 0.25f, -0.0f}, {-0.0f, 0.5f}, {1.0f, -2.0f, 0.5f, 0.0f},
           {-0.0f, 1.0f, 2.0f, -0.0f}, (std::int64_t{1} << 31) + 5)));
  out.push_back(canonical(
      "nonfinite-inputs",
      "a NaN in x and an infinity in y: every output that reads them must be NaN or +-inf, "
      "the rest are bounded as usual (an implementation may also reject the case)",
      make(2, 2, 2, 1, 0.1f, {0.5f, -1.0f, 0.25f, 2.0f}, {0.0f, 1.0f}, {1.0f, NAN, 0.5f, -1.5f},
           {0.25f, 0.5f, INFINITY, -1.0f})));
  {
    // A carried buffer, Nesterov and decoupled decay: every option a momentum step has
    // but dampening (which Nesterov excludes).
    reference::Case c = make(3, 2, 2, 2, 0.0625f, pattern(4, 3, 5), pattern(2, 5, 2),
                             pattern(6, 7, 1), pattern(6, 2, 11), 9);
    c.optimizer.kind = reference::Optimizer::Kind::momentum;
    c.optimizer.momentum = 0.875f;
    c.optimizer.nesterov = true;
    c.optimizer.weight_decay = 0.125f;
    c.optimizer.decay = reference::Optimizer::Decay::decoupled;
    c.momentum_kernel = pattern(4, 5, 8);
    c.momentum_bias = pattern(2, 3, 6);
    out.push_back(canonical(
        "momentum-nesterov-decoupled",
        "SGD with Nesterov momentum 0.875, decoupled weight decay 0.125 and a carried buffer "
        "(the buffer after the step, mu buf + g, is an output)",
        c));
    // The same step with the bias in a parameter group of its own (format version 2).
    c.optimizer.nesterov = false;
    c.optimizer.dampening = 0.25f;
    c.optimizer.decay = reference::Optimizer::Decay::coupled;
    c.bias_group = reference::ParamGroup{.lr = 0.25f, .weight_decay = 0.0f};
    out.push_back(canonical(
        "momentum-bias-group",
        "heavy-ball momentum with dampening 0.25 and coupled decay 0.125 for the kernel; the "
        "bias in a parameter group of its own, lr 0.25 and no weight decay (format version 2)",
        c));
  }
  {
    // AdamW with carried moments at step 9 (t = 10), and Adam with coupled decay, optax's
    // eps_root and fresh state: the parameters irrational, their 40 digits decided by the
    // enclosure (format version 2).
    reference::Case c = make(3, 2, 2, 2, 0.03125f, pattern(4, 3, 5), pattern(2, 5, 2),
                             pattern(6, 7, 1), pattern(6, 2, 11), 9);
    c.optimizer.kind = reference::Optimizer::Kind::adam;
    c.optimizer.b1 = 0.875f;
    c.optimizer.b2 = 0.9921875f;
    c.optimizer.eps = 0x1p-20f;
    c.optimizer.weight_decay = 0.125f;
    c.optimizer.decay = reference::Optimizer::Decay::decoupled;
    c.momentum_kernel = pattern(4, 5, 8);
    c.momentum_bias = pattern(2, 3, 6);
    c.second_moment_kernel = squares(pattern(4, 7, 3));
    c.second_moment_bias = squares(pattern(2, 11, 9));
    out.push_back(
        canonical("adamw-carried-state",
                  "AdamW (decoupled decay 0.125) with carried moments at step 9: bias corrections "
                  "1 - b^10, parameters through the square root (format version 2)",
                  c));
    c = first_step(c);
    c.optimizer.decay = reference::Optimizer::Decay::coupled;
    c.optimizer.eps_root = 0x1p-16f;
    out.push_back(canonical(
        "adam-coupled-fresh-eps-root",
        "Adam's first step with coupled decay (torch.optim.Adam's) and eps_root 2^-16 inside "
        "the square root (optax's): the moments start from zero (format version 2)",
        c));
    // Adam's first step at lr 0x1.fep127 with a zero gradient (y = b, x = 0): the update is
    // 0, but torch's step size lr / (1 - b1) = 8 lr passes float32's range, so the
    // parameters may be NaN, or the step refused (docs/error-model.md, section 7).
    reference::Case z = make(2, 2, 2, 1, 0x1.fep127f, pattern(4, 3, 5), {0.5f, -0.25f},
                             std::vector<float>(4, 0.0f), {0.5f, -0.25f, 0.5f, -0.25f});
    z.optimizer = c.optimizer;
    z.optimizer.eps_root = 0.0f;
    z.optimizer.weight_decay = 0.0f;  // nothing added to the zero gradient
    out.push_back(canonical("adam-step-size-overflows",
                            "Adam's first step at lr 0x1.fep127 with a zero gradient: torch's step "
                            "size lr / (1 - b1) passes float32's range, so the parameters may "
                            "overflow (NaN) or the step be refused (format version 2)",
                            z));
  }
  {
    // Adagrad as torch.optim.Adagrad runs it: eps outside the root, coupled decay, a carried
    // sum at step 4; and as optax.adagrad does: eps inside the root, the sum's first step
    // from initial_accumulator_value 0.1 (format version 2).
    reference::Case c = make(3, 2, 2, 2, 0.125f, pattern(4, 3, 5), pattern(2, 5, 2),
                             pattern(6, 7, 1), pattern(6, 2, 11), 4);
    c.optimizer.kind = reference::Optimizer::Kind::adagrad;
    c.optimizer.eps = 0x1p-20f;
    c.optimizer.weight_decay = 0.125f;
    c.optimizer.decay = reference::Optimizer::Decay::coupled;
    c.second_moment_kernel = squares(pattern(4, 7, 3));
    c.second_moment_bias = squares(pattern(2, 11, 9));
    out.push_back(canonical(
        "adagrad-torch-carried-sum",
        "Adagrad as torch.optim.Adagrad has it: eps 2^-20 outside the square root, coupled "
        "decay 0.125, a carried sum of squares at step 4 (format version 2)",
        c));
    // torch's first step from a sum of its own initial_accumulator_value, with an eps
    // large enough that inside the root it would give another step.
    reference::Case first = first_step(c);
    first.optimizer.initial_accumulator_value = 0.5f;
    first.optimizer.eps = 0.25f;
    out.push_back(canonical(
        "adagrad-torch-initial-value",
        "torch.optim.Adagrad's first step with initial_accumulator_value 0.5 (the sum starts "
        "there, not at 0) and eps 0.25 outside the square root (format version 2)",
        first));
    c = first_step(c);
    c.optimizer.eps = 0.0f;
    c.optimizer.eps_root = 0x1p-20f;
    c.optimizer.weight_decay = 0.0f;
    c.optimizer.initial_accumulator_value = 0.1f;
    out.push_back(canonical(
        "adagrad-optax-fresh",
        "Adagrad as optax.adagrad has it: eps 2^-20 inside the square root, the first step's "
        "sum from initial_accumulator_value 0.1 (format version 2)",
        c));
  }
  {
    // Global-norm clipping (step spec 1.7): torch's clip_grad_norm_ before Nesterov
    // momentum with coupled decay and a carried buffer, and optax's clip_by_global_norm
    // before AdamW's first step; both active, the norm irrational, so the parameters and
    // the state are too, their 40 digits decided by the enclosure (format version 2).
    reference::Case c = make(3, 2, 2, 2, 0.125f, pattern(4, 3, 5), pattern(2, 5, 2),
                             pattern(6, 7, 1), pattern(6, 2, 11), 3);
    c.optimizer.kind = reference::Optimizer::Kind::momentum;
    c.optimizer.momentum = 0.875f;
    c.optimizer.nesterov = true;
    c.optimizer.weight_decay = 0.0625f;
    c.optimizer.decay = reference::Optimizer::Decay::coupled;
    c.momentum_kernel = pattern(4, 5, 8);
    c.momentum_bias = pattern(2, 3, 6);
    c.clip = reference::Clipping{0.5f, 1e-6f};
    out.push_back(canonical(
        "momentum-clipped-torch",
        "Nesterov momentum 0.875 with coupled decay 0.0625 and a carried buffer, the gradients "
        "clipped to a global norm of 0.5 as torch's clip_grad_norm_ does (eps 1e-6): the "
        "reported gradients the loss's, the update from the clipped ones (format version 2)",
        c));
    reference::Case a = first_step(c);
    a.optimizer = reference::Optimizer{};
    a.optimizer.kind = reference::Optimizer::Kind::adam;
    a.optimizer.b1 = 0.875f;
    a.optimizer.b2 = 0.9921875f;
    a.optimizer.eps = 0x1p-20f;
    a.optimizer.weight_decay = 0.125f;
    a.optimizer.decay = reference::Optimizer::Decay::decoupled;
    a.clip = reference::Clipping{0.25f, 0.0f};
    out.push_back(canonical(
        "adamw-clipped-optax",
        "AdamW's first step (decoupled decay 0.125), the gradients clipped to a global norm of "
        "0.25 as optax.clip_by_global_norm does (eps 0): both moments and the parameters from "
        "the clipped gradients (format version 2)",
        a));
  }
  {
    // FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32) over two
    // ranks of uneven rows, momentum on float32 master weights.
    // Quarters times 1 + 2^-10 + 2^-12: not bfloat16 values, so the casts round.
    auto off_grid = [](std::vector<float> v) {
      for (float& e : v) e *= 1.0f + 0x1p-10f + 0x1p-12f;
      return v;
    };
    reference::Case c =
        make(5, 3, 2, 2, 0.0625f, off_grid(pattern(6, 5, 3)), off_grid(pattern(2, 7, 1)),
             off_grid(pattern(15, 3, 2)), pattern(10, 11, 4), 7);
    c.optimizer.kind = reference::Optimizer::Kind::momentum;
    c.optimizer.momentum = 0.9f;
    c.momentum_kernel = pattern(6, 5, 8);
    c.momentum_bias = pattern(2, 3, 6);
    reference::ErrorModel stages;
    stages.stages.param = reference::formats::bfloat16;
    out.push_back(canonical(
        "momentum-bf16-params",
        "momentum 0.9 with a carried buffer, in FSDP2's mixed precision stages: x, W, b cast to "
        "bfloat16, each of 2 ranks' gradients (3 and 2 rows) rounded to it, summed in float32, "
        "float32 master weights; exact holds the value the stages determine (format version 2)",
        c, stages));
  }
  return out;
}

}  // namespace sgdc::conformance::regression