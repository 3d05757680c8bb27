#include "sgdc/properties/exercised.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sgdc/properties/declared_recipe.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::properties {

namespace {

using Kind = reference::Optimizer::Kind;
using Decay = reference::Optimizer::Decay;

bool stateful(const reference::Case& c) { return c.optimizer.kind != Kind::sgd; }

using Range = std::optional<std::pair<float, float>>;

void widen(Range& r, float v) {
  r = r ? std::pair{std::min(r->first, v), std::max(r->second, v)} : std::pair{v, v};
}

void widen(Range& r, const Range& o) {
  if (!o) return;
  r = r ? std::pair{std::min(r->first, o->first), std::max(r->second, o->second)} : *o;
}

constexpr const char* bias_group_names[] = {"bias_group.lr", "bias_group.weight_decay",
                                            "clipping.max_norm"};

}  // namespace

// The norm once per case, for both of clipping's options.
CaseFacts::CaseFacts(const reference::Case& c) : c(c) {
  if (c.clip) clip_active = double(c.clip->max_norm) < gradient_norm(c) + double(c.clip->eps);
}

const std::vector<ExercisedOption>& exercised_options() {
  static const std::vector<ExercisedOption> options = {
      {"sgd", [](const CaseFacts& f) { return f.c.optimizer.kind == Kind::sgd; }},
      {"momentum", [](const CaseFacts& f) { return f.c.optimizer.kind == Kind::momentum; }},
      {"adam", [](const CaseFacts& f) { return f.c.optimizer.kind == Kind::adam; }},
      {"adagrad", [](const CaseFacts& f) { return f.c.optimizer.kind == Kind::adagrad; }},
      {"nesterov", [](const CaseFacts& f) { return f.c.optimizer.nesterov; }},
      {"dampening", [](const CaseFacts& f) { return f.c.optimizer.dampening != 0.0f; }},
      {"decay coupled",
       [](const CaseFacts& f) {
         return f.c.optimizer.weight_decay != 0.0f && f.c.optimizer.decay == Decay::coupled;
       }},
      {"decay decoupled",
       [](const CaseFacts& f) {
         return f.c.optimizer.weight_decay != 0.0f && f.c.optimizer.decay == Decay::decoupled;
       }},
      {"eps_root", [](const CaseFacts& f) { return f.c.optimizer.eps_root != 0.0f; }},
      {"fresh state", [](const CaseFacts& f) { return stateful(f.c) && f.c.fresh_state(); }},
      {"carried state", [](const CaseFacts& f) { return stateful(f.c) && !f.c.fresh_state(); }},
      {"num_shards > 1", [](const CaseFacts& f) { return f.c.num_shards > 1; }},
      {"uneven shards", [](const CaseFacts& f) { return f.c.n % f.c.num_shards != 0; }},
      {"bias group", [](const CaseFacts& f) { return f.c.bias_group.has_value(); }},
      {"clipping active", [](const CaseFacts& f) { return f.clip_active.value_or(false); }},
      {"clipping inactive",
       [](const CaseFacts& f) { return f.clip_active.has_value() && !*f.clip_active; }},
  };
  return options;
}

void Exercised::add(const reference::Case& c) {
  ++cases;
  const auto& options = exercised_options();
  const CaseFacts facts(c);
  for (std::size_t i = 0; i < options.size(); ++i) counts[i] += options[i].in(facts) ? 1 : 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const reference::Hyperparameter& h = reference::hyperparameters[i];
    const float v = h.get(c);
    if (!h.taken_by(c.optimizer.kind) || !std::isfinite(v)) continue;
    widen(ranges[i], v);
  }
  const std::optional<float> values[] = {
      c.bias_group ? c.bias_group->lr : std::nullopt,
      c.bias_group ? c.bias_group->weight_decay : std::nullopt,
      c.clip ? std::optional<float>(c.clip->max_norm) : std::nullopt};
  for (std::size_t i = 0; i < bias_group_ranges.size(); ++i)
    if (values[i] && std::isfinite(*values[i])) widen(bias_group_ranges[i], *values[i]);
}

std::vector<std::pair<std::string, std::pair<float, float>>> Exercised::drawn() const {
  std::vector<std::pair<std::string, std::pair<float, float>>> out;
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i]) out.emplace_back(reference::hyperparameters[i].name, *ranges[i]);
  for (std::size_t i = 0; i < bias_group_ranges.size(); ++i)
    if (bias_group_ranges[i]) out.emplace_back(bias_group_names[i], *bias_group_ranges[i]);
  return out;
}

void Exercised::merge(const Exercised& other) {
  cases += other.cases;
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
  for (std::size_t i = 0; i < ranges.size(); ++i) widen(ranges[i], other.ranges[i]);
  for (std::size_t i = 0; i < bias_group_ranges.size(); ++i)
    widen(bias_group_ranges[i], other.bias_group_ranges[i]);
}

std::string Exercised::summary() const {
  std::string out;
  const auto& options = exercised_options();
  for (std::size_t i = 0; i < options.size(); ++i)
    if (counts[i] > 0)
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", options[i].name, counts[i]);
  std::string text;
  for (const auto& [name, r] : drawn()) {
    text += fmt::format("{}{} ", text.empty() ? "" : ", ", name);
    text += r.first == r.second ? fmt::format("{:.3g}", r.first)
                                : fmt::format("[{:.3g}, {:.3g}]", r.first, r.second);
  }
  return text.empty() ? out : out + "; " + text;
}

std::vector<std::string> unexercised(const Exercised& e, const Declaration& d) {
  auto count = [&](std::string_view name) {
    const auto& options = exercised_options();
    for (std::size_t i = 0; i < options.size(); ++i)
      if (name == options[i].name) return e.counts[i];
    return 0;
  };
  std::vector<std::pair<std::string_view, bool>> declared;
  const Capabilities& c = d.capabilities;
  const DeclaredRecipe& r = d.recipe;
  if (c.momentum && r.runs(Kind::momentum)) {
    declared.insert(declared.end(), {{"momentum", true},
                                     {"nesterov", c.momentum->nesterov},
                                     {"dampening", c.momentum->dampening}});
  }
  if (c.adam && r.runs(Kind::adam))
    declared.insert(declared.end(), {{"adam", true}, {"eps_root", c.adam->eps_root}});
  if (c.adagrad && r.runs(Kind::adagrad))
    declared.insert(declared.end(), {{"adagrad", true}, {"eps_root", c.adagrad->eps_root}});
  bool coupled = false, decoupled = false;
  for (const reference::OptimizerInfo& o : reference::optimizer_table) {
    if (!r.runs(o.kind)) continue;  // declared, but outside the recipe: never drawn
    const auto [takes_coupled, takes_decoupled] = decay_conventions(c, o.kind);
    coupled = coupled || takes_coupled;
    decoupled = decoupled || takes_decoupled;
  }
  declared.insert(declared.end(), {{"decay coupled", coupled}, {"decay decoupled", decoupled}});
  declared.push_back({"bias group", r.bias_group.has_value()});
  declared.push_back({"clipping active", r.clipping.has_value()});
  declared.push_back({"clipping inactive", r.clipping.has_value()});
  std::vector<std::string> out;
  for (const auto& [name, on] : declared)
    if (on && count(name) == 0)
      out.push_back(
          fmt::format("no judged case exercised {}, which the implementation declares", name));
  return out;
}

}  // namespace sgdc::properties
