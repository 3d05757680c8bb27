#include "sgdc/properties/declared_recipe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "random_draws.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::properties {

namespace {

using reference::hyperparameters;
using Kind = reference::Optimizer::Kind;

constexpr std::array<Kind, 4> all_kinds{Kind::sgd, Kind::momentum, Kind::adam, Kind::adagrad};

std::size_t index_of(std::string_view name) {
  for (std::size_t i = 0; i < hyperparameters.size(); ++i)
    if (name == hyperparameters[i].name) return i;
  throw std::logic_error(fmt::format("no hyperparameter named {}", name));
}

[[noreturn]] void bad(std::string_view field, const std::string& why) {
  throw std::invalid_argument(fmt::format("recipe.{}: {}", field, why));
}

std::string show(const ValueRange& r) {
  return r.fixed() ? fmt::format("{:.9g}", r.lo) : fmt::format("[{:.9g}, {:.9g}]", r.lo, r.hi);
}

// Both declarations of one field: the intersection, or whichever is declared. Throws
// naming the field when the intersection is empty.
std::optional<ValueRange> intersect(std::string_view field, const std::optional<ValueRange>& a,
                                    const std::optional<ValueRange>& b) {
  if (!a || !b) return a ? a : b;
  const ValueRange both{std::max(a->lo, b->lo), std::min(a->hi, b->hi)};
  if (both.lo > both.hi)
    bad(field, fmt::format("{} lies outside the declared {}", show(*b), show(*a)));
  return both;
}

bool takes_decay(Kind kind) { return kind != Kind::sgd; }

// The case's bias group is the declared one: each value declared and taken by the case's
// optimizer present and inside its range, nothing else.
bool admits_group(const std::optional<DeclaredGroup>& declared, const reference::Case& c) {
  const std::optional<reference::ParamGroup>& g = c.bias_group;
  if (!declared) return !g;
  const bool lr = declared->lr.has_value();
  const bool wd = declared->weight_decay && takes_decay(c.optimizer.kind);
  if (!lr && !wd) return !g;
  if (!g || g->lr.has_value() != lr || g->weight_decay.has_value() != wd) return false;
  return (!lr || declared->lr->contains(*g->lr)) &&
         (!wd || declared->weight_decay->contains(*g->weight_decay));
}

}  // namespace

bool DeclaredRecipe::empty() const {
  return optimizers.empty() && !even_batches && !bias_group && !clipping &&
         std::none_of(ranges.begin(), ranges.end(), [](const auto& r) { return r.has_value(); });
}

bool DeclaredRecipe::runs(Kind kind) const {
  return optimizers.empty() ||
         std::find(optimizers.begin(), optimizers.end(), kind) != optimizers.end();
}

const std::optional<ValueRange>& DeclaredRecipe::range(std::string_view name) const {
  return ranges[index_of(name)];
}

bool DeclaredRecipe::admits(const reference::Case& c) const {
  if (!runs(c.optimizer.kind)) return false;
  if (even_batches && c.n % c.num_shards != 0) return false;
  for (std::size_t i = 0; i < hyperparameters.size(); ++i)
    if (ranges[i] && hyperparameters[i].taken_by(c.optimizer.kind) &&
        !ranges[i]->contains(hyperparameters[i].get(c)))
      return false;
  if (clipping.has_value() != c.clip.has_value()) return false;
  if (clipping && (!clipping->max_norm.contains(c.clip->max_norm) || clipping->eps != c.clip->eps))
    return false;
  return admits_group(bias_group, c);
}

void validate(const DeclaredRecipe& r, const Capabilities& caps) {
  for (Kind k : r.optimizers)
    if (!declares(caps, k))
      bad("optimizers",
          fmt::format("lists \"{0}\", which the implementation does not declare ({0})",
                      reference::to_string(k)));
  // The optimizers cases may be drawn for.
  std::vector<Kind> run;
  for (Kind k : all_kinds)
    if (r.runs(k) && declares(caps, k)) run.push_back(k);
  auto check = [&](const std::string& field, const reference::Hyperparameter& h,
                   const ValueRange& v) {
    if (!std::isfinite(v.lo) || !std::isfinite(v.hi)) bad(field, "is not finite: " + show(v));
    if (v.lo > v.hi) bad(field, fmt::format("is an empty range: {:.9g} > {:.9g}", v.lo, v.hi));
    for (float end : {v.lo, v.hi}) {
      if (!h.valid(end))
        bad(field, fmt::format("{} lies outside where the step is defined ({}{:.9g}, {:.9g}{})",
                               show(v), h.lowest_open ? "(" : "[", h.lowest, h.highest,
                               h.highest_open ? ")" : "]"));
      if (end != 0.0f && std::abs(end) < 0x1p-126f)
        bad(field, fmt::format("{:.9g} is neither 0 nor a normal float32", end));
    }
    if (std::none_of(run.begin(), run.end(), [&](Kind k) { return h.taken_by(k); }))
      bad(field, "no optimizer the recipe runs takes it");
    if (v.lo > 0.0f) {
      const std::string_view name = h.name;
      if (name == "dampening" && !(caps.momentum && caps.momentum->dampening))
        bad(field, "is above 0, but momentum.dampening is not declared");
      if (name == "eps_root" && !(caps.adam && caps.adam->eps_root) &&
          !(caps.adagrad && caps.adagrad->eps_root))
        bad(field, "is above 0, but neither adam.eps_root nor adagrad.eps_root is declared");
      if (name == "weight_decay")
        for (Kind k : run) {
          const auto [coupled, decoupled] = decay_conventions(caps, k);
          if (k != Kind::sgd && !coupled && !decoupled)
            bad(field, fmt::format("is above 0, but {}.weight_decay declares no convention",
                                   reference::to_string(k)));
        }
    }
  };
  for (std::size_t i = 0; i < hyperparameters.size(); ++i)
    if (r.ranges[i]) check(hyperparameters[i].name, hyperparameters[i], *r.ranges[i]);
  if (r.bias_group) {
    if (!r.bias_group->lr && !r.bias_group->weight_decay)
      bad("bias_group", "declares neither lr nor weight_decay");
    if (r.bias_group->lr)
      check("bias_group.lr", hyperparameters[index_of("lr")], *r.bias_group->lr);
    if (r.bias_group->weight_decay)
      check("bias_group.weight_decay", hyperparameters[index_of("weight_decay")],
            *r.bias_group->weight_decay);
  }
  if (r.clipping) {
    const ValueRange& m = r.clipping->max_norm;
    if (!std::isfinite(m.lo) || !std::isfinite(m.hi))
      bad("clipping.max_norm", "is not finite: " + show(m));
    if (m.lo > m.hi)
      bad("clipping.max_norm", fmt::format("is an empty range: {:.9g} > {:.9g}", m.lo, m.hi));
    if (!(m.lo >= 0x1p-126f))
      bad("clipping.max_norm", fmt::format("{} must be a normal float32 > 0", show(m)));
    const float eps = r.clipping->eps;
    if (!std::isfinite(eps) || eps < 0.0f || (eps != 0.0f && eps < 0x1p-126f))
      bad("clipping.eps", fmt::format("{:.9g} must be 0 or a finite normal float32 > 0 "
                                      "(torch's clip_grad_norm_ 1e-6, optax 0)",
                                      eps));
  }
}

DeclaredRecipe narrow(const DeclaredRecipe& declared, const DeclaredRecipe& asked) {
  DeclaredRecipe out;
  if (declared.optimizers.empty()) {
    out.optimizers = asked.optimizers;
  } else if (asked.optimizers.empty()) {
    out.optimizers = declared.optimizers;
  } else {
    for (Kind k : declared.optimizers)
      if (asked.runs(k)) out.optimizers.push_back(k);
    if (out.optimizers.empty())
      bad("optimizers", "the recipe asked for shares no optimizer with the declared one");
  }
  out.even_batches = declared.even_batches || asked.even_batches;
  for (std::size_t i = 0; i < out.ranges.size(); ++i)
    out.ranges[i] = intersect(hyperparameters[i].name, declared.ranges[i], asked.ranges[i]);
  if (!declared.bias_group || !asked.bias_group) {
    out.bias_group = declared.bias_group ? declared.bias_group : asked.bias_group;
  } else {
    const DeclaredGroup &a = *declared.bias_group, &b = *asked.bias_group;
    out.bias_group = DeclaredGroup{
        .lr = intersect("bias_group.lr", a.lr, b.lr),
        .weight_decay = intersect("bias_group.weight_decay", a.weight_decay, b.weight_decay)};
  }
  if (!declared.clipping || !asked.clipping) {
    out.clipping = declared.clipping ? declared.clipping : asked.clipping;
  } else {
    if (declared.clipping->eps != asked.clipping->eps)
      bad("clipping.eps", fmt::format("{:.9g} differs from the declared {:.9g}",
                                      asked.clipping->eps, declared.clipping->eps));
    out.clipping =
        DeclaredClipping{.max_norm = *intersect("clipping.max_norm", declared.clipping->max_norm,
                                                asked.clipping->max_norm),
                         .eps = declared.clipping->eps};
  }
  return out;
}

std::optional<reference::ParamGroup> draw_group(std::mt19937_64& rng, const DeclaredGroup& group,
                                                Kind kind) {
  reference::ParamGroup g;
  if (group.lr) g.lr = draw_inside(rng, *group.lr);
  if (group.weight_decay && takes_decay(kind))
    g.weight_decay = draw_inside(rng, *group.weight_decay);
  if (!g.lr && !g.weight_decay) return std::nullopt;
  return g;
}

double gradient_norm(const reference::Case& c) {
  const double scale = 2.0 / (static_cast<double>(c.n) * c.k);
  std::vector<double> r(static_cast<std::size_t>(c.n) * c.k);
  for (int i = 0; i < c.n; ++i)
    for (int j = 0; j < c.k; ++j) {
      double v = double(c.bias[j]) - double(c.y[i * c.k + j]);
      for (int l = 0; l < c.d; ++l) v += double(c.x[i * c.d + l]) * c.kernel[l * c.k + j];
      r[i * c.k + j] = v;
    }
  double s = 0.0;
  for (int j = 0; j < c.k; ++j) {
    double b = 0.0;
    for (int i = 0; i < c.n; ++i) b += r[i * c.k + j];
    s += (scale * b) * (scale * b);
    for (int l = 0; l < c.d; ++l) {
      double g = 0.0;
      for (int i = 0; i < c.n; ++i) g += double(c.x[i * c.d + l]) * r[i * c.k + j];
      s += (scale * g) * (scale * g);
    }
  }
  return std::sqrt(s);
}

namespace {
// y moved so that every residual is `factor` times what it was: y' = x W + b - factor r.
void scale_residuals(reference::Case& c, double factor) {
  for (int i = 0; i < c.n; ++i)
    for (int j = 0; j < c.k; ++j) {
      double pred = c.bias[j];
      for (int l = 0; l < c.d; ++l) pred += double(c.x[i * c.d + l]) * c.kernel[l * c.k + j];
      const float y = static_cast<float>(pred - factor * (pred - double(c.y[i * c.k + j])));
      if (std::isfinite(y)) c.y[i * c.k + j] = y;
    }
}

using detail::log_uniform;
using detail::one_in;
}  // namespace

void draw_clipping(std::mt19937_64& rng, const DeclaredClipping& clipping, reference::Case& c) {
  double norm = gradient_norm(c);
  if (one_in(rng, 4) && norm > 0.0 && std::isfinite(norm)) {
    scale_residuals(c, log_uniform(rng, 1e-6, 1e-3) / norm);
    norm = gradient_norm(c);
  }
  float max_norm = clipping.max_norm.lo;
  if (!clipping.max_norm.fixed()) {
    const double want = norm * log_uniform(rng, 0.1, 10.0);
    max_norm = std::isfinite(want) ? std::clamp(static_cast<float>(want), clipping.max_norm.lo,
                                                clipping.max_norm.hi)
                                   : draw_inside(rng, clipping.max_norm);
  } else if ((rng() & 1u) != 0 && norm > 0.0 && std::isfinite(norm)) {
    scale_residuals(c, double(max_norm) * log_uniform(rng, 0.1, 10.0) / norm);
  }
  c.clip = reference::Clipping{max_norm, clipping.eps};
}

float draw_inside(std::mt19937_64& rng, const ValueRange& range) {
  if (range.fixed()) return range.lo;
  const int which = std::uniform_int_distribution<int>(0, 3)(rng);
  if (which == 0) return range.lo;
  if (which == 1) return range.hi;
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  const double v = range.lo > 0.0f
                       ? std::exp(std::log(double(range.lo)) +
                                  u * (std::log(double(range.hi)) - std::log(double(range.lo))))
                       : double(range.lo) + u * (double(range.hi) - double(range.lo));
  float f = std::clamp(static_cast<float>(v), range.lo, range.hi);
  // A hyperparameter is 0 or a normal float32 (reference::Case::validate).
  if (f != 0.0f && std::abs(f) < 0x1p-126f) f = range.hi >= 0x1p-126f ? 0x1p-126f : 0.0f;
  return f;
}

}  // namespace sgdc::properties
