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

}  // namespace sgdc::bench
