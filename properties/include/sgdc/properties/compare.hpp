#pragma once
/// \file
/// Comparing a whole StepResult with the oracle's Expectation.

#include <optional>
#include <string>
#include <vector>

#include "sgdc/properties/implementation.hpp"
#include "sgdc/properties/observations.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc {

/// One output element outside what the oracle allows.
struct Mismatch {
  Output output;
  std::size_t index = 0;
  float actual = 0.0f;
  Expected expected;
  ElementCheck check;
};

/// "kernel[3]: got X, expected Y (exact Z) within bound B: error E = R x bound, U ULPs".
std::string describe(const Mismatch& m);

/// Names what is malformed in `r` for case `c` under `d` (wrong array length, a declared
/// output missing), or nothing when it is well formed.
std::optional<std::string> malformed(const StepResult& r, const Case& c, const Declaration& d);

/// Compares the outputs selected by `which` (gradients only when reported) with `e`,
/// records every element in `obs` when given, and returns the elements that fail.
std::vector<Mismatch> compare(const StepResult& r, const Expectation& e,
                              std::initializer_list<Output> which, Observations* obs = nullptr);

/// The values of output `o` in `r` (empty for gradients not reported).
std::vector<float> values_of(const StepResult& r, Output o);

}  // namespace sgdc
