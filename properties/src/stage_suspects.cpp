#include "stage_suspects.hpp"

#include <fmt/format.h>

#include <exception>

#include "sgdc/properties/compare.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::properties {

std::vector<std::string> suspected_stages(const reference::Case& c, const reference::StepResult& r,
                                          const Declaration& d) {
  std::vector<std::string> found;
  const reference::Stages& declared = d.arithmetic.stages;
  if (!declared.declared()) return found;
  reference::Case as_run = c;
  if (!d.capabilities.sharded) as_run.num_shards = 1;  // as Context::expect reads it
  auto fits = [&](const reference::Stages& stages) {
    reference::ErrorModel model = d.arithmetic;
    model.stages = stages;
    try {
      return compare(r, reference::expect(as_run, model)).empty();
    } catch (const std::exception&) {
      return false;  // a combination the bounds do not model
    }
  };
  const std::string param = to_string(declared.param);
  if (declared.reduce != declared.param) {
    reference::Stages s = declared;
    s.reduce = declared.param;
    if (fits(s))
      found.push_back(
          fmt::format("the ranks' gradients are reduced in {} where reduce_dtype {} is declared (a "
                      "MixedPrecisionPolicy without reduce_dtype, or with {})",
                      param, to_string(declared.reduce), param));
  }
  if (declared.master != declared.param) {
    reference::Stages s = declared;
    s.master = declared.param;
    if (fits(s))
      found.push_back(fmt::format(
          "the parameters and optimizer state are stored and updated in {}: {} master weights "
          "where master_dtype {} is declared (a model converted to {} before fully_shard?)",
          param, param, to_string(declared.master), param));
  }
  if (fits(reference::Stages{}) && !(d.arithmetic.format.narrower_than_float32()))
    found.push_back(fmt::format(
        "every stage computed in float32: the declared param_dtype {} is not applied (a "
        "MixedPrecisionPolicy not passed to fully_shard, or cast_forward_inputs off?)",
        param));
  return found;
}

}  // namespace sgdc::properties
