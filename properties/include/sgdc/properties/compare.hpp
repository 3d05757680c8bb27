#pragma once
/// \file
/// Comparing a whole StepResult with the oracle's Expectation.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sgdc/properties/implementation.hpp"
#include "sgdc/properties/observations.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::properties {

/// One output element outside what the oracle allows.
struct Mismatch {
  reference::Output output;
  std::size_t index = 0;
  float actual = 0.0f;
  reference::Expected expected;
  reference::ElementCheck check;
};

/// "kernel[3]: got X, expected Y (exact Z) within bound B: error E = R x bound, U ULPs";
/// a NaN or infinity is named as such, and ULPs are left out where they mean nothing.
std::string describe(const Mismatch& m);

/// Names what is malformed in `r` for case `c` under `d` (wrong array length, a declared
/// output missing), or nothing when it is well formed.
std::optional<std::string> malformed(const reference::StepResult& r, const reference::Case& c,
                                     const Declaration& d);

/// Compares the outputs `which` (gradients only when reported) with `e`, records every
/// element in `obs` when given, and returns the elements that fail.
std::vector<Mismatch> compare(const reference::StepResult& r, const reference::Expectation& e,
                              std::span<const reference::Output> which,
                              Observations* obs = nullptr);

/// The same over every output.
std::vector<Mismatch> compare(const reference::StepResult& r, const reference::Expectation& e,
                              Observations* obs = nullptr);

}  // namespace sgdc::properties
