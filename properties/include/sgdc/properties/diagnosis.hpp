#pragma once
/// \file
/// Naming the known bug class a wrong result points to, from the numbers alone: a factor
/// of 2, N, K or num_shards in the gradient or the loss, a learning rate applied twice, a
/// flipped sign, a missing update, a reshape where a transpose belongs, rows or input
/// columns left out past a tile boundary.

#include <optional>
#include <string>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/expectation.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::properties {

/// A sentence naming the bug classes whose prediction matches `r` (within a relative
/// 10^-3 of each group of outputs, where the correct values do not), or nothing when none
/// does. `e` is the oracle's expectation for `c`. The inputs must be finite.
std::optional<std::string> suspected_bug(const reference::Case& c, const reference::StepResult& r,
                                         const reference::Expectation& e);

}  // namespace sgdc::properties
