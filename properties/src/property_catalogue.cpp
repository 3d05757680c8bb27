#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>

#include "sgdc/properties/compare.hpp"
#include "sgdc/properties/diagnosis.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/properties/sharding/placement.hpp"
#include "sgdc/reference/check.hpp"
#include "sgdc/reference/float32.hpp"
#include "stage_suspects.hpp"

namespace sgdc::properties {

namespace {

using reference::Case;
using reference::Output;
using reference::StepResult;

constexpr std::size_t max_listed = 5;

bool always(const Declaration&) { return true; }

// The result of a step of a valid case; a rejection or a malformed result is the failure.
// A rejection the special values allow (an overflow trapped, docs/error-model.md section
// 7, as a declared lr near float32's largest makes torch's Adam raise) judges nothing:
// the case is discarded, and the report counts it with the rejection's message.
struct Checked {
  const StepResult* result = nullptr;
  std::string failure;
  bool allowed_refusal = false;
  // Where there is no result: the discard, or the failure after `where`.
  Judgement verdict(const std::string& where = {}) const {
    if (allowed_refusal)
      return Judgement::discard("refused where an overflow may trap or an input is not finite: " +
                                failure);
    return Judgement::fail(where + failure);
  }
};
Checked checked(Context& ctx, const Case& c, const StepOutcome& out) {
  if (!out.result) {
    if (reference::refusal_allowed(c, ctx.expect(c))) return {nullptr, out.rejection, true};
    return {nullptr, "rejected a valid case: " + out.rejection};
  }
  if (auto why = malformed(*out.result, c, ctx.declaration())) return {nullptr, *why};
  return {&*out.result, {}};
}

// "1 output element", "3 output elements".
std::string elements(std::size_t n) {
  return fmt::format("{} output element{}", n, n == 1 ? "" : "s");
}

std::string list(const std::vector<Mismatch>& ms) {
  std::string s;
  for (std::size_t i = 0; i < ms.size() && i < max_listed; ++i) s += "\n  " + describe(ms[i]);
  if (ms.size() > max_listed) s += fmt::format("\n  ... and {} more", ms.size() - max_listed);
  return s;
}

// Every mismatch, one line each (Judgement::elements).
std::vector<std::string> lines(const std::vector<Mismatch>& ms) {
  std::vector<std::string> out;
  out.reserve(ms.size());
  for (const Mismatch& m : ms) out.push_back(describe(m));
  return out;
}

// The mismatches listed, and the bug classes the numbers point to.
struct Explained {
  std::string text;
  std::vector<std::string> suspects;
  std::vector<std::string> elements;
};

// "\n  suspected: A; or B", or nothing.
std::string suspected_line(const std::vector<std::string>& suspects) {
  return suspects.empty() ? "" : "\n  suspected: " + join_suspects(suspects);
}

Explained explain(const std::vector<Mismatch>& bad, const Case& c, const StepResult& r,
                  Context& ctx) {
  // A declared precision stage that did not run first: every element follows from it.
  std::vector<std::string> suspects = suspected_stages(c, r, ctx.declaration());
  for (std::string& s : suspected_bugs(c, r, ctx.expect(c))) suspects.push_back(std::move(s));
  return {list(bad) + suspected_line(suspects), std::move(suspects), lines(bad)};
}

// A failure whose message ends with the mismatches explained.
Judgement fail_with(const std::string& head, const Explained& x) {
  return Judgement::fail(head + x.text, x.suspects, x.elements);
}

// First output element whose bits differ between a and b.
std::optional<std::string> first_difference(const StepResult& a, const StepResult& b) {
  for (Output o : reference::all_outputs) {
    const std::vector<float>&va = a[o], &vb = b[o];
    for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) {
      if (!reference::same_bits(va[i], vb[i]))
        return fmt::format("{}[{}]: {} vs {}", to_string(o), i, reference::describe(va[i]),
                           reference::describe(vb[i]));
    }
  }
  if (a.step != b.step) return "step counter differs";
  return std::nullopt;
}

Case with_shards(const Case& c, int num_shards) {
  Case s = c;
  s.num_shards = num_shards;
  return s;
}

Case without_lr(const Case& c) {
  Case s = c;
  s.lr = 0.0f;
  if (s.bias_group && s.bias_group->lr) s.bias_group->lr = 0.0f;
  return s;
}

Plan step_as_drawn(Context&, const Case& c) { return Plan::step({c}); }

// --- accuracy -------------------------------------------------------------------------

Judgement accuracy(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                   Observations& obs) {
  const Checked r = checked(ctx, c, out[0]);
  if (!r.result) return r.verdict();
  const auto bad = compare(*r.result, ctx.expect(c), &obs);
  if (bad.empty()) return Judgement::pass();
  return fail_with(fmt::format("{} outside the derived bound:", elements(bad.size())),
                   explain(bad, c, *r.result, ctx));
}

// --- shard_invariance -----------------------------------------------------------------

// 1, the generated count, counts that do not divide n, and one larger than n; an
// implementation bounded by its devices is not asked for more shards than it has.
std::vector<int> shard_counts(const Declaration& d, const Case& c) {
  std::set<int> counts = {1, 2, 3, c.num_shards, c.n + 1};
  if (const int most = d.capabilities.max_shards; most > 0)
    std::erase_if(counts, [&](int s) { return s > most; });
  // With even batches declared, only counts that divide the batch.
  if (d.recipe.even_batches) std::erase_if(counts, [&](int s) { return c.n % s != 0; });
  return {counts.begin(), counts.end()};
}

Plan shard_invariance_plan(Context& ctx, const Case& c) {
  std::vector<Case> steps;
  for (int s : shard_counts(ctx.declaration(), c)) steps.push_back(with_shards(c, s));
  return Plan::step(std::move(steps));
}

Judgement shard_invariance(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                           Observations& obs) {
  const std::vector<int> counts = shard_counts(ctx.declaration(), c);
  const bool sharded = ctx.declaration().capabilities.sharded;
  const StepResult* first = nullptr;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const Case sharded_case = with_shards(c, counts[i]);
    const Checked r = checked(ctx, sharded_case, out[i]);
    if (!r.result) return r.verdict(fmt::format("with num_shards={}: ", counts[i]));
    if (sharded) {
      const auto bad = compare(*r.result, ctx.expect(sharded_case), &obs);
      if (!bad.empty())
        return fail_with(fmt::format("with num_shards={}:", counts[i]),
                         explain(bad, sharded_case, *r.result, ctx));
    } else if (!first) {
      first = r.result;
    } else if (auto diff = first_difference(*first, *r.result)) {
      // Both counts again, a few times each: answers that drift between calls are
      // determinism's failure, not the shard count's. A drift that shows on one call in
      // two escapes all of kRepeats repeats of both counts with probability 2^-kRepeats.
      constexpr std::size_t kRepeats = 8;
      if (out.size() == counts.size()) {
        std::vector<Case> again(kRepeats, with_shards(c, counts[0]));
        again.insert(again.end(), kRepeats, sharded_case);
        return Judgement::then(std::move(again));
      }
      for (std::size_t j = 0; j < 2 * kRepeats && counts.size() + j < out.size(); ++j) {
        const bool base = j < kRepeats;
        const int count = base ? counts[0] : counts[i];
        const Checked again = checked(ctx, with_shards(c, count), out[counts.size() + j]);
        if (!again.result) continue;
        if (auto drift = first_difference(base ? *first : *r.result, *again.result))
          return Judgement::fail(
              fmt::format("the same case at the same num_shards={} gave different bits on two "
                          "calls ({}): the step is not deterministic, so num_shards need not be "
                          "what changed the result (determinism names what drifts)",
                          count, *drift));
      }
      return Judgement::fail(fmt::format(
          "num_shards changed the result of an implementation that does not declare `sharded`: "
          "num_shards={} vs {}: {}\n  if the step really splits its work over num_shards, "
          "declare it (hello field \"sharded\": true; the Python kit's serve(..., sharded=True)): "
          "results then need only lie within the bound",
          counts[0], counts[i], *diff));
    }
  }
  return Judgement::pass();
}

// --- pre_update_loss ------------------------------------------------------------------

// The case with its parameters replaced by the correctly rounded updated ones.
Case after_update(const Case& c, const reference::Expectation& e) {
  Case after = c;
  for (std::size_t i = 0; i < after.kernel.size(); ++i) after.kernel[i] = e.kernel[i].rounded;
  for (std::size_t i = 0; i < after.bias.size(); ++i) after.bias[i] = e.bias[i].rounded;
  return after;
}

Plan pre_update_loss_plan(Context& ctx, const Case& c) {
  const reference::Expected& pre = ctx.expect(c).loss[0];
  const reference::Expected& post = ctx.expect(after_update(c, ctx.expect(c))).loss[0];
  if (pre.may_overflow || post.may_overflow || !std::isfinite(post.value) ||
      std::abs(pre.value - post.value) <= 2.0 * (pre.bound + post.bound)) {
    return Plan::skip("pre- and post-update loss are not distinguishable");
  }
  return Plan::step({c});
}

Judgement pre_update_loss(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                          Observations& obs) {
  const Checked r = checked(ctx, c, out[0]);
  if (!r.result) return r.verdict();
  const reference::Expected& pre = ctx.expect(c).loss[0];
  const reference::Expected& post = ctx.expect(after_update(c, ctx.expect(c))).loss[0];
  const float loss = r.result->loss[0];
  const reference::ElementCheck chk = check_element(loss, pre);
  obs.record(Output::loss, chk);
  if (chk.ok) return Judgement::pass();
  const bool is_post = check_element(loss, post).ok;
  return Judgement::fail(fmt::format(
      "returned loss {} is {}; the pre-update loss is {} (bound {:.3g}), the post-update loss {}",
      reference::describe(loss),
      is_post ? "the loss after the update" : "neither pre- nor post-update loss",
      reference::describe(pre.rounded), pre.bound, reference::describe(post.rounded)));
}

// --- update_rule ----------------------------------------------------------------------

// |p' - (p - lr g)| for the implementation's own g: the update is judged apart from the
// gradient, so a gradient bug and an update bug are told apart.
std::vector<std::string> inconsistent_updates(const Case& c, const StepResult& r,
                                              const reference::Expectation& e) {
  std::vector<std::string> out;
  // Each parameter's own learning rate: the bias's from its group when it has one.
  auto check = [&](const char* name, const std::vector<float>& p, const std::vector<float>& p_new,
                   const std::vector<float>& g, const std::vector<double>& slack, float lr) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double v = double(p[i]) - double(lr) * double(g[i]);
      if (!std::isfinite(v) || !std::isfinite(p_new[i])) continue;
      const double allowed = e.u * (1.0 + e.u) * std::abs(v) + slack[i] + 0x1p-52 * std::abs(v);
      const double off = std::abs(double(p_new[i]) - v);
      if (off > allowed) {
        out.push_back(fmt::format(
            "{}[{}] = {} but p - lr*g = {:.9g} for the reported g = {}: "
            "off by {:.3g}, allowed {:.3g}",
            name, i, reference::describe(p_new[i]), v, reference::describe(g[i]), off, allowed));
      }
    }
  };
  check("kernel", c.kernel, r.kernel, r.grad_kernel, e.kernel_from_grad, c.lr);
  const float bias_lr = c.bias_group && c.bias_group->lr ? *c.bias_group->lr : c.lr;
  check("bias", c.bias, r.bias, r.grad_bias, e.bias_from_grad, bias_lr);
  return out;
}

Judgement update_rule(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                      Observations& obs) {
  const Checked r = checked(ctx, c, out[0]);
  if (!r.result) return r.verdict();
  const StepResult& res = *r.result;
  const reference::Expectation& e = ctx.expect(c);
  constexpr Output parameters[] = {Output::kernel, Output::bias};
  const auto bad = compare(res, e, parameters, &obs);
  // Consistency with the reported gradient is judged for plain SGD, where p' follows
  // from g alone; with momentum the buffer comes between, with clipping the clip factor.
  if (!res.grad_kernel.empty() && !res.grad_bias.empty() && c.optimizer == reference::Optimizer{} &&
      !c.clip) {
    const auto inconsistent = inconsistent_updates(c, res, e);
    if (!inconsistent.empty()) {
      std::string s;
      for (std::size_t i = 0; i < inconsistent.size() && i < max_listed; ++i)
        s += "\n  " + inconsistent[i];
      return Judgement::fail(
          fmt::format("update bug: parameters do not move as p - lr*g for the implementation's "
                      "own gradient ({} elements):{}",
                      inconsistent.size(), s));
    }
    if (!bad.empty()) {
      return fail_with(
          "gradient bug: parameters move as p - lr*g for the reported g, but that g is wrong, "
          "so the new parameters are outside the bound:",
          explain(bad, c, res, ctx));
    }
  }
  if (!bad.empty())
    return fail_with("new parameters outside the bound:", explain(bad, c, res, ctx));
  return Judgement::pass();
}

// --- training -------------------------------------------------------------------------

// Steps a training run of the drawn case takes: 2 to 8, fixed by the case.
int training_steps(const Case& c) {
  std::uint64_t h = static_cast<std::uint64_t>(c.n) * 1000003u + c.d * 10007u + c.k;
  h ^= static_cast<std::uint64_t>(c.step) * 0x9e3779b97f4a7c15ULL;
  return 2 + static_cast<int>(h % 7);
}

// The input of the step after `c`, from the implementation's own result of `c`: its new
// parameters, buffer and counter (the counter's next value when it reports none).
Case next_case(const Declaration& d, const Case& c, const StepResult& r) {
  Case next = c;
  next.kernel = r.kernel;
  next.bias = r.bias;
  if (c.optimizer.kind != reference::Optimizer::Kind::sgd) {
    next.momentum_kernel = r.momentum_kernel;
    next.momentum_bias = r.momentum_bias;
  }
  if (c.optimizer.kind == reference::Optimizer::Kind::adam) {
    next.second_moment_kernel = r.second_moment_kernel;
    next.second_moment_bias = r.second_moment_bias;
  }
  next.step = r.step ? *r.step : reference::next_count(d.counter, c.step);
  return next;
}

bool all_finite(const StepResult& r) {
  for (Output o : reference::all_outputs)
    for (float v : r[o])
      if (!std::isfinite(v)) return false;
  return true;
}

Judgement training(Context& ctx, const Case& drawn, std::span<const StepOutcome> out,
                   Observations& obs) {
  const int steps = training_steps(drawn);
  // Step t's input is built from step t-1's result; each step is judged against the
  // exact step from its own input, so rounding does not pile up into the verdict.
  Case c = drawn;
  for (std::size_t t = 0; t < out.size(); ++t) {
    const Checked r = checked(ctx, c, out[t]);
    if (!r.result) return r.verdict(fmt::format("step {} of {}: ", t + 1, steps));
    if (t + 1 < out.size()) {
      c = next_case(ctx.declaration(), c, *r.result);
      try {
        c.validate();
      } catch (const std::invalid_argument& e) {
        return Judgement::fail(
            fmt::format("step {} of {}: its result is not a valid input of the next step: {}",
                        t + 1, steps, e.what()));
      }
      continue;
    }
    const auto bad = compare(*r.result, ctx.expect(c), &obs);
    if (!bad.empty())
      return fail_with(
          fmt::format("step {} of {} of a run from the implementation's own results, judged "
                      "against the exact step from that step's input: {} outside the derived "
                      "bound:",
                      t + 1, steps, elements(bad.size())),
          explain(bad, c, *r.result, ctx));
    const reference::Counter& counter = ctx.declaration().counter;
    if (ctx.declaration().capabilities.step_counter &&
        r.result->step != reference::next_count(counter, c.step)) {
      const std::int64_t want = reference::next_count(counter, c.step);
      // The message first: the suspects are moved into the judgement after.
      std::vector<std::string> suspects = suspected_counter(c.step, r.result->step, want);
      std::string message =
          fmt::format("step {} of {}: step counter {} before, {} after; expected {}{}", t + 1,
                      steps, c.step, r.result->step ? std::to_string(*r.result->step) : "none",
                      want, suspected_line(suspects));
      return Judgement::fail(std::move(message), std::move(suspects));
    }
    // A run that overflowed cannot go on, nor one whose counter would pass the largest
    // value drawn (an undeclared end is not tested): what it did so far was right.
    const Case next = next_case(ctx.declaration(), c, *r.result);
    if (static_cast<int>(t) + 1 == steps || !all_finite(*r.result) || next.step < 0 ||
        next.step > reference::largest_drawn_count(counter))
      return Judgement::pass();
    return Judgement::then({next});
  }
  return Judgement::fail("no step to judge");
}

// --- determinism ----------------------------------------------------------------------

Plan twice(Context&, const Case& c) { return Plan::step({c, c}); }

Judgement determinism(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                      Observations&) {
  const Checked a = checked(ctx, c, out[0]);
  if (!a.result) return a.verdict();
  const Checked b = checked(ctx, c, out[1]);
  if (!b.result) return b.verdict();
  if (auto diff = first_difference(*a.result, *b.result)) {
    std::vector<std::string> suspects =
        suspected_between_calls(c, *a.result, *b.result, ctx.expect(c));
    return Judgement::fail(
        "the same case twice gave different bits: " + *diff + suspected_line(suspects), suspects);
  }
  return Judgement::pass();
}

// --- step_counter ---------------------------------------------------------------------

Judgement step_counter(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                       Observations&) {
  const Checked r = checked(ctx, c, out[0]);
  if (!r.result) return r.verdict();
  const reference::Counter& counter = ctx.declaration().counter;
  const std::int64_t want = reference::next_count(counter, c.step);
  const auto step = r.result->step;
  if (step == want) return Judgement::pass();
  std::vector<std::string> suspects = suspected_counter(c.step, step, want);
  std::string message = fmt::format(
      "step counter {} before the update, {} after; expected {} (declared counter: {}, {}){}",
      c.step, step ? std::to_string(*step) : "none", want, to_string(counter.type),
      counter.at_end == reference::CounterEnd::untested
          ? "its end not tested"
          : fmt::format("which {}s at its end", to_string(counter.at_end)),
      suspected_line(suspects));
  return Judgement::fail(std::move(message), std::move(suspects));
}

// --- zero_lr --------------------------------------------------------------------------

Plan zero_lr_plan(Context& ctx, const Case& drawn) {
  const Case c = without_lr(drawn);
  // 0 * inf is NaN: where the gradient may overflow, p - 0*g need not be p.
  const reference::Expectation& e = ctx.expect(c);
  for (const auto* v : {&e.kernel, &e.bias})
    for (const reference::Expected& x : *v)
      if (x.may_overflow) return Plan::skip("the gradient may overflow");
  return Plan::step({c});
}

Judgement zero_lr(Context& ctx, const Case& drawn, std::span<const StepOutcome> out,
                  Observations&) {
  const Case c = without_lr(drawn);
  const Checked r = checked(ctx, c, out[0]);
  if (!r.result) return r.verdict();
  // Master weights narrower than float32 hold p as that format rounds it.
  const reference::Format& master = ctx.declaration().arithmetic.stages.master;
  auto same = [&master](const std::vector<float>& p, const std::vector<float>& q,
                        const char* name) -> std::optional<std::string> {
    for (std::size_t i = 0; i < p.size(); ++i) {
      // p - 0*g is p exactly; only the sign of a zero may change (-0 - -0 = +0).
      const float held = static_cast<float>(reference::round_to_format(p[i], master));
      if (!reference::same_bits(held, q[i]) && !(held == 0.0f && q[i] == 0.0f))
        return fmt::format("{}[{}] changed from {} to {}{}", name, i, reference::describe(p[i]),
                           reference::describe(q[i]),
                           held == p[i]
                               ? ""
                               : fmt::format(" (as {} master weights hold it: {})",
                                             to_string(master), reference::describe(held)));
    }
    return std::nullopt;
  };
  if (auto d = same(c.kernel, r.result->kernel, "kernel"))
    return Judgement::fail("with lr = 0, " + *d);
  if (auto d = same(c.bias, r.result->bias, "bias")) return Judgement::fail("with lr = 0, " + *d);
  return Judgement::pass();
}

// --- special_values -------------------------------------------------------------------

bool subnormal(float v) { return std::fpclassify(v) == FP_SUBNORMAL; }

bool has_subnormal_input(const Case& c) {
  if (subnormal(c.lr)) return true;
  for (const reference::InputArray& in : reference::input_arrays)
    for (float v : c.*in.member)
      if (subnormal(v)) return true;
  return false;
}

// The element's value, expected or returned, is subnormal (a flush to zero shows as a
// zero returned where a subnormal is expected).
bool involves_subnormal(const Mismatch& m) {
  return subnormal(m.actual) || subnormal(m.expected.rounded);
}

Judgement special_values(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                         Observations& obs) {
  if (!out[0].result) {
    // Rejecting NaN/inf input is a valid policy, and so is trapping a possible overflow.
    if (reference::refusal_allowed(c, ctx.expect(c))) return Judgement::pass();
    return Judgement::fail("rejected a case with finite inputs that cannot overflow: " +
                           out[0].rejection);
  }
  const Checked r = checked(ctx, c, out[0]);
  if (!r.result) return r.verdict();
  const auto bad = compare(*r.result, ctx.expect(c), &obs);
  if (bad.empty()) return Judgement::pass();
  // Name the policy only where a special value is involved; otherwise the elements are
  // simply out of bound, with accuracy's suspects.
  if (reference::has_nonfinite_input(c) ||
      std::any_of(bad.begin(), bad.end(),
                  [](const Mismatch& m) { return m.expected.must_be_nonfinite; })) {
    // An output that does not depend on the special value may still name its bug. The
    // message first: the suspects are moved into the judgement after.
    std::vector<std::string> suspects = suspected_bugs(c, *r.result, ctx.expect(c));
    std::string message = fmt::format("NaN and infinity propagation is broken by {}:{}{}",
                                      elements(bad.size()), list(bad), suspected_line(suspects));
    return Judgement::fail(std::move(message), std::move(suspects), lines(bad));
  }
  if (has_subnormal_input(c) || std::any_of(bad.begin(), bad.end(), involves_subnormal))
    return Judgement::fail(fmt::format("the declared policy (subnormals: {}) is broken by {}:{}",
                                       to_string(ctx.declaration().arithmetic.subnormals),
                                       elements(bad.size()), list(bad)),
                           {}, lines(bad));
  return fail_with(fmt::format("{} outside the derived bound, from finite inputs where no "
                               "subnormal is involved (not a matter of the special-value policy):",
                               elements(bad.size())),
                   explain(bad, c, *r.result, ctx));
}

// --- placement ------------------------------------------------------------------------

Judgement placement(Context& ctx, const Case& c, std::span<const StepOutcome> out,
                    Observations& obs) {
  const Checked r = checked(ctx, c, out[0]);
  if (!r.result) return r.verdict();
  const std::vector<reference::ShardPart>& shards = *r.result->shards;
  const sharding::PlacementRule rule = ctx.declaration().capabilities.placement;
  // The optimizer's parameter-sized state tensors, as the optimizer table has them: the
  // momentum buffer, Adam's two moments, Adagrad's sum.
  const reference::OptimizerInfo& kept = reference::info(c.optimizer.kind);
  const int state_tensors = (kept.buffer ? 1 : 0) + (kept.second_moment ? 1 : 0);
  Observations::ShardStorage stored{c.d, c.k, c.num_shards, rule, state_tensors, c.optimizer.kind,
                                    {},  {}};
  for (const reference::ShardPart& p : shards) {
    stored.values.push_back(p.kernel + p.bias);
    stored.state.push_back(p.state_kernel && p.state_bias
                               ? std::optional(*p.state_kernel + *p.state_bias)
                               : std::nullopt);
  }
  // The storage table shows a step with optimizer state when the run had one.
  if (!obs.shard_storage || state_tensors >= obs.shard_storage->state_tensors)
    obs.shard_storage = std::move(stored);
  if (auto why = sharding::layout_violation(shards, c.d, c.k, c.num_shards, rule, state_tensors))
    return Judgement::fail(fmt::format("with num_shards={}: {}", c.num_shards, *why));
  return Judgement::pass();
}

std::vector<Property> make_properties() {
  auto any = [](int max_dim) {
    return [max_dim](const CaseSpace& space) { return any_case(space, max_dim); };
  };
  // Every property draws from the run's shape pool, tile boundaries included; the
  // counter and special values need no large shapes.
  CaseProfile distinguishable;
  distinguishable.lr = LrRegime::usual;
  distinguishable.max_dim = any_dim;
  std::vector<Property> p;
  p.push_back({"accuracy",
               "every float32 output (loss, kernel, bias, gradients) lies within the derived "
               "bound of the exact value",
               always, any(any_dim), step_as_drawn, accuracy});
  p.push_back({"shard_invariance",
               "num_shards changes nothing: identical bits for an unsharded implementation, "
               "within the bound for a sharded one (counts 1, 2, 3, generated, n+1)",
               always, any(any_dim), shard_invariance_plan, shard_invariance});
  p.push_back({"pre_update_loss",
               "the returned loss is the loss before the update, on cases where the loss "
               "after the update is distinguishable from it",
               always,
               [distinguishable](const CaseSpace& space) { return cases(space, distinguishable); },
               pre_update_loss_plan, pre_update_loss});
  p.push_back({"update_rule",
               "parameters move as the optimizer says (p - lr*g for plain SGD): within the bound "
               "of the exact update, and for plain SGD consistent with the implementation's own "
               "reported gradient",
               always, any(any_dim), step_as_drawn, update_rule});
  p.push_back({"training",
               "a run of 2 to 8 steps, each from the implementation's own parameters, "
               "optimizer state and counter, keeps every step within the bound of the exact step "
               "from its input",
               always, any(any_dim), step_as_drawn, training});
  p.push_back({"determinism", "the same case twice gives the same bits", always, any(any_dim),
               twice, determinism});
  p.push_back({"step_counter",
               "the step counter advances by exactly one, and at the end of its declared range "
               "wraps or saturates as declared",
               [](const Declaration& d) { return d.capabilities.step_counter; }, any(4),
               step_as_drawn, step_counter});
  p.push_back({"zero_lr", "lr = 0 leaves every parameter unchanged",
               // Not where the declared recipe keeps lr away from 0.
               [](const Declaration& d) {
                 const auto& lr = d.recipe.range("lr");
                 return !lr || lr->contains(0.0f);
               },
               any(any_dim), zero_lr_plan, zero_lr});
  p.push_back({"special_values",
               "NaN, infinities, -0 and subnormals are handled as declared: outputs that "
               "depend on a non-finite input are non-finite, the rest within the bound",
               always, [](const CaseSpace& space) { return special_cases(space); }, step_as_drawn,
               special_values});
  p.push_back({"placement",
               "each shard stores its own part of the parameters, and keeps the optimizer state "
               "of that part: the parts cover every parameter exactly once, sized by the "
               "declared placement rule",
               [](const Declaration& d) { return d.capabilities.shard_layout; }, any(any_dim),
               step_as_drawn, placement});
  return p;
}

}  // namespace

const std::vector<Property>& all_properties() {
  static const std::vector<Property> all = make_properties();
  return all;
}

const Property& find_property(std::string_view name) {
  for (const Property& p : all_properties())
    if (p.name == name) return p;
  std::string known;
  for (const Property& p : all_properties()) known += (known.empty() ? "" : ", ") + p.name;
  throw std::invalid_argument(fmt::format("no property named \"{}\"; known: {}", name, known));
}

}  // namespace sgdc::properties
