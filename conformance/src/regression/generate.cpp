#include "sgdc/conformance/regression/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "sgdc/conformance/protocol/precision_json.hpp"
#include "sgdc/conformance/protocol/recipe_json.hpp"
#include "sgdc/conformance/regression/derive.hpp"
#include "sgdc/properties/declared_recipe.hpp"
#include "sgdc/reference/hyperparameters.hpp"

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

double log_uniform(Rng& rng, double lo, double hi) {
  return std::exp(uniform(rng, std::log(lo), std::log(hi)));
}

// A hyperparameter 0 or a normal float32.
float hyperparameter(double v) {
  const auto f = static_cast<float>(v);
  return std::abs(f) < 0x1p-126f ? 0.0f : f;
}

// A value inside a declared range: either end in one case of four each, else log-uniform
// (uniform from 0), as the suite's generators draw (written out for portable files).
float inside(Rng& rng, const properties::ValueRange& r) {
  if (r.fixed()) return r.lo;
  const int which = integer(rng, 0, 3);
  if (which == 0) return r.lo;
  if (which == 1) return r.hi;
  const double v = r.lo > 0.0f ? log_uniform(rng, r.lo, r.hi) : uniform(rng, r.lo, r.hi);
  return std::clamp(hyperparameter(v), r.lo, r.hi);
}

// The optimizer of a case and its state, drawn after the plain step's inputs so that
// plain SGD's draws stay as they were; every option of the kind, then the recipe's
// ranges and group over them.
void draw_optimizer(Rng& rng, const GenerateOptions& o, reference::Optimizer::Kind kind,
                    Magnitudes m, reference::Case& c) {
  using Kind = reference::Optimizer::Kind;
  reference::Optimizer& opt = c.optimizer;
  opt.kind = kind;
  if (kind != Kind::sgd) {
    opt.weight_decay =
        integer(rng, 0, 2) == 0 ? 0.0f : hyperparameter(log_uniform(rng, 1e-5, 1e-1));
    opt.decay = integer(rng, 0, 1) ? reference::Optimizer::Decay::decoupled
                                   : reference::Optimizer::Decay::coupled;
  }
  if (kind == Kind::momentum) {
    opt.momentum = hyperparameter(uniform(rng, 0.0, 0.99));
    opt.nesterov = integer(rng, 0, 2) == 0;
    opt.dampening =
        opt.nesterov || integer(rng, 0, 2) != 0 ? 0.0f : hyperparameter(uniform(rng, 0.0, 0.9));
  }
  if (kind == Kind::adam) {
    opt.b1 = integer(rng, 0, 3) == 0 ? 0.0f : hyperparameter(uniform(rng, 0.5, 0.99));
    opt.b2 = hyperparameter(1.0 - log_uniform(rng, 1e-4, 1e-1));
    opt.eps = hyperparameter(log_uniform(rng, 1e-12, 1e-3));
    opt.eps_root = integer(rng, 0, 3) == 0 ? hyperparameter(log_uniform(rng, 1e-12, 1e-4)) : 0.0f;
  }
  if (kind == Kind::adagrad) {
    // torch's form (eps outside the root, default 1e-10, the sum from 0) or optax's (eps
    // inside, default 1e-7, the sum from 0.1), each default one time in three.
    const bool inside = integer(rng, 0, 1) != 0;
    const float eps = integer(rng, 0, 2) == 0 ? (inside ? 1e-7f : 1e-10f)
                                              : hyperparameter(log_uniform(rng, 1e-12, 1e-2));
    (inside ? opt.eps_root : opt.eps) = eps;
    opt.initial_accumulator_value = integer(rng, 0, 2) == 0 ? 0.0f
                                    : integer(rng, 0, 1)
                                        ? 0.1f
                                        : hyperparameter(log_uniform(rng, 1e-6, 1.0));
  }
  for (std::size_t i = 0; i < reference::hyperparameters.size(); ++i) {
    const reference::Hyperparameter& h = reference::hyperparameters[i];
    if (o.recipe.ranges[i] && h.taken_by(kind)) h.set(c, inside(rng, *o.recipe.ranges[i]));
  }
  if (opt.nesterov && (opt.momentum == 0.0f || opt.dampening != 0.0f)) opt.nesterov = false;
  if (const auto& g = o.recipe.bias_group) {
    reference::ParamGroup group;
    if (g->lr) group.lr = inside(rng, *g->lr);
    if (g->weight_decay && kind != Kind::sgd) group.weight_decay = inside(rng, *g->weight_decay);
    if (group.lr || group.weight_decay) c.bias_group = group;
  }
  // Carried state in three cases of four: every array the optimizer keeps, in protocol
  // order; values like the parameters' (a second moment or a sum of squares, their
  // squares).
  if (kind != Kind::sgd && integer(rng, 0, 3) != 0) {
    for (const reference::InputArray& a : reference::input_arrays) {
      if (!a.state || !a.kept_by(kind)) continue;
      std::vector<float>& v = c.*a.member;
      v.resize(a.extent == reference::Extent::kernel ? c.kernel.size() : c.bias.size());
      for (float& f : v) {
        const float x = value(rng, m);
        f = !a.second_moment ? x : std::isfinite(x * x) ? x * x : 0.0f;
      }
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
  std::vector<reference::Optimizer::Kind> optimizers = o.optimizers;
  if (optimizers.empty()) optimizers = o.recipe.optimizers;
  if (optimizers.empty()) optimizers = {reference::Optimizer::Kind::sgd};
  for (reference::Optimizer::Kind k : optimizers)
    if (!o.recipe.runs(k))
      throw std::invalid_argument(
          fmt::format("optimizer {}: outside the recipe's optimizers", reference::to_string(k)));
  // Without optimizers or recipe, the files of earlier versions, byte for byte: no redraw.
  const bool plain = optimizers == std::vector{reference::Optimizer::Kind::sgd} && o.recipe.empty();
  std::vector<Fixture> out;
  for (int i = 0; i < o.count; ++i) {
    // Case i has its own stream, so it does not depend on the count.
    Rng rng(o.seed ^ (0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i + 1)));
    for (int attempt = 0;; ++attempt) {
      Magnitudes m = o.magnitudes;
      if (m == Magnitudes::mixed) m = static_cast<Magnitudes>(integer(rng, 0, 3));
      reference::Case c = draw(rng, o, m);
      // Drawn after the plain inputs, so that plain SGD's draws stay as they were.
      const auto kind = optimizers[static_cast<std::size_t>(i) % optimizers.size()];
      if (!plain) draw_optimizer(rng, o, kind, m, c);
      if (o.recipe.even_batches && c.n % c.num_shards != 0) {
        // Rows added up to a multiple of the shard count, as a padding sampler does.
        const int n = (c.n + c.num_shards - 1) / c.num_shards * c.num_shards;
        for (int row = c.n; row < n; ++row) {
          for (int l = 0; l < c.d; ++l) c.x.push_back(value(rng, m));
          for (int j = 0; j < c.k; ++j) c.y.push_back(value(rng, m));
        }
        c.n = n;
      }
      // Clipping last: its max_norm is drawn around the gradients' norm (the properties'
      // own draw, declared_recipe.hpp).
      if (o.recipe.clipping) properties::draw_clipping(rng, *o.recipe.clipping, c);
      if (!o.recipe.admits(c))
        throw std::logic_error(fmt::format("fixture {}: drawn outside the recipe", i));
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
      if (!o.optimizers.empty()) {
        p.parameters["optimizers"] = nlohmann::ordered_json::array();
        for (auto k : o.optimizers) p.parameters["optimizers"].push_back(reference::to_string(k));
      }
      if (!o.recipe.empty()) p.parameters["recipe"] = protocol::encode_recipe(o.recipe);
      if (const reference::Stages& st = o.arithmetic.stages; st.declared())
        p.parameters["precision"] = protocol::encode_precision(st);
      try {
        out.push_back(derive_fixture(
            fmt::format("seed-{}-{:04}", o.seed, i),
            fmt::format("random case {} of seed {}: {} magnitudes, n={} d={} k={} num_shards={}{}",
                        i, o.seed, to_string(m), c.n, c.d, c.k, c.num_shards,
                        plain ? std::string() : fmt::format(", {}", reference::to_string(kind))),
            c, std::move(p), o.arithmetic));
        break;
      } catch (const std::invalid_argument&) {
        // A bound no JSON number holds (an optimizer's state beyond float32's range): the
        // case is drawn again from its own stream, so the file stays a function of the
        // options and its index.
        if (plain || attempt == 99) throw;
      }
    }
  }
  return out;
}

}  // namespace sgdc::conformance::regression