#pragma once
/// \file
/// The step's hyperparameters as data (docs/spec/step.md, "Optimizers"): one row per
/// hyperparameter, naming it as the protocol, fixtures and recipes do, the optimizers that
/// take it, and the values where the step is defined. Code that needs every hyperparameter
/// (a declared recipe, its codec, a report of drawn ranges) reads this table.

#include <array>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "sgdc/reference/case.hpp"

namespace sgdc::reference {

/// One hyperparameter of the step.
struct Hyperparameter {
  const char* name;  ///< as in the protocol, fixtures and recipes
  /// Which optimizers take it (a set of optimizer_table rows, takers()): plain SGD only
  /// `lr`.
  unsigned takers;
  /// The finite values where the step is defined: [lowest, highest], each end open when
  /// its flag says so (eps > 0, b1 < 1).
  float lowest, highest;
  bool lowest_open, highest_open;
  float (*get)(const Case&);
  void (*set)(Case&, float);

  /// Whether the optimizer `kind` takes this hyperparameter.
  constexpr bool taken_by(Optimizer::Kind kind) const {
    return (takers >> static_cast<unsigned>(kind)) & 1u;
  }
  /// Whether `v` lies where the step is defined.
  bool valid(float v) const {
    return (lowest_open ? v > lowest : v >= lowest) && (highest_open ? v < highest : v <= highest);
  }
};

/// The set of optimizers `kinds`, as Hyperparameter::takers holds it.
constexpr unsigned takers(std::initializer_list<Optimizer::Kind> kinds) {
  unsigned set = 0;
  for (Optimizer::Kind k : kinds) set |= 1u << static_cast<unsigned>(k);
  return set;
}

namespace detail {
inline constexpr float unbounded = 3.40282347e38f;  // FLT_MAX: any finite value
using K = Optimizer::Kind;
inline constexpr unsigned every_optimizer = takers({K::sgd, K::momentum, K::adam, K::adagrad});
}  // namespace detail

/// Every hyperparameter, in protocol order.
inline constexpr std::array<Hyperparameter, 9> hyperparameters{{
    {"lr", detail::every_optimizer, 0.0f, detail::unbounded, false, false,
     [](const Case& c) { return c.lr; }, [](Case& c, float v) { c.lr = v; }},
    {"momentum", takers({detail::K::momentum}), 0.0f, 1.0f, false, false,
     [](const Case& c) { return c.optimizer.momentum; },
     [](Case& c, float v) { c.optimizer.momentum = v; }},
    {"dampening", takers({detail::K::momentum}), 0.0f, 1.0f, false, false,
     [](const Case& c) { return c.optimizer.dampening; },
     [](Case& c, float v) { c.optimizer.dampening = v; }},
    {"weight_decay", takers({detail::K::momentum, detail::K::adam, detail::K::adagrad}), 0.0f,
     detail::unbounded, false, false, [](const Case& c) { return c.optimizer.weight_decay; },
     [](Case& c, float v) { c.optimizer.weight_decay = v; }},
    {"b1", takers({detail::K::adam}), 0.0f, 1.0f, false, true,
     [](const Case& c) { return c.optimizer.b1; }, [](Case& c, float v) { c.optimizer.b1 = v; }},
    {"b2", takers({detail::K::adam}), 0.0f, 1.0f, false, true,
     [](const Case& c) { return c.optimizer.b2; }, [](Case& c, float v) { c.optimizer.b2 = v; }},
    {"eps", takers({detail::K::adam, detail::K::adagrad}), 0.0f, detail::unbounded, true, false,
     [](const Case& c) { return c.optimizer.eps; }, [](Case& c, float v) { c.optimizer.eps = v; }},
    {"eps_root", takers({detail::K::adam, detail::K::adagrad}), 0.0f, detail::unbounded, false,
     false, [](const Case& c) { return c.optimizer.eps_root; },
     [](Case& c, float v) { c.optimizer.eps_root = v; }},
    {"initial_accumulator_value", takers({detail::K::adagrad}), 0.0f, detail::unbounded, false,
     false, [](const Case& c) { return c.optimizer.initial_accumulator_value; },
     [](Case& c, float v) { c.optimizer.initial_accumulator_value = v; }},
}};

/// The row named `name`, or none.
std::optional<Hyperparameter> find_hyperparameter(std::string_view name);

/// One member an optimizer's step carries besides `lr` and its decay convention: a
/// hyperparameter of the table, or momentum's `nesterov` flag (`hyperparameter` null).
struct OptimizerField {
  const char* name;
  const Hyperparameter* hyperparameter;
};

/// The members of an optimizer `kind`'s step, in the order the protocol's step message and
/// the fixtures write them: the optimizer's own hyperparameters in table order, then
/// momentum's `nesterov`, then `weight_decay` (when it takes one). Empty for plain SGD.
std::vector<OptimizerField> optimizer_fields(Optimizer::Kind kind);

}  // namespace sgdc::reference
