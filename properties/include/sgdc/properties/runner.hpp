#pragma once
/// \file
/// Runs a property over many generated cases, shrinks the first failure to a minimal
/// counterexample, and reports worst-case statistics. Case i of a run depends only on
/// the seed and i (and the options that shape the cases), so `--seed S --case I` replays it.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sgdc/properties/exercised.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/properties/shapes.hpp"

namespace sgdc::properties {

/// How to run a property.
struct RunOptions {
  int cases = 100;  ///< passing cases wanted
  std::uint64_t seed = 1;
  std::optional<int> only_case;  ///< replay just this case index
  /// Every drawn case (and every shrink of it) gets this num_shards.
  std::optional<int> num_shards;
  int shrink_budget = 2000;  ///< most property evaluations spent shrinking
  /// Drawn cases evaluated together: each round of their steps goes to one step_batch call.
  /// With Implementation::concurrent_steps(), batches hold at least 32 cases per thread,
  /// evaluated side by side, and grow to 512; what is judged never depends on it.
  int batch = 8;
  /// The shapes cases take (the pool comes from `seed`).
  ShapeOptions shapes;
  /// Failures the caller expects (an `xfail` line), given a failure's text. A failing
  /// case is expected when each of its failing elements is (the text of one element is the
  /// message's first line, a newline, and the element's line), or, for a failure not
  /// about elements, when its message is. Expected failures are counted apart
  /// (PropertyReport::expected_failures) and the run goes on; shrinking skips them.
  std::function<bool(const std::string& text)> expected;
};

/// Whether `options.expected` expects the failure `j` (see RunOptions::expected).
bool is_expected_failure(const RunOptions& options, const Judgement& j);

/// A failure, before and after shrinking.
struct Counterexample {
  int case_index = 0;  ///< replay with RunOptions::only_case
  reference::Case original;
  reference::Case shrunk;
  std::string message;  ///< the property's verdict on the shrunk case
  /// The bug classes the verdict on the shrunk case names (Judgement::suspects).
  std::vector<std::string> suspects;
  /// What the property measured on the shrunk case alone (its own worst err/bound, not
  /// the run's).
  Observations observations;
  int shrink_steps = 0;
  /// The implementation broke while shrinking: `shrunk` is the smallest failure before.
  std::optional<std::string> fault_while_shrinking;
};

/// Outcome of one property against one implementation.
struct PropertyReport {
  std::string property;
  bool applicable = true;
  int cases = 0;      ///< cases that ran to a verdict
  int discarded = 0;  ///< generated cases the property could not use
  /// Judged cases (counted in `cases`) that failed as RunOptions::expected expects.
  int expected_failures = 0;
  /// The first of them: its index, and one line of the property's message on it (its first
  /// line and first failing element; not shrunk).
  std::optional<std::pair<int, std::string>> first_expected;
  /// Why cases were discarded: each reason with its count, in first-seen order.
  std::vector<std::pair<std::string, int>> discard_reasons;
  bool passed = true;
  Observations observations;
  /// What the judged cases (`cases`) ran: optimizers, options, hyperparameter ranges.
  Exercised exercised;
  std::optional<Counterexample> counterexample;
  std::optional<std::string>
      fault;             ///< the implementation broke, or no case was usable: what happened
  bool broke = false;    ///< the implementation broke: no further case can run
  bool not_run = false;  ///< skipped: the implementation broke before it
  double seconds = 0.0;
};

/// The space cases are drawn from for `declaration` under `options`: the declared counter,
/// the declared most shards, and the run's shape pool.
CaseSpace case_space(const Declaration& declaration, const RunOptions& options);

/// Whether a failing shrink candidate, whose verdict names `candidate` suspects, may
/// replace a failure naming `current`: not when it would name none where the current one
/// names some, nor more than the current one (a smaller case where two bug classes
/// predict the same numbers, e.g. N*K = K at N = 1, would merge what the larger one told
/// apart). Shrinking then keeps the dimension that tells the suspects apart.
bool keeps_suspects_apart(const std::vector<std::string>& current,
                          const std::vector<std::string>& candidate);

/// Runs `property` against `impl`. `progress`, when given, is called with the number of
/// cases judged so far.
PropertyReport run_property(const Property& property, Implementation& impl,
                            const RunOptions& options,
                            const std::function<void(int)>& progress = {});

/// The case a run draws as number `index` for `property` within `space` (size grows with
/// the index: 0 for the first case, 100 from the hundredth on).
rc::Shrinkable<reference::Case> draw(const Property& property, const CaseSpace& space,
                                     std::uint64_t seed, int index);

}  // namespace sgdc::properties
