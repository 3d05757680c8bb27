#include "sgdc/conformance/open.hpp"

#include <CLI/CLI.hpp>
#include <string>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/protocol/adapter.hpp"

namespace sgdc::conformance {

std::unique_ptr<Implementation> open_implementation(const std::string& spec,
                                                    const OpenOptions& options) {
  constexpr std::string_view prefix = "builtin:";
  if (spec.rfind(prefix, 0) == 0) return builtin::make(builtin::find(spec.substr(prefix.size())));
  return std::make_unique<protocol::ProtocolAdapter>(
      spec, options.case_timeout_s, options.handshake_timeout_s, protocol::ChildProcess::Options{},
      options.arrays);
}

void add_open_options(CLI::App& cmd, OpenOptions& options) {
  cmd.add_option("--timeout", options.case_timeout_s, "Seconds an adapter may take per case")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--handshake-timeout", options.handshake_timeout_s,
                 "Seconds an adapter may take to start and answer hello")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option_function<std::string>(
         "--arrays",
         [&options](const std::string& name) {
           options.arrays =
               name == "base64" ? protocol::ArrayEncoding::base64 : protocol::ArrayEncoding::binary;
         },
         "Array encoding offered to adapters: binary (raw bytes after each line, used "
         "when the adapter accepts it) or base64 (protocol v1 as published)")
      ->check(CLI::IsMember({"binary", "base64"}))
      ->default_str(std::string(protocol::to_string(options.arrays)));
  cmd.add_option("--ahead", options.window,
                 "Cases sent to an adapter ahead of their answers, when it declares "
                 "max_in_flight (1: one at a time)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

}  // namespace sgdc::conformance
