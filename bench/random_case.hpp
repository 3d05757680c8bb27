#pragma once
// A reproducible unit-normal case of a given shape, for benchmarks.

#include <random>

#include "sgdc/reference/case.hpp"

namespace sgdc::bench {

using reference::Case;

/// Inputs drawn from N(0, 1) (lr 0.01), the same for the same shape and seed.
inline Case random_case(int n, int d, int k, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto draw = [&](std::size_t count) {
    std::vector<float> v(count);
    for (float& f : v) f = normal(rng);
    return v;
  };
  Case c;
  c.n = n;
  c.d = d;
  c.k = k;
  c.kernel = draw(static_cast<std::size_t>(d) * k);
  c.bias = draw(static_cast<std::size_t>(k));
  c.x = draw(static_cast<std::size_t>(n) * d);
  c.y = draw(static_cast<std::size_t>(n) * k);
  c.lr = 0.01f;
  return c;
}

/// random_case's inputs in a heavy-ball momentum step (momentum 0.9, no dampening or
/// decay) with a carried buffer.
inline Case random_momentum_case(int n, int d, int k) {
  Case c = random_case(n, d, k);
  c.optimizer.kind = reference::Optimizer::Kind::momentum;
  c.optimizer.momentum = 0.9f;
  c.step = 10;
  const Case buffer = random_case(n, d, k, 2);
  c.momentum_kernel = buffer.kernel;
  c.momentum_bias = buffer.bias;
  return c;
}

/// random_case's inputs in an AdamW step (b1 0.9, b2 0.999, eps 1e-8, decoupled decay
/// 0.01) at step 10 with carried moments: the parameters through the square root,
/// enclosed (docs/error-model.md, sections 14 and 15).
inline Case random_adam_case(int n, int d, int k) {
  Case c = random_case(n, d, k);
  c.optimizer.kind = reference::Optimizer::Kind::adam;
  c.optimizer.b1 = 0.9f;
  c.optimizer.b2 = 0.999f;
  c.optimizer.eps = 1e-8f;
  c.optimizer.weight_decay = 0.01f;
  c.optimizer.decay = reference::Optimizer::Decay::decoupled;
  c.step = 10;
  const Case first = random_case(n, d, k, 2), second = random_case(n, d, k, 3);
  c.momentum_kernel = first.kernel;
  c.momentum_bias = first.bias;
  c.second_moment_kernel = second.kernel;
  c.second_moment_bias = second.bias;
  for (auto* v : {&c.second_moment_kernel, &c.second_moment_bias})
    for (float& f : *v) f *= f;  // squares: >= 0
  return c;
}

/// random_case's inputs in a plain SGD step clipped as torch clips (max_norm 0.1, eps
/// 1e-6): below these cases' gradient norms at every benchmarked shape, so clipping is
/// active.
inline Case random_clipped_case(int n, int d, int k) {
  Case c = random_case(n, d, k);
  c.clip = reference::Clipping{0.1f, 1e-6f};
  return c;
}

}  // namespace sgdc::bench
