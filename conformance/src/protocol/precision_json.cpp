#include "sgdc/conformance/protocol/precision_json.hpp"

namespace sgdc::conformance::protocol {

nlohmann::ordered_json encode_precision(const reference::Stages& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const reference::StageField& field : reference::stage_fields)
    j[field.name] = reference::to_string(s.*field.format);
  return j;
}

}  // namespace sgdc::conformance::protocol
