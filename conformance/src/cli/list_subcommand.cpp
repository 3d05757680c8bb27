// `sgd-conformance list`: the built-in implementations and the properties.
#include <fmt/format.h>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/properties/property.hpp"
#include "subcommands.hpp"

namespace sgdc::conformance::cli {

void add_list(CLI::App& app, int& status) {
  CLI::App* cmd = app.add_subcommand("list", "List built-in implementations and properties");
  cmd->callback([&status] {
    fmt::print("built-in implementations (--impl builtin:NAME):\n");
    for (const auto& e : builtin::catalogue())
      fmt::print("  {:<24} {:<9} {}\n", e.name, builtin::to_string(e.kind), e.description);
    fmt::print("\nproperties (--property NAME):\n");
    for (const auto& p : properties::all_properties())
      fmt::print("  {:<18} {}\n", p.name, p.description);
    status = 0;
  });
}

}  // namespace sgdc::conformance::cli