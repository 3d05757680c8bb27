#include "sgdc/conformance/open.hpp"

#include <string>

#include "sgdc/conformance/builtin/catalogue.hpp"

namespace sgdc::conformance {

std::unique_ptr<properties::Implementation> open_implementation(
    const std::string& spec, const protocol::AdapterOptions& options) {
  constexpr std::string_view prefix = "builtin:";
  if (spec.rfind(prefix, 0) == 0) return builtin::make(builtin::find(spec.substr(prefix.size())));
  return std::make_unique<protocol::ProtocolAdapter>(spec, options);
}

}  // namespace sgdc::conformance
