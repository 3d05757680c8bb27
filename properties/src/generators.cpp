#include "sgdc/properties/generators.hpp"

#include <bit>
#include <cmath>
#include <numbers>
#include <ostream>
#include <random>

#include "sgdc/reference/float32.hpp"

namespace sgdc {

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

int draw_dim(Rng& rng, const CaseProfile& p, int size) {
  const int hi = p.min_dim + (std::max(0, p.max_dim - p.min_dim) * std::min(size, 100)) / 100;
  return std::uniform_int_distribution<int>(p.min_dim, std::max(p.min_dim, hi))(rng);
}

Case draw_case(Rng& rng, const CaseProfile& p, int size) {
  Case c;
  c.n = draw_dim(rng, p, size);
  c.d = draw_dim(rng, p, size);
  c.k = draw_dim(rng, p, size);
  c.num_shards = std::uniform_int_distribution<int>(1, std::max(1, p.max_shards))(rng);
  c.step = std::uniform_int_distribution<std::int64_t>(0, 1000)(rng);
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

Case drop_row(const Case& c, int i) {
  Case s = c;
  --s.n;
  s.x.erase(s.x.begin() + i * c.d, s.x.begin() + (i + 1) * c.d);
  s.y.erase(s.y.begin() + i * c.k, s.y.begin() + (i + 1) * c.k);
  return s;
}

Case drop_input(const Case& c, int l) {
  Case s = c;
  --s.d;
  s.kernel.erase(s.kernel.begin() + l * c.k, s.kernel.begin() + (l + 1) * c.k);
  s.x.clear();
  for (int i = 0; i < c.n; ++i)
    for (int m = 0; m < c.d; ++m)
      if (m != l) s.x.push_back(c.x[i * c.d + m]);
  return s;
}

Case drop_output(const Case& c, int j) {
  Case s = c;
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

rc::Seq<Case> shrink_case(const Case& c);

rc::Seq<Case> structural(const Case& c) {
  std::vector<Case> out;
  if (c.num_shards > 1)
    out.push_back([&] {
      Case s = c;
      s.num_shards = 1;
      return s;
    }());
  for (int i = c.n - 1; i >= 0 && c.n > 1; --i) out.push_back(drop_row(c, i));
  for (int l = c.d - 1; l >= 0 && c.d > 1; --l) out.push_back(drop_input(c, l));
  for (int j = c.k - 1; j >= 0 && c.k > 1; --j) out.push_back(drop_output(c, j));
  if (c.num_shards > 2)
    out.push_back([&] {
      Case s = c;
      --s.num_shards;
      return s;
    }());
  if (c.step != 0)
    out.push_back([&] {
      Case s = c;
      s.step = 0;
      return s;
    }());
  return rc::seq::fromContainer(std::move(out));
}

rc::Seq<Case> numeric(const Case& c) {
  // One field at a time, one element at a time, lazily: cases can be large.
  auto fields = std::make_shared<std::vector<std::pair<int, std::size_t>>>();
  const std::vector<float>* arrays[] = {&c.kernel, &c.bias, &c.x, &c.y};
  for (int a = 0; a < 4; ++a)
    for (std::size_t e = 0; e < arrays[a]->size(); ++e) fields->emplace_back(a, e);
  fields->emplace_back(4, 0);  // lr
  return rc::seq::mapcat(
      rc::seq::range<std::size_t>(0, fields->size()), [c, fields](std::size_t f) {
        const auto [a, e] = (*fields)[f];
        Case base = c;
        std::vector<float>* targets[] = {&base.kernel, &base.bias, &base.x, &base.y};
        const float v = a == 4 ? c.lr : (*targets[a])[e];
        std::vector<Case> out;
        for (float s : simpler(v)) {
          Case t = base;
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

rc::Seq<Case> shrink_case(const Case& c) { return rc::seq::concat(structural(c), numeric(c)); }

}  // namespace

rc::Gen<Case> cases(const CaseProfile& profile) {
  return rc::Gen<Case>([profile](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    return rc::shrinkable::shrinkRecur(draw_case(rng, profile, size), &shrink_case);
  });
}

rc::Gen<Case> any_case(int max_dim) {
  return rc::Gen<Case>([max_dim](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    CaseProfile p;
    p.max_dim = max_dim;
    p.spread = static_cast<Spread>(std::uniform_int_distribution<int>(0, 2)(rng));
    p.cancellation = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
    return rc::shrinkable::shrinkRecur(draw_case(rng, p, size), &shrink_case);
  });
}

rc::Gen<Case> special_cases() {
  return rc::Gen<Case>([](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    CaseProfile p;
    p.max_dim = 4;
    p.lr = LrRegime::usual;
    Case c = draw_case(rng, p, size);
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

void showValue(const Case& c, std::ostream& os) {
  os << "n=" << c.n << " d=" << c.d << " k=" << c.k << " num_shards=" << c.num_shards
     << " step=" << c.step << " lr=" << describe(c.lr);
  auto list = [&](const char* name, const std::vector<float>& v) {
    os << "\n  " << name << " = [";
    for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << describe(v[i]);
    os << "]";
  };
  list("kernel", c.kernel);
  list("bias", c.bias);
  list("x", c.x);
  list("y", c.y);
}

}  // namespace sgdc
