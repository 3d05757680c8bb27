#include "sgdc/properties/compare.hpp"

#include <fmt/format.h>

#include "sgdc/reference/float32.hpp"

namespace sgdc {

std::string describe(const Mismatch& m) {
  const Expected& e = m.expected;
  if (e.must_be_nonfinite) {
    return fmt::format("{}[{}]: got {}, but a NaN or infinite input reaches it: NaN or +-inf due",
                       to_string(m.output), m.index, describe(m.actual));
  }
  return fmt::format(
      "{}[{}]: got {}, expected {} (exact {:.17g}) within bound {:.3g}: error {:.3g} = {:.3g} x "
      "bound, {} ULPs{}",
      to_string(m.output), m.index, describe(m.actual), describe(e.rounded), e.value, e.bound,
      m.check.error, m.check.ratio, m.check.ulps,
      m.check.why.empty() ? "" : " (" + m.check.why + ")");
}

std::vector<float> values_of(const StepResult& r, Output o) {
  switch (o) {
    case Output::loss:
      return {r.loss};
    case Output::kernel:
      return r.kernel;
    case Output::bias:
      return r.bias;
    case Output::grad_kernel:
      return r.grad_kernel.value_or(std::vector<float>{});
    case Output::grad_bias:
      return r.grad_bias.value_or(std::vector<float>{});
  }
  return {};
}

std::optional<std::string> malformed(const StepResult& r, const Case& c, const Declaration& d) {
  const std::size_t dk = static_cast<std::size_t>(c.d) * c.k, k = static_cast<std::size_t>(c.k);
  auto length = [](const char* name, std::size_t got,
                   std::size_t want) -> std::optional<std::string> {
    if (got == want) return std::nullopt;
    return fmt::format("{} has {} values, expected {}", name, got, want);
  };
  if (auto m = length("kernel", r.kernel.size(), dk)) return m;
  if (auto m = length("bias", r.bias.size(), k)) return m;
  if (d.capabilities.grads) {
    if (!r.grad_kernel || !r.grad_bias) return "declares grads but reported none";
    if (auto m = length("grad_kernel", r.grad_kernel->size(), dk)) return m;
    if (auto m = length("grad_bias", r.grad_bias->size(), k)) return m;
  }
  if (d.capabilities.step_counter && !r.step) return "declares step_counter but reported none";
  if (d.capabilities.shard_layout && !r.shards) return "declares shard_layout but reported none";
  return std::nullopt;
}

std::vector<Mismatch> compare(const StepResult& r, const Expectation& e,
                              std::initializer_list<Output> which, Observations* obs) {
  std::vector<Mismatch> out;
  for (Output o : which) {
    const std::vector<float> actual = values_of(r, o);
    const std::vector<Expected>& expected = e.of(o);
    if (actual.size() != expected.size()) continue;  // absent gradients; shapes checked apart
    for (std::size_t i = 0; i < actual.size(); ++i) {
      const ElementCheck c = check_element(actual[i], expected[i]);
      if (obs) obs->record(o, c);
      if (!c.ok) out.push_back({o, i, actual[i], expected[i], c});
    }
  }
  return out;
}

}  // namespace sgdc
