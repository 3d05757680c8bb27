#pragma once
// What the fixture codec (fixture_writer.cpp, fixture_reader.cpp, derive.cpp) knows of an
// optimizer beyond the reference's tables (optimizer_table, hyperparameters and
// optimizer_fields(), which give inputs.optimizer's members): the version that
// holds it, and which outputs are rational.

#include <cstdint>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/error_model.hpp"

namespace sgdc::conformance::regression::detail {

/// Whether case `c` needs format version 2: an optimizer after momentum, a bias group, or
/// clipping.
inline bool needs_version_2(const reference::Case& c);

/// The first format version that holds optimizer `kind`: version 1 knew plain SGD and
/// momentum; every later optimizer (Adam, Adagrad) is version 2.
inline std::int64_t first_version(reference::Optimizer::Kind kind) {
  return kind == reference::Optimizer::Kind::sgd || kind == reference::Optimizer::Kind::momentum
             ? 1
             : 2;
}

/// Whether output `o` of case `c` carries exact_rational: every output but the parameters
/// of an optimizer that divides by the square root of a second moment (Adam, Adagrad),
/// and with clipping every output the optimizer makes (its parameters and state, read
/// from gradients times the clip factor), irrational in general, whose exact values are
/// decimals an enclosure decides.
inline bool has_exact_rational(const reference::Case& c, reference::Output o) {
  const bool parameter = o == reference::Output::kernel || o == reference::Output::bias;
  const bool from_optimizer =
      parameter || (o != reference::Output::loss && o != reference::Output::grad_kernel &&
                    o != reference::Output::grad_bias);
  if (c.clip && from_optimizer) return false;
  return !reference::info(c.optimizer.kind).second_moment || !parameter;
}

inline bool needs_version_2(const reference::Case& c) {
  return c.bias_group || c.clip || first_version(c.optimizer.kind) >= 2;
}

/// With declared precision stages, no output carries exact_rational: `exact` is the
/// expected value as a double (docs/fixtures.md).
inline bool has_exact_rational(const reference::Case& c, const reference::ErrorModel& arithmetic,
                               reference::Output o) {
  return !arithmetic.stages.declared() && has_exact_rational(c, o);
}

/// Whether a fixture of case `c` under `arithmetic` needs format version 2.
inline bool needs_version_2(const reference::Case& c, const reference::ErrorModel& arithmetic) {
  return needs_version_2(c) || arithmetic.stages.declared();
}

}  // namespace sgdc::conformance::regression::detail
