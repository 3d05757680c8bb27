#include "sgdc/properties/implementation.hpp"

namespace sgdc::properties {

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
