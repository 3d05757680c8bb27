#pragma once
/// \file
/// RapidCheck generators of step inputs. Shapes grow with RapidCheck's size from 1x1x1;
/// values come from several profiles; every generated case shrinks by dropping rows and
/// columns first, then simplifying values, so counterexamples end small.

#include <rapidcheck.h>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/counter.hpp"

namespace sgdc::properties {

/// Where generated cases may lie, whatever the property: what the implementation declares
/// and the run asks for.
struct CaseSpace {
  int max_shards = 8;          ///< num_shards drawn from 1..max_shards (often not dividing n)
  reference::Counter counter;  ///< `step` drawn over the counter's range (see draw_step)
};

/// How input values are distributed.
enum class Spread {
  unit,     ///< approximately standard normal
  wide,     ///< log-uniform magnitudes in [1e-3, 1e3], random signs
  extreme,  ///< log-uniform magnitudes in [2^-60, 2^60], random signs
};

/// How the learning rate is chosen.
enum class LrRegime {
  usual,  ///< log-uniform in [1e-4, 1]
  large,  ///< log-uniform in [1, 100]: the loss may well grow
  tiny,   ///< so small that updates move parameters by a few ULPs
  mixed,  ///< any of the above
};

/// What to generate.
struct CaseProfile {
  Spread spread = Spread::unit;
  LrRegime lr = LrRegime::mixed;
  int max_dim = 12;           ///< largest n, d, k at RapidCheck size 100
  bool cancellation = false;  ///< targets y within a few ULPs of x W + b
  int min_dim = 1;            ///< smallest n, d, k
};

/// Cases drawn from `profile` within `space`, with the custom shrinking described above.
rc::Gen<reference::Case> cases(const CaseSpace& space, const CaseProfile& profile);

/// The default mixture: every spread and lr regime, cancellation in one case of four.
rc::Gen<reference::Case> any_case(const CaseSpace& space, int max_dim = 12);

/// Small cases with special values injected: NaN, +-inf, -0, subnormals and values near
/// float32's overflow threshold, at least one per case.
rc::Gen<reference::Case> special_cases(const CaseSpace& space);

}  // namespace sgdc::properties