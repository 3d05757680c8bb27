#include "sgdc/reference/hyperparameters.hpp"

namespace sgdc::reference {

std::optional<Hyperparameter> find_hyperparameter(std::string_view name) {
  for (const Hyperparameter& h : hyperparameters)
    if (name == h.name) return h;
  return std::nullopt;
}

std::vector<OptimizerField> optimizer_fields(Optimizer::Kind kind) {
  std::vector<OptimizerField> out;
  const Hyperparameter* decay = nullptr;
  for (const Hyperparameter& h : hyperparameters) {
    if (!h.taken_by(kind) || h.name == std::string_view("lr")) continue;
    if (h.name == std::string_view("weight_decay"))
      decay = &h;
    else
      out.push_back({h.name, &h});
  }
  if (kind == Optimizer::Kind::momentum) out.push_back({"nesterov", nullptr});
  if (decay) out.push_back({decay->name, decay});
  return out;
}

}  // namespace sgdc::reference
