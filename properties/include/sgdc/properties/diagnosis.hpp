#pragma once
/// \file
/// Naming the known bug class a wrong result points to, from the numbers alone: a factor
/// of 2, N, K, N*K or num_shards in the gradient or the loss, a learning rate applied
/// twice, a flipped sign, a missing update, a reshape where a transpose belongs, rows or
/// input columns left out past a tile boundary, gradients scaled as clipping scales them,
/// weight decay in the reported gradient or by the other convention, a momentum-like
/// update of a plain-SGD case; the optimizer state by its own formula (a buffer read from
/// another parameter's, Adam's moments not advanced, kept in bfloat16, b2 on g, decay inside
/// the moment, read by the other weight-decay convention or with the bias's decay left out,
/// told apart by the parameters where the moments cannot); matrix products in an undeclared
/// narrower format (tf32, bfloat16); and, between two answers to the same case, state carried from
/// one call to the next (gradients accumulated, a per-call factor, optimizer state).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/expectation.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::properties {

/// Every bug class whose prediction matches `r` (within a relative 10^-3 of each group of
/// outputs, where the correct values do not), in the order the groups are tested
/// (gradients, loss, update); empty when none does. `e` is the oracle's expectation for
/// `c`. The inputs must be finite.
std::vector<std::string> suspected_bugs(const reference::Case& c, const reference::StepResult& r,
                                        const reference::Expectation& e);

/// The classes of suspected_bugs joined into one sentence ("A; or B"), or nothing.
std::optional<std::string> suspected_bug(const reference::Case& c, const reference::StepResult& r,
                                         const reference::Expectation& e);

/// The bug classes that two different answers to the same case `c`, `first` then
/// `second` (stepped back to back), point to: gradients accumulated across calls (a
/// missing zero_grad), a factor applied once more per call, state carried from the
/// first call into the second, or rounding alone (an order that changes between calls).
std::vector<std::string> suspected_between_calls(const reference::Case& c,
                                                 const reference::StepResult& first,
                                                 const reference::StepResult& second,
                                                 const reference::Expectation& e);

/// The bug classes a wrong step counter points to, from the counter before the step,
/// the one returned and the one expected: not advanced (returned as it came in), kept in
/// float32 (the increment lost to rounding past 2^24), kept in a signed 32-bit integer
/// (wrapped past 2^31 - 1), or kept in an unsigned 32-bit one (wrapped past 2^32 - 1).
std::vector<std::string> suspected_counter(std::int64_t before, std::optional<std::int64_t> after,
                                           std::int64_t expected);

/// Suspects joined as one sentence: "A; or B".
std::string join_suspects(const std::vector<std::string>& suspects);

}  // namespace sgdc::properties
