#pragma once
/// \file
/// RapidCheck generators of step inputs. Shapes come from the run's shape pool
/// (shapes.hpp), cheap ones first as RapidCheck's size grows; values come from several
/// profiles; the step counter spans the declared counter's range. Every generated case
/// shrinks by halving and dropping rows and columns first, then simplifying values, so
/// counterexamples end small.

#include <rapidcheck.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "sgdc/properties/implementation.hpp"
#include "sgdc/properties/shapes.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/counter.hpp"

namespace sgdc::properties {

/// Where generated cases may lie, whatever the property: what the implementation declares
/// and the run asks for.
struct CaseSpace {
  int max_shards = 8;          ///< num_shards drawn from 1..max_shards (often not dividing n)
  reference::Counter counter;  ///< `step` drawn over the counter's range
  /// The shapes to draw from, cheapest first (shape_pool). Empty: each case draws its own,
  /// with draw_shape under `shapes` when given, else with every dimension uniform in
  /// 1..min(max_dim, 12), growing with the size (small cases for meta-tests).
  std::vector<Shape> pool;
  std::optional<ShapeOptions> shapes;
  /// SGD with momentum, when the implementation takes it: then half the cases draw a
  /// momentum optimizer within what it declares (the rest plain SGD).
  std::optional<MomentumSupport> momentum;
  /// Adam, when the implementation takes it: the cases are then split evenly between
  /// plain SGD, momentum (if taken) and Adam.
  std::optional<AdamSupport> adam;
  /// Adagrad, when the implementation takes it: one more share of the cases, drawn after
  /// the others' so that a run without it draws as before.
  std::optional<AdagradSupport> adagrad;
  /// The declared recipe (narrowed by the run's): the optimizers drawn, the hyperparameters'
  /// ranges, even batches. Cases are drawn and shrunk inside it.
  DeclaredRecipe recipe;
  /// The num_shards every case of the run is given afterwards (`--shards`), if any: even
  /// batches are drawn and shrunk for it.
  std::optional<int> num_shards;
};

/// An Adam optimizer within `support`: b1 0.9 in one case of four, 0 in one of eight, else
/// 1 - log-uniform in [0.001, 0.5]; b2 0.999 in one case of four, else 1 - log-uniform in
/// [1e-4, 0.1]; eps 1e-8 in one case of three, else log-uniform in [1e-12, 1e-2];
/// eps_root (when taken) 0 in half the cases, else log-uniform in [1e-16, 1e-4]; weight
/// decay as for momentum.
reference::Optimizer draw_adam(std::mt19937_64& rng, const AdamSupport& support);

/// An Adagrad optimizer within `support`: eps (outside the root) 1e-10 in one case of
/// three, else log-uniform in [1e-12, 1e-2], or the same values as eps_root (inside, when
/// the implementation puts it there); initial_accumulator_value 0 in one case of three, 0.1
/// in one, else log-uniform in [1e-6, 1]; weight decay as for momentum.
reference::Optimizer draw_adagrad(std::mt19937_64& rng, const AdagradSupport& support);

/// A momentum optimizer within `support`: momentum 0.9 in one case of four, 0 in one of
/// eight, else log-uniform in [0.5, 0.999]; dampening (when taken) 0 in half the cases,
/// else 0.1, 0.5 or 0.9; Nesterov (when taken) in half, with dampening 0 and momentum
/// above 0; weight decay 0 in half, else log-uniform in [1e-5, 0.1] in a taken convention.
reference::Optimizer draw_momentum(std::mt19937_64& rng, const MomentumSupport& support);

/// The step counter before the step: in one case of three a value where counters fail
/// (2^24 - 1, 2^24, 2^31 - 1, 2^31, the last value before the end, the end itself, those
/// in range), in one of six a small one (0..1000), else log-uniform over the whole range.
std::int64_t draw_step(std::mt19937_64& rng, const reference::Counter& counter);

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
  /// Largest n, d, k: pool shapes beyond it are not drawn (unless no pool shape fits),
  /// shapes drawn alone are clamped to it.
  int max_dim = 12;
  bool cancellation = false;  ///< targets y within a few ULPs of x W + b
};

/// Cases drawn from `profile` within `space`, with the custom shrinking described above.
rc::Gen<reference::Case> cases(const CaseSpace& space, const CaseProfile& profile);

/// No limit on a pool shape's dimensions.
inline constexpr int any_dim = 1 << 30;

/// The default mixture: every spread and lr regime, cancellation in one case of four.
rc::Gen<reference::Case> any_case(const CaseSpace& space, int max_dim = any_dim);

/// Small cases with special values injected: NaN, +-inf, -0, subnormals and values near
/// float32's overflow threshold, at least one per case.
rc::Gen<reference::Case> special_cases(const CaseSpace& space);

}  // namespace sgdc::properties