#include "sgdc/conformance/regression/replay.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "sgdc/properties/compare.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/reference/check.hpp"

namespace sgdc::conformance::regression {

namespace {

constexpr std::size_t max_listed = 8;

bool same_model(const reference::ErrorModel& a, const reference::ErrorModel& b) { return a == b; }

double parse_double(const std::string& s) {
  double v = 0.0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// The stored expectation in the oracle's terms, so that the verdict on each element is
// exactly the suite's (check_element).
reference::Expectation stored_expectation(const Fixture& f) {
  reference::Expectation e;
  for (reference::Output o : reference::all_outputs) {
    const ExpectedOutput& s = f.outputs[o];
    std::vector<reference::Expected>& out = e[o];
    for (std::size_t i = 0; i < s.expected.size(); ++i) {
      reference::Expected x;
      x.rounded = s.expected[i];
      x.value = parse_double(s.exact[i]);
      x.bound = s.bound[i];
      out.push_back(x);
    }
    for (std::size_t i : s.may_overflow) out[i].may_overflow = true;
    for (std::size_t i : s.must_be_nonfinite) out[i].must_be_nonfinite = true;
  }
  e.u = reference::operation_model(f.arithmetic).u;
  return e;
}

// The bound for the arithmetic the implementation declares: the stored one when it is the
// fixture's, else the oracle's for the declared one (e.g. ftz).
reference::Expectation expectation(const Fixture& f, const properties::Declaration& d) {
  return same_model(d.arithmetic, f.arithmetic) ? stored_expectation(f)
                                                : expect(f.inputs, d.arithmetic);
}

void judge(const Fixture& f, const reference::StepResult& r, const properties::Declaration& d,
           ReplayOutcome& out) {
  const reference::Expectation e = expectation(f, d);
  const auto bad = properties::compare(r, e);
  for (std::size_t i = 0; i < bad.size() && i < max_listed; ++i)
    out.failures.push_back(properties::describe(bad[i]));
  if (bad.size() > max_listed)
    out.failures.push_back(fmt::format("... and {} more elements", bad.size() - max_listed));
  if (d.capabilities.step_counter && r.step != f.step)
    out.failures.push_back(fmt::format("step: got {}, expected {}",
                                       r.step ? std::to_string(*r.step) : "none", f.step));
}

}  // namespace

ReplayOutcome judge_replay(const Fixture& f, const properties::StepOutcome& step,
                           const properties::Declaration& d) {
  ReplayOutcome out;
  if (!step.result) {
    if (!reference::refusal_allowed(f.inputs, expectation(f, d)))
      out.failures.push_back("rejected a case with finite inputs that cannot overflow: " +
                             step.rejection);
  } else if (auto why = properties::malformed(*step.result, f.inputs, d)) {
    out.failures.push_back(*why);
  } else {
    judge(f, *step.result, d, out);
  }
  out.passed = out.failures.empty();
  return out;
}

void replay_property(const Fixture& f, properties::Implementation& impl, ReplayOutcome& out) {
  if (!f.property || *f.property == "accuracy") return;
  const properties::Property& p = properties::find_property(*f.property);
  if (!p.applies(impl.declaration())) return;
  properties::Observations obs;
  const properties::Judgement j = properties::evaluate(p, impl, f.inputs, obs);
  if (j.kind == properties::Judgement::Kind::fail)
    out.failures.push_back(p.name + ": " + j.message);
  out.passed = out.failures.empty();
}

ReplayOutcome replay(const Fixture& f, properties::Implementation& impl) {
  ReplayOutcome out = judge_replay(f, impl.step(f.inputs), impl.declaration());
  replay_property(f, impl, out);
  return out;
}

}  // namespace sgdc::conformance::regression
