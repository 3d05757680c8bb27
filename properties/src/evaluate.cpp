#include <algorithm>
#include <vector>

#include "sgdc/properties/property.hpp"
#include "shared_expectations.hpp"

namespace sgdc::properties {

namespace {

// One drawn case on its way through plan, steps and judgements.
struct Evaluation {
  Context context;
  const reference::Case* drawn;
  std::vector<reference::Case> pending;  // steps asked for and not yet run
  std::vector<StepOutcome> outcomes;     // of every step run so far, in order
  std::optional<Judgement> judgement;    // final
};

}  // namespace

const reference::Expectation& Context::expect(const reference::Case& c) {
  // The oracle reads num_shards only for the ranks of a sharded implementation with
  // declared precision stages (each rank's gradients rounded on their own): elsewhere
  // every count shares one expectation.
  const Declaration& d = declaration_;
  if (c.num_shards != 1 && !(d.arithmetic.stages.declared() && d.capabilities.sharded)) {
    reference::Case one = c;
    one.num_shards = 1;
    return expect(one);
  }
  for (const auto& [known, e] : expectations_)
    if (detail::same_case(known, c)) return *e;
  expectations_.emplace_back(c, detail::expect(c, declaration_.arithmetic));
  return *expectations_.back().second;
}

std::vector<Judgement> evaluate_together(const Property& property, Implementation& impl,
                                         std::span<const reference::Case> drawn,
                                         std::span<Observations> obs) {
  std::vector<Evaluation> evals;
  evals.reserve(drawn.size());
  for (const reference::Case& c : drawn) {
    evals.push_back({Context(impl.declaration()), &c, {}, {}, std::nullopt});
    Evaluation& ev = evals.back();
    Plan plan = property.plan(ev.context, c);
    if (!plan.discard.empty())
      ev.judgement = Judgement::discard(std::move(plan.discard));
    else
      ev.pending = std::move(plan.steps);
  }
  for (;;) {
    // One round: every pending step of every case, in one batch.
    std::vector<reference::Case> batch;
    std::vector<std::size_t> owner;
    for (std::size_t i = 0; i < evals.size(); ++i) {
      for (reference::Case& c : evals[i].pending) {
        batch.push_back(std::move(c));
        owner.push_back(i);
      }
      evals[i].pending.clear();
    }
    if (batch.empty()) break;
    std::vector<StepOutcome> outcomes;
    try {
      outcomes = impl.step_batch(batch);
    } catch (const ImplementationFault& f) {
      if (f.position() && *f.position() < owner.size())
        throw ImplementationFault(f.what(), owner[*f.position()]);
      throw ImplementationFault(f.what());
    }
    if (outcomes.size() != batch.size())
      throw ImplementationFault("step_batch returned " + std::to_string(outcomes.size()) +
                                " outcomes for " + std::to_string(batch.size()) + " cases");
    for (std::size_t j = 0; j < outcomes.size(); ++j)
      evals[owner[j]].outcomes.push_back(std::move(outcomes[j]));
    // Judge every case that had steps in this round.
    for (std::size_t i = 0; i < evals.size(); ++i) {
      Evaluation& ev = evals[i];
      if (ev.judgement || ev.outcomes.empty()) continue;
      if (std::find(owner.begin(), owner.end(), i) == owner.end()) continue;
      Judgement j = property.judge(ev.context, *ev.drawn, ev.outcomes, obs[i]);
      if (j.kind == Judgement::Kind::more && !j.more.empty())
        ev.pending = std::move(j.more);
      else
        ev.judgement = std::move(j);
    }
  }
  std::vector<Judgement> out;
  out.reserve(evals.size());
  for (Evaluation& ev : evals)
    out.push_back(ev.judgement ? std::move(*ev.judgement)
                               : Judgement::fail("the property asked for no step to judge"));
  return out;
}

Judgement evaluate(const Property& property, Implementation& impl, const reference::Case& drawn,
                   Observations& obs) {
  return evaluate_together(property, impl, std::span<const reference::Case>(&drawn, 1),
                           std::span<Observations>(&obs, 1))[0];
}

}  // namespace sgdc::properties
