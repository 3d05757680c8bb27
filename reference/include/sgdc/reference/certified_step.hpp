#pragma once
/// \file
/// The fast oracle path: the step evaluated in double-word arithmetic with a rigorous
/// running error bound, each value's correct rounding certified from its enclosure; a
/// tighter evaluation that tracks its actual rounding errors where some value could not
/// be certified, and the exact rational step only where even that fails (Ziv's
/// strategy). Its results equal round_exact_step's bit for bit
/// (docs/error-model.md, section 11). Light header: no Boost, no Eigen.

#include <cstdint>
#include <optional>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/rounded_step.hpp"

namespace sgdc::reference {

/// The same values as round_exact_step(c), usually much faster. Uncertified elements
/// are taken from the exact step, evaluated at most once per case, and counted in
/// RoundedStep::fallback_elements. Inputs must be finite; throws std::invalid_argument
/// otherwise or for shape errors.
RoundedStep certified_step(const Case& c);

/// The optimizer's outputs of case `c` (kernel, bias and the state its optimizer keeps;
/// the other outputs left empty) from gradients given exactly (`grad_kernel` [d][k],
/// `grad_bias` [k], finite doubles), clipped as `c.clip` says, each correctly rounded as
/// the exact step from those gradients rounds it; none where some value, or the clip
/// factor's branch, is not certified (the caller then takes the exact step).
std::optional<RoundedStep> certified_optimizer(const Case& c,
                                               const std::vector<double>& grad_kernel,
                                               const std::vector<double>& grad_bias);

/// Process-wide tallies of certified_step, since the program started.
struct CertificationCounters {
  std::uint64_t cases = 0;              ///< calls
  std::uint64_t refined_cases = 0;      ///< calls that needed the tighter second evaluation
  std::uint64_t exact_cases = 0;        ///< calls that evaluated the exact step
  std::uint64_t elements = 0;           ///< values rounded (residuals included)
  std::uint64_t fallback_elements = 0;  ///< of which taken from the exact step
  /// Adam's parameter and moments, element by element (one count per parameter element
  /// and pass): certified in double words, else in MPFR intervals (docs/error-model.md,
  /// section 15); `adam_by_mpfr` counts the latter.
  std::uint64_t adam_elements = 0;
  std::uint64_t adam_by_mpfr = 0;
};

/// The tallies so far (thread-safe).
CertificationCounters certification_counters();

}  // namespace sgdc::reference