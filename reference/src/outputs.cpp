#include "sgdc/reference/outputs.hpp"

namespace sgdc::reference {

std::optional<Output> parse_output(std::string_view name) {
  for (const OutputInfo& row : output_table)
    if (name == row.name) return row.output;
  return std::nullopt;
}

std::size_t element_count(Extent extent, int n, int d, int k) {
  const auto n_ = static_cast<std::size_t>(n), d_ = static_cast<std::size_t>(d),
             k_ = static_cast<std::size_t>(k);
  switch (extent) {
    case Extent::one:
      return 1;
    case Extent::kernel:
      return d_ * k_;
    case Extent::bias:
      return k_;
    case Extent::x:
      return n_ * d_;
    case Extent::y:
      return n_ * k_;
  }
  return 0;
}

std::vector<std::int64_t> dimensions(Extent extent, int n, int d, int k) {
  switch (extent) {
    case Extent::one:
      return {};
    case Extent::kernel:
      return {d, k};
    case Extent::bias:
      return {k};
    case Extent::x:
      return {n, d};
    case Extent::y:
      return {n, k};
  }
  return {};
}

const char* dimension_names(Extent extent) {
  switch (extent) {
    case Extent::one:
      return "a scalar";
    case Extent::kernel:
      return "d, k";
    case Extent::bias:
      return "k";
    case Extent::x:
      return "n, d";
    case Extent::y:
      return "n, k";
  }
  return "?";
}

}  // namespace sgdc::reference
