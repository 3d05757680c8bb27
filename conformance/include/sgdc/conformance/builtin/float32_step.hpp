#pragma once
/// \file
/// The built-in implementations' step, computed as a Recipe says.

#include "sgdc/conformance/builtin/recipe.hpp"
#include "sgdc/reference/case.hpp"
#include "sgdc/reference/counter.hpp"
#include "sgdc/reference/step_result.hpp"

namespace sgdc::conformance::builtin {

/// Runs one step as `recipe` says; reports grads and the step counter, an int64 that
/// saturates at its largest value (the built-ins' declared counter, builtin_counter).
inline constexpr reference::Counter builtin_counter{reference::CounterType::int64,
                                                    reference::CounterEnd::saturate};

reference::StepResult float32_step(const reference::Case& c, const Recipe& recipe);

}  // namespace sgdc::conformance::builtin