#include "sgdc/properties/generators.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <random>

#include "sgdc/reference/float32.hpp"

namespace sgdc::properties {

namespace {

using Rng = std::mt19937_64;

double uniform(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

float draw_value(Rng& rng, Spread spread) {
  if (std::uniform_int_distribution<int>(0, 15)(rng) == 0) return 0.0f;
  const double sign = (rng() & 1u) ? -1.0 : 1.0;
  switch (spread) {
    case Spread::unit:
      return static_cast<float>(std::normal_distribution<double>(0.0, 1.0)(rng));
    case Spread::wide:
      return static_cast<float>(sign * std::pow(10.0, uniform(rng, -3.0, 3.0)));
    case Spread::extreme:
      return static_cast<float>(sign * std::exp2(uniform(rng, -60.0, 60.0)));
  }
  return 0.0f;
}

float draw_lr(Rng& rng, LrRegime regime) {
  if (regime == LrRegime::mixed) {
    static constexpr LrRegime choices[] = {LrRegime::usual, LrRegime::usual, LrRegime::large,
                                           LrRegime::tiny};
    regime = choices[std::uniform_int_distribution<int>(0, 3)(rng)];
  }
  switch (regime) {
    case LrRegime::large:
      return static_cast<float>(std::pow(10.0, uniform(rng, 0.0, 2.0)));
    case LrRegime::tiny:
      return static_cast<float>(std::pow(10.0, uniform(rng, -9.0, -6.0)));
    default:
      return static_cast<float>(std::pow(10.0, uniform(rng, -4.0, 0.0)));
  }
}

// A counter value where counters fail in one case of three (2^24 - 1, 2^24, 2^31 - 1,
// 2^31, the last before the end, the end itself), small in one of six, else log-uniform
// over the whole range.
std::int64_t draw_step(Rng& rng, const reference::Counter& counter) {
  const std::int64_t most = reference::largest_drawn_count(counter);
  const int kind = std::uniform_int_distribution<int>(0, 5)(rng);
  if (kind < 2) {
    const std::int64_t edges[] = {(std::int64_t{1} << 24) - 1,
                                  std::int64_t{1} << 24,
                                  (std::int64_t{1} << 31) - 1,
                                  std::int64_t{1} << 31,
                                  most - 1,
                                  most};
    std::vector<std::int64_t> in_range;
    for (std::int64_t e : edges)
      if (e >= 0 && e <= most) in_range.push_back(e);
    return in_range[std::uniform_int_distribution<std::size_t>(0, in_range.size() - 1)(rng)];
  }
  if (kind == 2)
    return std::uniform_int_distribution<std::int64_t>(0, std::min<std::int64_t>(most, 1000))(rng);
  const double bits = std::log2(static_cast<double>(most) + 1.0);
  const double v = std::floor(std::exp2(uniform(rng, 0.0, bits))) - 1.0;
  return std::clamp<std::int64_t>(v >= 0x1p63 ? most : static_cast<std::int64_t>(v), 0, most);
}

int draw_dim(Rng& rng, const CaseProfile& p, int size) {
  const int hi = p.min_dim + (std::max(0, p.max_dim - p.min_dim) * std::min(size, 100)) / 100;
  return std::uniform_int_distribution<int>(p.min_dim, std::max(p.min_dim, hi))(rng);
}

reference::Case draw_case(Rng& rng, const CaseSpace& space, const CaseProfile& p, int size) {
  reference::Case c;
  c.n = draw_dim(rng, p, size);
  c.d = draw_dim(rng, p, size);
  c.k = draw_dim(rng, p, size);
  c.num_shards = std::uniform_int_distribution<int>(1, std::max(1, space.max_shards))(rng);
  c.step = draw_step(rng, space.counter);
  auto fill = [&](std::vector<float>& v, std::size_t count) {
    v.resize(count);
    for (float& f : v) f = draw_value(rng, p.spread);
  };
  fill(c.kernel, static_cast<std::size_t>(c.d) * c.k);
  fill(c.bias, static_cast<std::size_t>(c.k));
  fill(c.x, static_cast<std::size_t>(c.n) * c.d);
  fill(c.y, static_cast<std::size_t>(c.n) * c.k);
  c.lr = draw_lr(rng, p.lr);
  if (p.cancellation) {
    // y = x W + b to float32 (computed in double), then nudged by a few ULPs, so that
    // r is tiny next to the terms that make it.
    for (int i = 0; i < c.n; ++i) {
      for (int j = 0; j < c.k; ++j) {
        double pred = c.bias[j];
        for (int l = 0; l < c.d; ++l) pred += double(c.x[i * c.d + l]) * c.kernel[l * c.k + j];
        float t = static_cast<float>(pred);
        for (int s = std::uniform_int_distribution<int>(-3, 3)(rng); s != 0; s += s > 0 ? -1 : 1)
          t = std::nextafter(t, s > 0 ? INFINITY : -INFINITY);
        c.y[i * c.k + j] = t;
      }
    }
  }
  return c;
}

// --- shrinking: structure first, then values -------------------------------------

reference::Case drop_row(const reference::Case& c, int i) {
  reference::Case s = c;
  --s.n;
  s.x.erase(s.x.begin() + i * c.d, s.x.begin() + (i + 1) * c.d);
  s.y.erase(s.y.begin() + i * c.k, s.y.begin() + (i + 1) * c.k);
  return s;
}

reference::Case drop_input(const reference::Case& c, int l) {
  reference::Case s = c;
  --s.d;
  s.kernel.erase(s.kernel.begin() + l * c.k, s.kernel.begin() + (l + 1) * c.k);
  s.x.clear();
  for (int i = 0; i < c.n; ++i)
    for (int m = 0; m < c.d; ++m)
      if (m != l) s.x.push_back(c.x[i * c.d + m]);
  return s;
}

reference::Case drop_output(const reference::Case& c, int j) {
  reference::Case s = c;
  --s.k;
  auto drop_column = [&](std::vector<float>& v, int rows) {
    std::vector<float> out;
    for (int i = 0; i < rows; ++i)
      for (int m = 0; m < c.k; ++m)
        if (m != j) out.push_back(v[i * c.k + m]);
    v = std::move(out);
  };
  drop_column(s.kernel, c.d);
  drop_column(s.y, c.n);
  s.bias.erase(s.bias.begin() + j);
  return s;
}

// Simpler values for one float: 0, then its sign-preserving power of two, then an
// integer, then fewer significand bits.
std::vector<float> simpler(float v) {
  std::vector<float> out;
  if (v == 0.0f || !std::isfinite(v)) return out;
  out.push_back(0.0f);
  const float p2 = std::copysign(std::exp2(std::round(std::log2(std::abs(v)))), v);
  if (p2 != v && std::isfinite(p2)) out.push_back(p2);
  const float whole = std::round(v);
  if (whole != v && whole != 0.0f) out.push_back(whole);
  const auto bits = std::bit_cast<std::uint32_t>(v);
  for (std::uint32_t mask : {0xffff0000u, 0xfffff000u}) {
    const float t = std::bit_cast<float>(bits & mask);
    if (t != v) out.push_back(t);
  }
  return out;
}

rc::Seq<reference::Case> shrink_case(const reference::Case& c);

rc::Seq<reference::Case> structural(const reference::Case& c) {
  std::vector<reference::Case> out;
  if (c.num_shards > 1)
    out.push_back([&] {
      reference::Case s = c;
      s.num_shards = 1;
      return s;
    }());
  for (int i = c.n - 1; i >= 0 && c.n > 1; --i) out.push_back(drop_row(c, i));
  for (int l = c.d - 1; l >= 0 && c.d > 1; --l) out.push_back(drop_input(c, l));
  for (int j = c.k - 1; j >= 0 && c.k > 1; --j) out.push_back(drop_output(c, j));
  if (c.num_shards > 2)
    out.push_back([&] {
      reference::Case s = c;
      --s.num_shards;
      return s;
    }());
  if (c.step != 0)
    out.push_back([&] {
      reference::Case s = c;
      s.step = 0;
      return s;
    }());
  return rc::seq::fromContainer(std::move(out));
}

rc::Seq<reference::Case> numeric(const reference::Case& c) {
  // One field at a time, one element at a time, lazily: cases can be large.
  auto fields = std::make_shared<std::vector<std::pair<int, std::size_t>>>();
  const std::vector<float>* arrays[] = {&c.kernel, &c.bias, &c.x, &c.y};
  for (int a = 0; a < 4; ++a)
    for (std::size_t e = 0; e < arrays[a]->size(); ++e) fields->emplace_back(a, e);
  fields->emplace_back(4, 0);  // lr
  return rc::seq::mapcat(
      rc::seq::range<std::size_t>(0, fields->size()), [c, fields](std::size_t f) {
        const auto [a, e] = (*fields)[f];
        reference::Case base = c;
        std::vector<float>* targets[] = {&base.kernel, &base.bias, &base.x, &base.y};
        const float v = a == 4 ? c.lr : (*targets[a])[e];
        std::vector<reference::Case> out;
        for (float s : simpler(v)) {
          reference::Case t = base;
          std::vector<float>* tt[] = {&t.kernel, &t.bias, &t.x, &t.y};
          if (a == 4)
            t.lr = s;
          else
            (*tt[a])[e] = s;
          out.push_back(std::move(t));
        }
        return rc::seq::fromContainer(std::move(out));
      });
}

rc::Seq<reference::Case> shrink_case(const reference::Case& c) {
  return rc::seq::concat(structural(c), numeric(c));
}

}  // namespace

rc::Gen<reference::Case> cases(const CaseSpace& space, const CaseProfile& profile) {
  return rc::Gen<reference::Case>([space, profile](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    return rc::shrinkable::shrinkRecur(draw_case(rng, space, profile, size), &shrink_case);
  });
}

rc::Gen<reference::Case> any_case(const CaseSpace& space, int max_dim) {
  return rc::Gen<reference::Case>([space, max_dim](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    CaseProfile p;
    p.max_dim = max_dim;
    p.spread = static_cast<Spread>(std::uniform_int_distribution<int>(0, 2)(rng));
    p.cancellation = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
    return rc::shrinkable::shrinkRecur(draw_case(rng, space, p, size), &shrink_case);
  });
}

rc::Gen<reference::Case> special_cases(const CaseSpace& space) {
  return rc::Gen<reference::Case>([space](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    CaseProfile p;
    p.max_dim = 4;
    p.lr = LrRegime::usual;
    reference::Case c = draw_case(rng, space, p, size);
    static constexpr float specials[] = {NAN,       INFINITY,   -INFINITY,        -0.0f,
                                         0x1p-149f, -0x1p-140f, 0x1.fffffcp-127f, 0x1.fffffep127f,
                                         -0x1p120f};
    // A learning rate is not negative (frameworks may rightly reject one that is).
    static constexpr float lr_specials[] = {NAN, INFINITY, -0.0f, 0x1p-149f, 0x1.fffffep127f};
    std::vector<float>* arrays[] = {&c.kernel, &c.bias, &c.x, &c.y};
    auto pick = [&] { return specials[std::uniform_int_distribution<int>(0, 8)(rng)]; };
    const int count = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int i = 0; i < count; ++i) {
      const int which = std::uniform_int_distribution<int>(0, 4)(rng);
      if (which == 4) {
        c.lr = lr_specials[std::uniform_int_distribution<int>(0, 4)(rng)];
        continue;
      }
      auto& v = *arrays[which];
      v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)] = pick();
    }
    return rc::shrinkable::shrinkRecur(c, &shrink_case);
  });
}

}  // namespace sgdc::properties