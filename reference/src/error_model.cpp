#include "sgdc/reference/error_model.hpp"

#include <stdexcept>
#include <string>
#include <string_view>

namespace sgdc::reference {

Subnormals parse_subnormals(const char* text) {
  const std::string_view t(text);
  if (t == "ieee") return Subnormals::ieee;
  if (t == "ftz") return Subnormals::flush_to_zero;
  throw std::invalid_argument("subnormals: expected \"ieee\" or \"ftz\", got \"" + std::string(t) +
                              "\"");
}

const char* to_string(Subnormals s) { return s == Subnormals::ieee ? "ieee" : "ftz"; }

}  // namespace sgdc::reference