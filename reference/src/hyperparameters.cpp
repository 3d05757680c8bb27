#include "sgdc/reference/hyperparameters.hpp"

namespace sgdc::reference {

std::optional<Hyperparameter> find_hyperparameter(std::string_view name) {
  for (const Hyperparameter& h : hyperparameters)
    if (name == h.name) return h;
  return std::nullopt;
}

}  // namespace sgdc::reference
