#include "sgdc/properties/compare.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sgdc/reference/float32.hpp"

namespace sgdc::properties {

std::string describe(const Mismatch& m) {
  const reference::Expected& e = m.expected;
  const std::string got = reference::describe(m.actual);
  if (e.must_be_nonfinite) {
    return fmt::format(
        "{}[{}]: got {}, but a NaN or infinite input reaches it, so NaN or +-inf is due there",
        to_string(m.output), m.index, got);
  }
  if (!std::isfinite(m.actual)) {
    return fmt::format("{}[{}]: got {}, expected {} (exact {:.17g}) within bound {:.3g} ({})",
                       to_string(m.output), m.index, got, reference::describe(e.rounded), e.value,
                       e.bound, m.check.why);
  }
  return fmt::format(
      "{}[{}]: got {}, expected {} (exact {:.17g}) within bound {:.3g}: error {:.3g} = {:.3g} x "
      "bound{}{}",
      to_string(m.output), m.index, got, reference::describe(e.rounded), e.value, e.bound,
      m.check.error, m.check.ratio, m.check.ulps ? fmt::format(", {} ULPs", *m.check.ulps) : "",
      m.check.why.empty() ? "" : " (" + m.check.why + ")");
}

std::optional<std::string> malformed(const reference::StepResult& r, const reference::Case& c,
                                     const Declaration& d) {
  for (const reference::OutputInfo& out : reference::output_table) {
    const std::size_t got = r[out.output].size();
    if (!reports(out, c, d.capabilities.grads)) continue;  // not part of this result
    if (got == 0 && out.reported == reference::Reported::with_grads)
      return "declares grads but reported none";
    if (got == 0 && (out.reported == reference::Reported::with_buffer ||
                     out.reported == reference::Reported::with_second_moment))
      return fmt::format("reported no {} for a {} step", out.name,
                         reference::to_string(c.optimizer.kind));
    const std::size_t want = reference::element_count(out.extent, c.n, c.d, c.k);
    if (got != want) return fmt::format("{} has {} values, expected {}", out.name, got, want);
  }
  if (d.capabilities.step_counter && !r.step) return "declares step_counter but reported none";
  if (d.capabilities.shard_layout && !r.shards) return "declares shard_layout but reported none";
  return std::nullopt;
}

std::vector<Mismatch> compare(const reference::StepResult& r, const reference::Expectation& e,
                              std::span<const reference::Output> which, Observations* obs) {
  std::vector<Mismatch> out;
  for (reference::Output o : which) {
    const std::vector<float>& actual = r[o];
    const std::vector<reference::Expected>& expected = e[o];
    if (actual.size() != expected.size()) continue;  // absent gradients; shapes checked apart
    for (std::size_t i = 0; i < actual.size(); ++i) {
      const reference::ElementCheck c = check_element(actual[i], expected[i]);
      if (obs) obs->record(o, c);
      if (!c.ok) out.push_back({o, i, actual[i], expected[i], c});
    }
  }
  return out;
}

std::vector<Mismatch> compare(const reference::StepResult& r, const reference::Expectation& e,
                              Observations* obs) {
  return compare(r, e, reference::all_outputs, obs);
}

}  // namespace sgdc::properties
