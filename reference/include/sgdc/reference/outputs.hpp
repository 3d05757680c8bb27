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
enum class Output {
  loss,
  kernel,
  bias,
  grad_kernel,
  grad_bias,
  momentum_kernel,
  momentum_bias,
  second_moment_kernel,
  second_moment_bias
};

/// How many values an output (or input array) holds for a case of shape n x d x k.
enum class Extent {
  one,     ///< a scalar
  kernel,  ///< d * k, row-major [d][k]
  bias,    ///< k
  x,       ///< n * d, row-major [n][d]
  y,       ///< n * k, row-major [n][k]
};

/// When an output is part of a step's result.
enum class Reported {
  always,
  with_grads,          ///< by implementations that declare `grads`
  with_buffer,         ///< in the steps whose optimizer keeps a buffer (case.hpp, optimizer_table)
  with_second_moment,  ///< in the steps whose optimizer keeps a second moment
};

/// One row of the output table.
struct OutputInfo {
  Output output;
  const char* name;  ///< as in the protocol, fixtures and reports
  Extent extent;
  Reported reported;
};

/// Every output, in report order: the one list that loops, reports and formats follow.
inline constexpr std::array<OutputInfo, 9> output_table{{
    {Output::loss, "loss", Extent::one, Reported::always},
    {Output::kernel, "kernel", Extent::kernel, Reported::always},
    {Output::bias, "bias", Extent::bias, Reported::always},
    {Output::grad_kernel, "grad_kernel", Extent::kernel, Reported::with_grads},
    {Output::grad_bias, "grad_bias", Extent::bias, Reported::with_grads},
    {Output::momentum_kernel, "momentum_kernel", Extent::kernel, Reported::with_buffer},
    {Output::momentum_bias, "momentum_bias", Extent::bias, Reported::with_buffer},
    {Output::second_moment_kernel, "second_moment_kernel", Extent::kernel,
     Reported::with_second_moment},
    {Output::second_moment_bias, "second_moment_bias", Extent::bias, Reported::with_second_moment},
}};

/// The outputs alone, in report order.
inline constexpr std::array<Output, output_table.size()> all_outputs = [] {
  std::array<Output, output_table.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = output_table[i].output;
  return out;
}();

/// The table row of `o`.
constexpr const OutputInfo& info(Output o) { return output_table[static_cast<std::size_t>(o)]; }

/// The output's name, e.g. "loss" or "grad_kernel".
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
  T momentum_kernel{};  ///< the momentum buffer (Adam: first moment) after the step
  T momentum_bias{};
  T second_moment_kernel{};  ///< Adam's second moment (Adagrad's sum) after the step
  T second_moment_bias{};

  T& operator[](Output o) { return at(*this, o); }
  const T& operator[](Output o) const { return at(*this, o); }

 private:
  // The members in table order: the one place that ties an Output to its member.
  template <class Self>
  static auto& at(Self& self, Output o) {
    static_assert(output_table.size() == 9, "one case per output of the table");
    switch (o) {
      case Output::loss:
        return self.loss;
      case Output::kernel:
        return self.kernel;
      case Output::bias:
        return self.bias;
      case Output::grad_kernel:
        return self.grad_kernel;
      case Output::grad_bias:
        return self.grad_bias;
      case Output::momentum_kernel:
        return self.momentum_kernel;
      case Output::momentum_bias:
        return self.momentum_bias;
      case Output::second_moment_kernel:
        return self.second_moment_kernel;
      case Output::second_moment_bias:
        break;
    }
    return self.second_moment_bias;
  }
};

}  // namespace sgdc::reference
