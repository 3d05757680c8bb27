#include "sgdc/conformance/open.hpp"

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/protocol/adapter.hpp"

namespace sgdc::conformance {

std::unique_ptr<Implementation> open_implementation(const std::string& spec,
                                                    const OpenOptions& options) {
  constexpr std::string_view prefix = "builtin:";
  if (spec.rfind(prefix, 0) == 0) return builtin::make(builtin::find(spec.substr(prefix.size())));
  return std::make_unique<protocol::ProtocolAdapter>(spec, options.case_timeout_s,
                                                     options.handshake_timeout_s);
}

}  // namespace sgdc::conformance
