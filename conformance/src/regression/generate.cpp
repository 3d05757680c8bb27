#include "sgdc/conformance/regression/generate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "sgdc/conformance/regression/derive.hpp"

namespace sgdc::conformance::regression {

namespace {

// std::mt19937_64's sequence is fixed by the standard; the distributions of <random>
// are not, so the draws below are written out to keep files identical across libraries.
using Rng = std::mt19937_64;

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1p-53; }

double uniform(Rng& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }

int integer(Rng& rng, int lo, int hi) {
  return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

double normal(Rng& rng) {  // Box-Muller
  const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

float value(Rng& rng, Magnitudes m) {
  if (integer(rng, 0, 15) == 0) return 0.0f;
  const double sign = (rng() & 1u) ? -1.0 : 1.0;
  switch (m) {
    case Magnitudes::wide:
      return static_cast<float>(sign * std::pow(10.0, uniform(rng, -3.0, 3.0)));
    case Magnitudes::extreme:
      return static_cast<float>(sign * std::exp2(uniform(rng, -60.0, 60.0)));
    default:
      return static_cast<float>(normal(rng));
  }
}

float learning_rate(Rng& rng) {
  switch (integer(rng, 0, 3)) {
    case 0:
      return static_cast<float>(std::pow(10.0, uniform(rng, 0.0, 2.0)));  // large
    case 1:
      return static_cast<float>(std::pow(10.0, uniform(rng, -9.0, -6.0)));  // tiny updates
    default:
      return static_cast<float>(std::pow(10.0, uniform(rng, -4.0, 0.0)));
  }
}

// y = fl(x W + b), computed in double and nudged by up to 3 ULPs: r is tiny next to the
// terms that make it.
void cancel(Rng& rng, reference::Case& c) {
  for (int i = 0; i < c.n; ++i) {
    for (int j = 0; j < c.k; ++j) {
      double pred = c.bias[j];
      for (int l = 0; l < c.d; ++l) pred += double(c.x[i * c.d + l]) * c.kernel[l * c.k + j];
      float t = static_cast<float>(pred);
      for (int s = integer(rng, -3, 3); s != 0; s += s > 0 ? -1 : 1)
        t = std::nextafter(t, s > 0 ? INFINITY : -INFINITY);
      c.y[i * c.k + j] = t;
    }
  }
}

reference::Case draw(Rng& rng, const GenerateOptions& o, Magnitudes m) {
  reference::Case c;
  c.n = o.n ? *o.n : integer(rng, 1, o.max_dim);
  c.d = o.d ? *o.d : integer(rng, 1, o.max_dim);
  c.k = o.k ? *o.k : integer(rng, 1, o.max_dim);
  c.num_shards = integer(rng, 1, o.max_shards);
  c.step = integer(rng, 0, 1000);
  auto fill = [&](std::vector<float>& v, int count) {
    v.resize(static_cast<std::size_t>(count));
    for (float& f : v) f = value(rng, m);
  };
  fill(c.kernel, c.d * c.k);
  fill(c.bias, c.k);
  fill(c.x, c.n * c.d);
  fill(c.y, c.n * c.k);
  c.lr = learning_rate(rng);
  if (m == Magnitudes::cancellation) cancel(rng, c);
  return c;
}

}  // namespace

Magnitudes parse_magnitudes(const std::string& text) {
  for (Magnitudes m : {Magnitudes::unit, Magnitudes::wide, Magnitudes::extreme,
                       Magnitudes::cancellation, Magnitudes::mixed})
    if (text == to_string(m)) return m;
  throw std::invalid_argument(fmt::format(
      "unknown magnitude profile \"{}\" (unit, wide, extreme, cancellation, mixed)", text));
}

const char* to_string(Magnitudes m) {
  switch (m) {
    case Magnitudes::unit:
      return "unit";
    case Magnitudes::wide:
      return "wide";
    case Magnitudes::extreme:
      return "extreme";
    case Magnitudes::cancellation:
      return "cancellation";
    case Magnitudes::mixed:
      return "mixed";
  }
  return "?";
}

std::vector<Fixture> generate_fixtures(const GenerateOptions& o) {
  if (o.count < 0 || o.max_dim < 1 || o.max_shards < 1)
    throw std::invalid_argument("count must be >= 0, max_dim and max_shards >= 1");
  std::vector<Fixture> out;
  for (int i = 0; i < o.count; ++i) {
    // Case i has its own stream, so it does not depend on the count.
    Rng rng(o.seed ^ (0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i + 1)));
    Magnitudes m = o.magnitudes;
    if (m == Magnitudes::mixed) m = static_cast<Magnitudes>(integer(rng, 0, 3));
    const reference::Case c = draw(rng, o, m);
    Provenance p;
    p.generator_version = SGDC_VERSION;
    p.mode = "generate";
    p.seed = o.seed;
    p.parameters["index"] = i;
    p.parameters["count"] = o.count;
    p.parameters["magnitudes"] = to_string(o.magnitudes);
    p.parameters["case_magnitudes"] = to_string(m);
    p.parameters["max_dim"] = o.max_dim;
    p.parameters["max_shards"] = o.max_shards;
    if (o.n) p.parameters["n"] = *o.n;
    if (o.d) p.parameters["d"] = *o.d;
    if (o.k) p.parameters["k"] = *o.k;
    out.push_back(derive_fixture(
        fmt::format("seed-{}-{:04}", o.seed, i),
        fmt::format("random case {} of seed {}: {} magnitudes, n={} d={} k={} num_shards={}", i,
                    o.seed, to_string(m), c.n, c.d, c.k, c.num_shards),
        c, std::move(p)));
  }
  return out;
}

}  // namespace sgdc::conformance::regression