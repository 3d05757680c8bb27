#pragma once
/// \file
/// The shapes generated cases take: small ones, and ones with a dimension at or next to a
/// power of two, where kernels tile and break in their remainder loops (2^j - 1, 2^j,
/// 2^j + 1), the others kept small under a per-case budget. A run draws its shapes from a
/// pool chosen by its seed, so that a compiled framework pays few compilations; a user's
/// own layer shapes replace the pool.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace sgdc::properties {

/// N rows, D input features, K output features.
struct Shape {
  int n = 1, d = 1, k = 1;
  /// n * d * k: the multiply-adds of a step, what a case costs.
  std::int64_t cost() const { return std::int64_t{n} * d * k; }
  friend bool operator==(const Shape&, const Shape&) = default;
};

/// "NxDxK", and back; nothing for text that is not three positive integers joined by 'x'.
std::string to_string(const Shape& s);
std::optional<Shape> parse_shape(std::string_view text);

/// How shapes are drawn.
struct ShapeOptions {
  int max_rows = 512;      ///< the largest N a tile shape takes
  int max_features = 257;  ///< the largest D or K a tile shape takes
  /// The most multiply-adds (n * d * k) of a drawn shape: its small dimensions shrink to
  /// fit. A user's exact shapes are exempt.
  std::int64_t budget = std::int64_t{1} << 16;
  int pool = 12;             ///< distinct shapes a run draws from; 0: a new shape every case
  std::vector<Shape> exact;  ///< run at these shapes alone (`--shape`)
};

/// One shape: 1x1x1 or all dimensions small (1..12) in three draws of eight, else one of
/// N, D, K (in proportion 4:3:2) at 2^j - 1, 2^j or 2^j + 1 for j >= 3 within its
/// maximum, the others 1..8, all within the budget.
Shape draw_shape(std::mt19937_64& rng, const ShapeOptions& options);

/// The shapes a run with `seed` draws from, cheapest first: the exact shapes when there
/// are any; else `options.pool` shapes: 1x1x1, three in eight small, the rest tile shapes
/// of N, D, K (4:3:2), each dimension's tiles spread over the powers of two in its range
/// (one band of exponents each) and over both sides of the boundary (offsets -1, +1, 0 in
/// turn); empty for pool 0 (each case draws its own).
std::vector<Shape> shape_pool(std::uint64_t seed, const ShapeOptions& options);

}  // namespace sgdc::properties
