#pragma once
/// \file
/// The inputs of one SGD step, as `docs/spec/step.md` defines them.

#include <array>
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "sgdc/reference/outputs.hpp"

namespace sgdc::reference {

/// One input of the step. Matrices are row-major float32.
struct Case {
  int n = 0;                  ///< batch rows N
  int d = 0;                  ///< input features D
  int k = 0;                  ///< output features K
  std::vector<float> kernel;  ///< W, [d][k] (Flax convention y = x @ W + b)
  std::vector<float> bias;    ///< b, [k]
  std::vector<float> x;       ///< [n][d]
  std::vector<float> y;       ///< [n][k]
  float lr = 0.0f;            ///< learning rate of plain SGD
  int num_shards = 1;         ///< informational: must not change any result of the baseline
  std::int64_t step = 0;      ///< optimizer step counter before the update

  /// Throws std::invalid_argument naming the offending field when a dimension is not
  /// positive or an array's length disagrees with n, d, k.
  void validate() const;
};

/// One array input of the table below.
struct InputArray {
  const char* name;  ///< as in the protocol and fixtures
  std::vector<float> Case::*member;
  Extent extent;
};

/// The array inputs in protocol order (the scalar `lr` comes before them).
inline constexpr std::array<InputArray, 4> input_arrays{{
    {"kernel", &Case::kernel, Extent::kernel},
    {"bias", &Case::bias, Extent::bias},
    {"x", &Case::x, Extent::x},
    {"y", &Case::y, Extent::y},
}};

/// True when some input (lr included) is NaN or infinite.
bool has_nonfinite_input(const Case& c);

/// The case with every NaN or infinite input (lr included) read as 0: the outputs that do
/// not depend on those inputs are the same as the original case's.
Case with_nonfinite_as_zero(Case c);

/// All inputs, exactly (9 significant digits and hexfloat), e.g. for counterexamples;
/// RapidCheck finds it by its name.
void showValue(const Case& c, std::ostream& os);

}  // namespace sgdc::reference
