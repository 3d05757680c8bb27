#pragma once
/// \file
/// The optimizer's step counter: its declared type, its range, and what follows its
/// largest value (`docs/spec/step.md`, "The step counter").

#include <cstdint>
#include <optional>
#include <string_view>

namespace sgdc::reference {

/// The type an implementation keeps its counter in.
enum class CounterType { int32, uint32, int64, float32, float64 };

/// What comes after the largest value.
enum class CounterEnd {
  wrap,      ///< 0
  saturate,  ///< the largest value again
  untested,  ///< not declared: the largest value is never drawn
};

/// A declared counter. The default (int64, end untested) is what an implementation that
/// declares nothing is held to.
struct Counter {
  CounterType type = CounterType::int64;
  CounterEnd at_end = CounterEnd::untested;
};

/// The largest value of `type`: 2^31 - 1, 2^32 - 1, 2^63 - 1, and for the float types the
/// largest integer from which + 1 is exact: 2^24 (float32), 2^53 (float64).
std::int64_t largest_count(CounterType type);

/// The largest value a case may carry before the step: largest_count, less one when the
/// end is untested.
std::int64_t largest_drawn_count(const Counter& counter);

/// The counter after one step from `step` (0 <= step <= largest_count): step + 1 below the
/// largest value; there, 0 when it wraps and the largest value when it saturates.
std::int64_t next_count(const Counter& counter, std::int64_t step);

/// "int32", "uint32", "int64", "float32", "float64" and back; nothing for other names.
const char* to_string(CounterType type);
std::optional<CounterType> parse_counter_type(std::string_view name);
/// "wrap", "saturate", "untested" and back ("untested" is never declared).
const char* to_string(CounterEnd end);
std::optional<CounterEnd> parse_counter_end(std::string_view name);

}  // namespace sgdc::reference
