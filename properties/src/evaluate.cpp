#include <cstring>
#include <vector>

#include "sgdc/properties/property.hpp"
#include "sgdc/reference/hyperparameters.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::properties {

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Equal in every field, bit for bit.
bool same_case(const reference::Case& a, const reference::Case& b) {
  if (a.n != b.n || a.d != b.d || a.k != b.k || a.num_shards != b.num_shards || a.step != b.step)
    return false;
  const reference::Optimizer &o = a.optimizer, &p = b.optimizer;
  if (o.kind != p.kind || o.nesterov != p.nesterov || o.decay != p.decay) return false;
  // Every hyperparameter, lr included, from the one table: an optimizer's new one counts
  // here as it is added there.
  for (const reference::Hyperparameter& h : reference::hyperparameters)
    if (!same_bits(h.get(a), h.get(b))) return false;
  for (const reference::InputArray& in : reference::input_arrays)
    if (!same_bits(a.*in.member, b.*in.member)) return false;
  if (a.bias_group.has_value() != b.bias_group.has_value()) return false;
  if (a.bias_group) {
    for (auto h : {&reference::ParamGroup::lr, &reference::ParamGroup::weight_decay}) {
      const std::optional<float>&x = (*a.bias_group).*h, &y = (*b.bias_group).*h;
      if (x.has_value() != y.has_value() || (x && !same_bits(*x, *y))) return false;
    }
  }
  return true;
}

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
  for (const auto& [known, e] : expectations_)
    if (same_case(known, c)) return e;
  expectations_.emplace_back(c, reference::expect(c, declaration_.arithmetic));
  return expectations_.back().second;
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
