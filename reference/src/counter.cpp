#include "sgdc/reference/counter.hpp"

#include <array>
#include <utility>

namespace sgdc::reference {

namespace {
constexpr std::array<std::pair<CounterType, const char*>, 5> type_names{{
    {CounterType::int32, "int32"},
    {CounterType::uint32, "uint32"},
    {CounterType::int64, "int64"},
    {CounterType::float32, "float32"},
    {CounterType::float64, "float64"},
}};
constexpr std::array<std::pair<CounterEnd, const char*>, 3> end_names{{
    {CounterEnd::wrap, "wrap"},
    {CounterEnd::saturate, "saturate"},
    {CounterEnd::untested, "untested"},
}};
}  // namespace

std::int64_t largest_count(CounterType type) {
  switch (type) {
    case CounterType::int32:
      return (std::int64_t{1} << 31) - 1;
    case CounterType::uint32:
      return (std::int64_t{1} << 32) - 1;
    case CounterType::int64:
      return INT64_MAX;
    case CounterType::float32:
      return std::int64_t{1} << 24;
    case CounterType::float64:
      return std::int64_t{1} << 53;
  }
  return INT64_MAX;
}

std::int64_t largest_drawn_count(const Counter& counter) {
  const std::int64_t most = largest_count(counter.type);
  return counter.at_end == CounterEnd::untested ? most - 1 : most;
}

std::int64_t next_count(const Counter& counter, std::int64_t step) {
  if (step < largest_count(counter.type)) return step + 1;
  switch (counter.at_end) {
    case CounterEnd::wrap:
      return 0;
    case CounterEnd::saturate:
      return step;
    case CounterEnd::untested:
      break;
  }
  return step;  // an end that is not declared is never drawn; no overflow if it is given
}

const char* to_string(CounterType type) {
  for (const auto& [t, name] : type_names)
    if (t == type) return name;
  return "?";
}

std::optional<CounterType> parse_counter_type(std::string_view name) {
  for (const auto& [t, text] : type_names)
    if (name == text) return t;
  return std::nullopt;
}

const char* to_string(CounterEnd end) {
  for (const auto& [e, name] : end_names)
    if (e == end) return name;
  return "?";
}

std::optional<CounterEnd> parse_counter_end(std::string_view name) {
  for (const auto& [e, text] : end_names)
    if (name == text) return e;
  return std::nullopt;
}

}  // namespace sgdc::reference
