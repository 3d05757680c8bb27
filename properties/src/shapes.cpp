#include "sgdc/properties/shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace sgdc::properties {

namespace {

using Rng = std::mt19937_64;

int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// The exponents j >= 3 with 2^j - 1 <= most.
std::vector<int> exponents(int most) {
  std::vector<int> out;
  for (int j = 3; j < 30 && (1 << j) - 1 <= most; ++j) out.push_back(j);
  return out;
}

// 2^j + offset, within 1..most.
int tile_size(int j, int offset, int most) { return std::clamp((1 << j) + offset, 1, most); }

// Shrinks the dimensions other than `keep` (0 n, 1 d, 2 k; -1 none) until the budget holds.
Shape within(Shape s, std::int64_t budget, int keep) {
  int* dims[] = {&s.n, &s.d, &s.k};
  for (int i = 0; i < 3 && s.cost() > budget; ++i) {
    if (i == keep) continue;
    const std::int64_t rest = s.cost() / *dims[i];
    *dims[i] =
        static_cast<int>(std::max<std::int64_t>(1, budget / std::max<std::int64_t>(1, rest)));
  }
  return s;
}

Shape small_shape(Rng& rng) {
  return {uniform(rng, 1, 12), uniform(rng, 1, 12), uniform(rng, 1, 12)};
}

// A shape with dimension `which` (0 n, 1 d, 2 k) of size `size`, the others small.
Shape tile_shape(Rng& rng, const ShapeOptions& o, int which, int size) {
  Shape s{uniform(rng, 1, 8), uniform(rng, 1, 8), uniform(rng, 1, 8)};
  int* dims[] = {&s.n, &s.d, &s.k};
  *dims[which] = size;
  return within(s, o.budget, which);
}

int most_of(const ShapeOptions& o, int which) { return which == 0 ? o.max_rows : o.max_features; }

// N, D, K for tile shapes in proportion 4:3:2: the batch dimension is where kernels
// tile most often.
constexpr int tile_cycle[] = {0, 1, 2, 0, 1, 0, 2, 1, 0};

}  // namespace

std::string to_string(const Shape& s) { return fmt::format("{}x{}x{}", s.n, s.d, s.k); }

std::optional<Shape> parse_shape(std::string_view text) {
  Shape s;
  int* dims[] = {&s.n, &s.d, &s.k};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    const auto [next, ec] = std::from_chars(p, end, *dims[i]);
    if (ec != std::errc() || *dims[i] < 1) return std::nullopt;
    p = next;
    if (i < 2) {
      if (p == end || *p != 'x') return std::nullopt;
      ++p;
    }
  }
  if (p != end) return std::nullopt;
  return s;
}

Shape draw_shape(Rng& rng, const ShapeOptions& o) {
  const int kind = uniform(rng, 0, 7);
  if (kind == 0) return {};
  if (kind < 3) return within(small_shape(rng), o.budget, -1);
  const int which = tile_cycle[uniform(rng, 0, 8)];
  const std::vector<int> js = exponents(most_of(o, which));
  if (js.empty()) return within(small_shape(rng), o.budget, -1);
  const int j = js[std::uniform_int_distribution<std::size_t>(0, js.size() - 1)(rng)];
  return tile_shape(rng, o, which, tile_size(j, uniform(rng, -1, 1), most_of(o, which)));
}

std::vector<Shape> shape_pool(std::uint64_t seed, const ShapeOptions& o) {
  if (!o.exact.empty()) {
    std::vector<Shape> out = o.exact;
    std::stable_sort(out.begin(), out.end(),
                     [](const Shape& a, const Shape& b) { return a.cost() < b.cost(); });
    return out;
  }
  if (o.pool <= 0) return {};
  Rng rng(seed ^ 0x5368617065506f6fULL);  // its own stream: the values' draws stay as they were
  std::vector<Shape> out{Shape{}};
  const int small = (o.pool * 3) / 8;
  for (int i = 0; i < small && static_cast<int>(out.size()) < o.pool; ++i)
    out.push_back(within(small_shape(rng), o.budget, -1));
  // The tile shapes, stratified per dimension so that a pool covers the scales and both
  // sides of a boundary: the t-th of a dimension's m tiles takes its power of two from the
  // t-th of m bands of the exponents, and its offset from the cycle -1, +1, 0 started at
  // random (so two tiles in a row are never both aligned).
  int tiles[3] = {0, 0, 0};
  for (int i = 0; static_cast<int>(out.size()) + i < o.pool; ++i)
    ++tiles[tile_cycle[i % std::size(tile_cycle)]];
  for (int which = 0; which < 3; ++which) {
    const std::vector<int> js = exponents(most_of(o, which));
    const int m = tiles[which];
    const int start = uniform(rng, 0, 2);
    for (int t = 0; t < m; ++t) {
      if (js.empty()) {
        out.push_back(within(small_shape(rng), o.budget, -1));
        continue;
      }
      // Band t of m over the exponents: [t * size / m, (t + 1) * size / m), never empty.
      const std::size_t lo = t * js.size() / m, hi = std::max(lo + 1, (t + 1) * js.size() / m);
      const int j =
          js[std::uniform_int_distribution<std::size_t>(lo, std::min(hi, js.size()) - 1)(rng)];
      constexpr int offsets[] = {-1, 1, 0};
      out.push_back(
          tile_shape(rng, o, which, tile_size(j, offsets[(start + t) % 3], most_of(o, which))));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Shape& a, const Shape& b) { return a.cost() < b.cost(); });
  return out;
}

}  // namespace sgdc::properties
