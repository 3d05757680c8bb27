#pragma once
/// \file
/// The step's outputs in one table: name, report order, extent, and the member that holds
/// each in every per-output structure (results, expectations, fixtures, statistics).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sgdc::reference {

/// The outputs, in report order.
enum class Output { loss, kernel, bias, grad_kernel, grad_bias };

/// How many values an output (or input array) holds for a case of shape n x d x k.
enum class Extent {
  one,     ///< a scalar
  kernel,  ///< d * k, row-major [d][k]
  bias,    ///< k
  x,       ///< n * d, row-major [n][d]
  y,       ///< n * k, row-major [n][k]
};

/// One row of the output table.
struct OutputInfo {
  Output output;
  const char* name;  ///< as in the protocol, fixtures and reports
  Extent extent;
  bool gradient;  ///< reported only by implementations that declare `grads`
};

/// Every output, in report order: the one list that loops, reports and formats follow.
inline constexpr std::array<OutputInfo, 5> output_table{{
    {Output::loss, "loss", Extent::one, false},
    {Output::kernel, "kernel", Extent::kernel, false},
    {Output::bias, "bias", Extent::bias, false},
    {Output::grad_kernel, "grad_kernel", Extent::kernel, true},
    {Output::grad_bias, "grad_bias", Extent::bias, true},
}};

/// The outputs alone, in report order.
inline constexpr std::array<Output, output_table.size()> all_outputs = [] {
  std::array<Output, output_table.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = output_table[i].output;
  return out;
}();

/// The table row of `o`.
constexpr const OutputInfo& info(Output o) { return output_table[static_cast<std::size_t>(o)]; }

/// "loss", "kernel", "bias", "grad_kernel" or "grad_bias".
constexpr const char* to_string(Output o) { return info(o).name; }

/// The output named `name`, if any.
std::optional<Output> parse_output(std::string_view name);

/// Values of `extent` for a case of shape n x d x k.
std::size_t element_count(Extent extent, int n, int d, int k);

/// The array's dimensions, outermost first: none for a scalar, {d, k} for the kernel, ...
std::vector<std::int64_t> dimensions(Extent extent, int n, int d, int k);

/// The dimensions' names, as a reader would write them: "a scalar", "d, k", "k", "n, d", "n, k".
const char* dimension_names(Extent extent);

/// One T per output, each a named member, also reachable by Output.
template <class T>
struct PerOutput {
  T loss{};
  T kernel{};
  T bias{};
  T grad_kernel{};
  T grad_bias{};

  T& operator[](Output o) { return this->*member(o); }
  const T& operator[](Output o) const { return this->*member(o); }

 private:
  // The members in table order: the one place that ties an Output to its member.
  static constexpr T PerOutput::*member(Output o) {
    constexpr T PerOutput::*members[] = {&PerOutput::loss, &PerOutput::kernel, &PerOutput::bias,
                                         &PerOutput::grad_kernel, &PerOutput::grad_bias};
    static_assert(std::size(members) == output_table.size());
    return members[static_cast<std::size_t>(o)];
  }
};

}  // namespace sgdc::reference
