#include "sgdc/properties/generators.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <memory>
#include <numbers>
#include <random>
#include <tuple>
#include <utility>

#include "random_draws.hpp"
#include "sgdc/reference/float32.hpp"
#include "sgdc/reference/hyperparameters.hpp"

namespace sgdc::properties {

namespace {

using Rng = std::mt19937_64;

using detail::log_uniform;
using detail::one_in;
using detail::uniform;

float draw_value(Rng& rng, Spread spread) {
  if (one_in(rng, 16)) return 0.0f;
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

// The case's shape: from the pool, the cheap shapes at small sizes; or drawn alone.
Shape pick_shape(Rng& rng, const CaseSpace& space, const CaseProfile& p, int size) {
  if (space.pool.empty()) {
    if (space.shapes) {
      Shape s = draw_shape(rng, *space.shapes);
      for (int* dim : {&s.n, &s.d, &s.k}) *dim = std::min(*dim, p.max_dim);
      return s;
    }
    const int most = std::min(p.max_dim, 12);
    const int hi = 1 + (std::max(0, most - 1) * std::min(size, 100)) / 100;
    auto dim = [&] { return std::uniform_int_distribution<int>(1, std::max(1, hi))(rng); };
    const int n = dim(), d = dim(), k = dim();
    return {n, d, k};
  }
  std::vector<const Shape*> fit;
  for (const Shape& s : space.pool)
    if (std::max({s.n, s.d, s.k}) <= p.max_dim) fit.push_back(&s);
  if (fit.empty())
    for (const Shape& s : space.pool) fit.push_back(&s);
  // Cheapest first as the size grows: the first cases are small, and from the twentieth on
  // every shape may come.
  const std::size_t open = std::max<std::size_t>(
      1, (fit.size() * static_cast<std::size_t>(std::min(size, 20) + 1) + 20) / 21);
  return *fit[std::uniform_int_distribution<std::size_t>(0, std::min(open, fit.size()) - 1)(rng)];
}

using Kind = reference::Optimizer::Kind;

// The optimizer of the next case: plain SGD and each optimizer the implementation takes,
// evenly; with a declared recipe, only those it runs.
Kind draw_kind(Rng& rng, const CaseSpace& space) {
  if (space.recipe.optimizers.empty()) {
    const int choices =
        1 + (space.momentum ? 1 : 0) + (space.adam ? 1 : 0) + (space.adagrad ? 1 : 0);
    const int choice = std::uniform_int_distribution<int>(0, choices - 1)(rng);
    if (choice == 0) return Kind::sgd;
    if (space.adagrad && choice == choices - 1) return Kind::adagrad;
    return space.adam && (choice == 2 || !space.momentum) ? Kind::adam : Kind::momentum;
  }
  std::vector<Kind> run;
  for (Kind k : {Kind::sgd, Kind::momentum, Kind::adam, Kind::adagrad})
    if (space.recipe.runs(k) &&
        (k == Kind::sgd || (k == Kind::momentum && space.momentum) ||
         (k == Kind::adam && space.adam) || (k == Kind::adagrad && space.adagrad)))
      run.push_back(k);
  if (run.empty()) return Kind::sgd;  // validate() rejects such a recipe
  return run[std::uniform_int_distribution<std::size_t>(0, run.size() - 1)(rng)];
}

// The case's hyperparameters redrawn inside the recipe's ranges, its options kept
// coherent: Nesterov needs a momentum above 0 and no dampening, a weight decay a
// convention the implementation takes.
void within_recipe(Rng& rng, const CaseSpace& space, reference::Case& c) {
  reference::Optimizer& o = c.optimizer;
  for (std::size_t i = 0; i < reference::hyperparameters.size(); ++i) {
    const reference::Hyperparameter& h = reference::hyperparameters[i];
    if (space.recipe.ranges[i] && h.taken_by(o.kind))
      h.set(c, draw_inside(rng, *space.recipe.ranges[i]));
  }
  if (space.recipe.bias_group) c.bias_group = draw_group(rng, *space.recipe.bias_group, o.kind);
  if (o.nesterov && (o.momentum == 0.0f || o.dampening != 0.0f)) o.nesterov = false;
  // Adagrad's epsilon where the implementation puts it: inside the root or outside.
  if (o.kind == Kind::adagrad && space.adagrad) {
    if (space.adagrad->eps_root) {
      if (o.eps_root == 0.0f) o.eps_root = o.eps != 0.0f ? o.eps : 1e-7f;
      o.eps = 0.0f;
    } else {
      if (o.eps == 0.0f) o.eps = o.eps_root != 0.0f ? o.eps_root : 1e-10f;
      o.eps_root = 0.0f;
    }
  }
  const float bias_decay =
      c.bias_group ? c.bias_group->weight_decay.value_or(o.weight_decay) : o.weight_decay;
  if (o.weight_decay != 0.0f || bias_decay != 0.0f) {
    bool coupled = false, decoupled = false;
    if (o.kind == Kind::momentum && space.momentum)
      std::tie(coupled, decoupled) =
          std::pair{space.momentum->coupled_decay, space.momentum->decoupled_decay};
    if (o.kind == Kind::adam && space.adam)
      std::tie(coupled, decoupled) =
          std::pair{space.adam->coupled_decay, space.adam->decoupled_decay};
    if (o.kind == Kind::adagrad && space.adagrad)
      std::tie(coupled, decoupled) =
          std::pair{space.adagrad->coupled_decay, space.adagrad->decoupled_decay};
    if (o.decay == reference::Optimizer::Decay::coupled && !coupled)
      o.decay = reference::Optimizer::Decay::decoupled;
    if (o.decay == reference::Optimizer::Decay::decoupled && !decoupled)
      o.decay = reference::Optimizer::Decay::coupled;
  }
}

// Whether `c` lies where the run draws: inside the recipe, for the run's shard count.
bool admitted(const CaseSpace& space, const reference::Case& c) {
  if (!space.num_shards || !space.recipe.even_batches) return space.recipe.admits(c);
  reference::Case as_run = c;
  as_run.num_shards = *space.num_shards;
  return space.recipe.admits(as_run);
}

reference::Case draw_case(Rng& rng, const CaseSpace& space, const CaseProfile& p, int size) {
  reference::Case c;
  const Shape shape = pick_shape(rng, space, p, size);
  c.n = shape.n;
  c.d = shape.d;
  c.k = shape.k;
  c.num_shards = std::uniform_int_distribution<int>(1, std::max(1, space.max_shards))(rng);
  if (space.recipe.even_batches) {
    // Rows padded up to a multiple of the shard count, as a padding sampler does.
    const int s = space.num_shards.value_or(c.num_shards);
    c.n = (c.n + s - 1) / s * s;
  }
  c.step = draw_step(rng, space.counter);
  for (const reference::InputArray& in : reference::input_arrays) {
    if (in.state) continue;  // drawn with the optimizer below
    std::vector<float>& v = c.*in.member;
    v.resize(reference::element_count(in.extent, c.n, c.d, c.k));
    for (float& f : v) f = draw_value(rng, p.spread);
  }
  c.lr = draw_lr(rng, p.lr);
  // The cases split evenly between plain SGD and each optimizer the implementation
  // takes; three in four stateful ones carry state (a buffer or a first moment with
  // values like the parameters'; a second moment of squares of such values, tiny in one
  // case of four, where eps dominates), the rest are first steps.
  const Kind kind = draw_kind(rng, space);
  if (kind == Kind::adagrad) {
    // Adagrad: a sum of squares of values like the parameters' in three cases of four
    // (tiny in one of those, where eps dominates), else its first step.
    c.optimizer = draw_adagrad(rng, *space.adagrad);
    if (!one_in(rng, 4)) {
      const float scale = one_in(rng, 4) ? 1e-20f : 1.0f;
      for (auto* v : {&c.second_moment_kernel, &c.second_moment_bias}) {
        v->resize(v == &c.second_moment_kernel ? c.kernel.size() : c.bias.size());
        for (float& f : *v) {
          const float a = draw_value(rng, p.spread);
          f = a * a * scale;
          if (!std::isfinite(f)) f = 0.0f;
        }
      }
    }
  } else if (kind != Kind::sgd) {
    const bool adam = kind == Kind::adam;
    c.optimizer = adam ? draw_adam(rng, *space.adam) : draw_momentum(rng, *space.momentum);
    if (!one_in(rng, 4)) {
      for (auto* v : {&c.momentum_kernel, &c.momentum_bias}) {
        v->resize(v == &c.momentum_kernel ? c.kernel.size() : c.bias.size());
        for (float& f : *v) f = draw_value(rng, p.spread);
      }
      if (adam) {
        const float scale = one_in(rng, 4) ? 1e-20f : 1.0f;
        for (auto* v : {&c.second_moment_kernel, &c.second_moment_bias}) {
          v->resize(v == &c.second_moment_kernel ? c.kernel.size() : c.bias.size());
          for (float& f : *v) {
            const float a = draw_value(rng, p.spread);
            f = a * a * scale;
            if (!std::isfinite(f)) f = 0.0f;
          }
        }
      }
    }
  }
  if (!space.recipe.empty()) within_recipe(rng, space, c);
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
  if (space.recipe.clipping) draw_clipping(rng, *space.recipe.clipping, c);
  return c;
}

// --- shrinking: structure first, then values -------------------------------------

// The case with only the rows [begin, end), inputs [d0, d1) and outputs [k0, k1).
reference::Case keep(const reference::Case& c, int begin, int end, int d0, int d1, int k0, int k1) {
  reference::Case s = c;
  s.n = end - begin;
  s.d = d1 - d0;
  s.k = k1 - k0;
  auto take = [](const std::vector<float>& v, int cols, int r0, int r1, int c0, int c1) {
    std::vector<float> out;
    out.reserve(static_cast<std::size_t>(r1 - r0) * (c1 - c0));
    for (int i = r0; i < r1; ++i)
      out.insert(out.end(), v.begin() + static_cast<std::ptrdiff_t>(i) * cols + c0,
                 v.begin() + static_cast<std::ptrdiff_t>(i) * cols + c1);
    return out;
  };
  s.kernel = take(c.kernel, c.k, d0, d1, k0, k1);
  s.bias = take(c.bias, c.k, 0, 1, k0, k1);
  if (!c.momentum_kernel.empty()) {
    s.momentum_kernel = take(c.momentum_kernel, c.k, d0, d1, k0, k1);
    s.momentum_bias = take(c.momentum_bias, c.k, 0, 1, k0, k1);
  }
  if (!c.second_moment_kernel.empty()) {
    s.second_moment_kernel = take(c.second_moment_kernel, c.k, d0, d1, k0, k1);
    s.second_moment_bias = take(c.second_moment_bias, c.k, 0, 1, k0, k1);
  }
  s.x = take(c.x, c.d, begin, end, d0, d1);
  s.y = take(c.y, c.k, begin, end, k0, k1);
  return s;
}

reference::Case drop_row(const reference::Case& c, int i) {
  reference::Case s = keep(c, 0, c.n, 0, c.d, 0, c.k);
  --s.n;
  s.x.erase(s.x.begin() + static_cast<std::ptrdiff_t>(i) * c.d,
            s.x.begin() + static_cast<std::ptrdiff_t>(i + 1) * c.d);
  s.y.erase(s.y.begin() + static_cast<std::ptrdiff_t>(i) * c.k,
            s.y.begin() + static_cast<std::ptrdiff_t>(i + 1) * c.k);
  return s;
}

reference::Case drop_input(const reference::Case& c, int l) {
  reference::Case s = c;
  --s.d;
  for (std::vector<float>* v : {&s.kernel, &s.momentum_kernel, &s.second_moment_kernel})
    if (!v->empty())
      v->erase(v->begin() + static_cast<std::ptrdiff_t>(l) * c.k,
               v->begin() + static_cast<std::ptrdiff_t>(l + 1) * c.k);
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
  if (!c.momentum_kernel.empty()) {
    drop_column(s.momentum_kernel, c.d);
    s.momentum_bias.erase(s.momentum_bias.begin() + j);
  }
  if (!c.second_moment_kernel.empty()) {
    drop_column(s.second_moment_kernel, c.d);
    s.second_moment_bias.erase(s.second_moment_bias.begin() + j);
  }
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

// Smaller structures, lazily (cases can be large): one shard; the first half of the
// rows, inputs or outputs (a large case shrinks in few steps); each row, input or output
// dropped, last first; one shard fewer; the counter at 0.
rc::Seq<reference::Case> structural(const reference::Case& c) {
  using Edit = std::function<reference::Case()>;
  std::vector<Edit> edits;
  if (c.num_shards > 1)
    edits.push_back([c] {
      reference::Case s = c;
      s.num_shards = 1;
      return s;
    });
  if (c.n > 2) edits.push_back([c] { return keep(c, 0, (c.n + 1) / 2, 0, c.d, 0, c.k); });
  if (c.d > 2) edits.push_back([c] { return keep(c, 0, c.n, 0, (c.d + 1) / 2, 0, c.k); });
  if (c.k > 2) edits.push_back([c] { return keep(c, 0, c.n, 0, c.d, 0, (c.k + 1) / 2); });
  auto shared = std::make_shared<const reference::Case>(c);
  auto drops = [shared](int count, reference::Case (*drop)(const reference::Case&, int)) {
    return rc::seq::map(rc::seq::range<int>(count - 1, -1),
                        [shared, drop](int i) { return drop(*shared, i); });
  };
  rc::Seq<reference::Case> first =
      rc::seq::map(rc::seq::fromContainer(std::move(edits)), [](const Edit& e) { return e(); });
  std::vector<Edit> last;
  if (c.num_shards > 2)
    last.push_back([c] {
      reference::Case s = c;
      --s.num_shards;
      return s;
    });
  if (c.step != 0)
    last.push_back([c] {
      reference::Case s = c;
      s.step = 0;
      return s;
    });
  // Simpler optimizers: fresh state, no decay, no Nesterov, no dampening, plain SGD.
  const reference::Optimizer& o = c.optimizer;
  if (!c.fresh_state())
    last.push_back([c] {
      reference::Case s = c;
      s.momentum_kernel.clear();
      s.momentum_bias.clear();
      s.second_moment_kernel.clear();
      s.second_moment_bias.clear();
      return s;
    });
  // (Adagrad with its eps inside the root keeps it: its denominator needs one.)
  if (o.eps_root != 0.0f && (o.kind != reference::Optimizer::Kind::adagrad || o.eps != 0.0f))
    last.push_back([c] {
      reference::Case s = c;
      s.optimizer.eps_root = 0.0f;
      return s;
    });
  if (o.weight_decay != 0.0f)
    last.push_back([c] {
      reference::Case s = c;
      s.optimizer.weight_decay = 0.0f;
      return s;
    });
  if (o.initial_accumulator_value != 0.0f)
    last.push_back([c] {
      reference::Case s = c;
      s.optimizer.initial_accumulator_value = 0.0f;
      return s;
    });
  if (o.nesterov)
    last.push_back([c] {
      reference::Case s = c;
      s.optimizer.nesterov = false;
      return s;
    });
  if (o.dampening != 0.0f)
    last.push_back([c] {
      reference::Case s = c;
      s.optimizer.dampening = 0.0f;
      return s;
    });
  if (o.kind != reference::Optimizer::Kind::sgd && o.weight_decay == 0.0f)
    last.push_back([c] {
      reference::Case s = c;
      s.optimizer = reference::Optimizer{};
      // Plain SGD does not decay: the bias group keeps its learning rate alone.
      if (s.bias_group) {
        s.bias_group->weight_decay.reset();
        if (!s.bias_group->lr) s.bias_group.reset();
      }
      s.momentum_kernel.clear();
      s.momentum_bias.clear();
      s.second_moment_kernel.clear();
      s.second_moment_bias.clear();
      return s;
    });
  return rc::seq::concat(
      std::move(first), c.n > 1 ? drops(c.n, drop_row) : rc::Seq<reference::Case>(),
      c.d > 1 ? drops(c.d, drop_input) : rc::Seq<reference::Case>(),
      c.k > 1 ? drops(c.k, drop_output) : rc::Seq<reference::Case>(),
      rc::seq::map(rc::seq::fromContainer(std::move(last)), [](const Edit& e) { return e(); }));
}

// Simpler values, one element at a time, lazily: the arrays of the input table, then lr.
rc::Seq<reference::Case> numeric(const reference::Case& c) {
  auto shared = std::make_shared<const reference::Case>(c);
  std::size_t total = 1;
  for (const reference::InputArray& in : reference::input_arrays) total += (c.*in.member).size();
  return rc::seq::mapcat(rc::seq::range<std::size_t>(0, total), [shared](std::size_t f) {
    const reference::Case& base = *shared;
    // Element f of the inputs in table order; the last one is lr.
    std::vector<float> reference::Case::*member = nullptr;
    std::size_t at = f;
    for (const reference::InputArray& in : reference::input_arrays) {
      if (at < (base.*in.member).size()) {
        member = in.member;
        break;
      }
      at -= (base.*in.member).size();
    }
    const float v = member ? (base.*member)[at] : base.lr;
    std::vector<reference::Case> out;
    for (float s : simpler(v)) {
      reference::Case t = base;
      (member ? (t.*member)[at] : t.lr) = s;
      out.push_back(std::move(t));
    }
    return rc::seq::fromContainer(std::move(out));
  });
}

rc::Seq<reference::Case> shrink_case(const reference::Case& c) {
  return rc::seq::concat(structural(c), numeric(c));
}

// The case with its shrinks, each inside the space's recipe when one is declared.
rc::Shrinkable<reference::Case> shrinkable(const CaseSpace& space, reference::Case c) {
  if (space.recipe.empty()) return rc::shrinkable::shrinkRecur(std::move(c), &shrink_case);
  return rc::shrinkable::shrinkRecur(std::move(c), [space](const reference::Case& from) {
    return rc::seq::filter(shrink_case(from),
                           [space](const reference::Case& s) { return admitted(space, s); });
  });
}

// A weight decay in one case of two where the implementation takes one, 10^-5 to 10^-1,
// coupled or decoupled (one of the two, at even odds, where it takes both); every
// optimizer draws it last, the same way.
void draw_decay(Rng& rng, bool coupled, bool decoupled, reference::Optimizer& o) {
  if ((coupled || decoupled) && one_in(rng, 2)) {
    o.weight_decay = static_cast<float>(std::pow(10.0, uniform(rng, -5.0, -1.0)));
    o.decay = coupled && (!decoupled || one_in(rng, 2)) ? reference::Optimizer::Decay::coupled
                                                        : reference::Optimizer::Decay::decoupled;
  }
}

}  // namespace

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
  // Log-uniform: 2^u - 1 for u uniform in [0, log2(most + 1)].
  const double bits = std::log2(static_cast<double>(most) + 1.0);
  const double v = std::floor(std::exp2(uniform(rng, 0.0, bits))) - 1.0;
  return v >= static_cast<double>(most) ? most
                                        : std::max<std::int64_t>(0, static_cast<std::int64_t>(v));
}

reference::Optimizer draw_momentum(Rng& rng, const MomentumSupport& support) {
  reference::Optimizer o;
  o.kind = reference::Optimizer::Kind::momentum;
  if (one_in(rng, 4))
    o.momentum = 0.9f;
  else if (!one_in(rng, 7))
    o.momentum = static_cast<float>(1.0 - log_uniform(rng, 0.001, 0.5));
  if (support.dampening && !one_in(rng, 2)) {
    static constexpr float dampenings[] = {0.1f, 0.5f, 0.9f};
    o.dampening = dampenings[std::uniform_int_distribution<int>(0, 2)(rng)];
  }
  if (support.nesterov && o.momentum > 0.0f && one_in(rng, 2)) {
    o.nesterov = true;
    o.dampening = 0.0f;  // Nesterov momentum is defined without dampening
  }
  draw_decay(rng, support.coupled_decay, support.decoupled_decay, o);
  return o;
}

reference::Optimizer draw_adam(Rng& rng, const AdamSupport& support) {
  reference::Optimizer o;
  o.kind = reference::Optimizer::Kind::adam;
  if (one_in(rng, 4))
    o.b1 = 0.9f;
  else if (!one_in(rng, 7))
    o.b1 = static_cast<float>(1.0 - log_uniform(rng, 0.001, 0.5));
  o.b2 = one_in(rng, 4) ? 0.999f : static_cast<float>(1.0 - log_uniform(rng, 1e-4, 0.1));
  o.eps = one_in(rng, 3) ? 1e-8f : static_cast<float>(log_uniform(rng, 1e-12, 1e-2));
  if (support.eps_root && one_in(rng, 2))
    o.eps_root = static_cast<float>(log_uniform(rng, 1e-16, 1e-4));
  draw_decay(rng, support.coupled_decay, support.decoupled_decay, o);
  return o;
}

reference::Optimizer draw_adagrad(Rng& rng, const AdagradSupport& support) {
  reference::Optimizer o;
  o.kind = reference::Optimizer::Kind::adagrad;
  // torch's default eps outside the root, 1e-10; optax's inside, 1e-7.
  const float eps = one_in(rng, 3) ? (support.eps_root ? 1e-7f : 1e-10f)
                                   : static_cast<float>(log_uniform(rng, 1e-12, 1e-2));
  (support.eps_root ? o.eps_root : o.eps) = eps;
  // torch's default initial value 0, optax's 0.1.
  if (!one_in(rng, 3))
    o.initial_accumulator_value =
        one_in(rng, 2) ? 0.1f : static_cast<float>(log_uniform(rng, 1e-6, 1.0));
  draw_decay(rng, support.coupled_decay, support.decoupled_decay, o);
  return o;
}

rc::Gen<reference::Case> cases(const CaseSpace& space, const CaseProfile& profile) {
  return rc::Gen<reference::Case>([space, profile](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    return shrinkable(space, draw_case(rng, space, profile, size));
  });
}

rc::Gen<reference::Case> any_case(const CaseSpace& space, int max_dim) {
  return rc::Gen<reference::Case>([space, max_dim](const rc::Random& random, int size) {
    rc::Random r = random;
    Rng rng(r.next());
    CaseProfile p;
    p.max_dim = max_dim;
    p.spread = static_cast<Spread>(std::uniform_int_distribution<int>(0, 2)(rng));
    p.cancellation = one_in(rng, 4);
    return shrinkable(space, draw_case(rng, space, p, size));
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
    auto pick = [&] { return specials[std::uniform_int_distribution<int>(0, 8)(rng)]; };
    const int count = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int i = 0; i < count; ++i) {
      const int which = std::uniform_int_distribution<int>(0, 4)(rng);
      if (which == 4) {
        const float lr = lr_specials[std::uniform_int_distribution<int>(0, 4)(rng)];
        // A declared lr stays inside its range: the specials go into the arrays alone.
        if (!space.recipe.range("lr")) c.lr = lr;
        continue;
      }
      auto& v = c.*reference::input_arrays[which].member;
      v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)] = pick();
    }
    return shrinkable(space, std::move(c));
  });
}

}  // namespace sgdc::properties