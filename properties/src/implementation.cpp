#include "sgdc/properties/implementation.hpp"

#include <optional>
#include <string>

namespace sgdc::properties {

std::optional<std::string> outside_declaration(const reference::Case& c, const Declaration& d) {
  using Kind = reference::Optimizer::Kind;
  const reference::Optimizer& o = c.optimizer;
  const Capabilities& caps = d.capabilities;
  const bool decays =
      o.weight_decay != 0.0f || (c.bias_group && c.bias_group->weight_decay.value_or(0.0f) != 0.0f);
  const bool coupled = o.decay == reference::Optimizer::Decay::coupled;
  if (o.kind == Kind::momentum) {
    if (!caps.momentum) return "a momentum step; the implementation declares no momentum";
    if (reference::applied_dampening(o) != 0.0f && !caps.momentum->dampening)
      return "a dampened momentum step; momentum.dampening is not declared";
    if (o.nesterov && !caps.momentum->nesterov)
      return "a Nesterov step; momentum.nesterov is not declared";
    if (decays && !(coupled ? caps.momentum->coupled_decay : caps.momentum->decoupled_decay))
      return std::string("weight decay ") + reference::to_string(o.decay) +
             "; momentum.weight_decay does not declare it";
  }
  if (o.kind == Kind::adam) {
    if (!caps.adam) return "an Adam step; the implementation declares no adam";
    if (o.eps_root != 0.0f && !caps.adam->eps_root)
      return "an eps_root above 0; adam.eps_root is not declared";
    if (decays && !(coupled ? caps.adam->coupled_decay : caps.adam->decoupled_decay))
      return std::string("weight decay ") + reference::to_string(o.decay) +
             "; adam.weight_decay does not declare it";
  }
  if (o.kind == Kind::adagrad) {
    if (!caps.adagrad) return "an Adagrad step; the implementation declares no adagrad";
    if ((o.eps_root != 0.0f || o.eps == 0.0f) && !caps.adagrad->eps_root)
      return "eps inside the square root (eps_root); adagrad.eps_root is not declared";
    if ((o.eps != 0.0f || o.eps_root == 0.0f) && caps.adagrad->eps_root)
      return "eps outside the square root; adagrad.eps_root declares it inside";
    if (decays && !(coupled ? caps.adagrad->coupled_decay : caps.adagrad->decoupled_decay))
      return std::string("weight decay ") + reference::to_string(o.decay) +
             "; adagrad.weight_decay does not declare it";
  }
  if (c.bias_group && !d.recipe.bias_group)
    return "a bias in a parameter group of its own; the recipe declares no bias_group";
  if (c.clip && !d.recipe.clipping)
    return "gradients clipped to a global norm; the recipe declares no clipping";
  if (!c.clip && d.recipe.clipping) return "gradients not clipped; the recipe declares clipping";
  if (!d.recipe.admits(c)) return "outside the declared recipe";
  return std::nullopt;
}

bool declares(const Capabilities& caps, reference::Optimizer::Kind kind) {
  using Kind = reference::Optimizer::Kind;
  switch (kind) {
    case Kind::sgd:
      return true;
    case Kind::momentum:
      return caps.momentum.has_value();
    case Kind::adam:
      return caps.adam.has_value();
    case Kind::adagrad:
      return caps.adagrad.has_value();
  }
  return false;
}

std::pair<bool, bool> decay_conventions(const Capabilities& caps, reference::Optimizer::Kind kind) {
  using Kind = reference::Optimizer::Kind;
  auto of = [](const auto& support) {
    return support ? std::pair{support->coupled_decay, support->decoupled_decay}
                   : std::pair{false, false};
  };
  switch (kind) {
    case Kind::momentum:
      return of(caps.momentum);
    case Kind::adam:
      return of(caps.adam);
    case Kind::adagrad:
      return of(caps.adagrad);
    case Kind::sgd:
      break;
  }
  return {false, false};
}

std::vector<StepOutcome> Implementation::step_batch(std::span<const reference::Case> cases) {
  std::vector<StepOutcome> out;
  out.reserve(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    try {
      out.push_back(step(cases[i]));
    } catch (const ImplementationFault& f) {
      if (f.position()) throw;
      throw ImplementationFault(f.what(), i, std::move(out));
    }
  }
  return out;
}

}  // namespace sgdc::properties
