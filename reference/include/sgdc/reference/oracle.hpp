#pragma once
/// \file
/// The referee: what a correct float32 implementation must return for a case, element by
/// element, with the derived bound. Light header: no Boost, no Eigen.

#include <cstdint>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"
#include "sgdc/reference/expectation.hpp"

namespace sgdc::reference {

/// Rounds every exact output correctly and bounds it under `model`. Non-finite inputs
/// are allowed: the outputs that depend on them must be non-finite, the others are
/// bounded as usual. Throws std::invalid_argument for shape errors. The exact values
/// come from the certified fast path (certified_step.hpp), which falls back to exact
/// rationals where it cannot certify a rounding: the result is expect_exact's, bit for bit.
Expectation expect(const Case& c, const ErrorModel& model = {});

/// The same expectation computed from the exact rational step alone (the reference for
/// the fast path; slower).
Expectation expect_exact(const Case& c, const ErrorModel& model = {});

}  // namespace sgdc::reference