#pragma once
// The small random draws that the case generators (generators.cpp, declared_recipe.cpp)
// share. Internal to sgdc::properties.

#include <cmath>
#include <random>

namespace sgdc::properties::detail {

/// Uniform in [lo, hi).
inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

/// True once in `n` draws.
inline bool one_in(std::mt19937_64& rng, int n) {
  return std::uniform_int_distribution<int>(0, n - 1)(rng) == 0;
}

/// Log-uniform in [lo, hi): e to a uniform draw in [log lo, log hi).
inline double log_uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::exp(uniform(rng, std::log(lo), std::log(hi)));
}

}  // namespace sgdc::properties::detail
