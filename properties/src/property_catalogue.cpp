#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <variant>

#include "sgdc/properties/compare.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/properties/placement.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/reference/float32.hpp"

namespace sgdc {

namespace {

constexpr std::initializer_list<Output> every_output = {Output::loss, Output::kernel, Output::bias,
                                                        Output::grad_kernel, Output::grad_bias};
constexpr std::size_t max_listed = 5;

bool always(const Declaration&) { return true; }

// Runs one step; a rejection or a malformed result of a valid case is a failure.
std::variant<StepResult, Verdict> run(Implementation& impl, const Case& c) {
  StepOutcome out = impl.step(c);
  if (!out.result) return Verdict::fail("rejected a valid case: " + out.rejection);
  if (auto why = malformed(*out.result, c, impl.declaration())) return Verdict::fail(*why);
  return std::move(*out.result);
}

std::string list(const std::vector<Mismatch>& ms) {
  std::string s;
  for (std::size_t i = 0; i < ms.size() && i < max_listed; ++i) s += "\n  " + describe(ms[i]);
  if (ms.size() > max_listed) s += fmt::format("\n  ... and {} more", ms.size() - max_listed);
  return s;
}

// First output element whose bits differ between a and b.
std::optional<std::string> first_difference(const StepResult& a, const StepResult& b) {
  for (Output o : every_output) {
    const auto va = values_of(a, o), vb = values_of(b, o);
    for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) {
      if (!same_bits(va[i], vb[i]))
        return fmt::format("{}[{}]: {} vs {}", to_string(o), i, describe(va[i]), describe(vb[i]));
    }
  }
  if (a.step != b.step) return "step counter differs";
  return std::nullopt;
}

// First steps of the checks below (Property::first_step), for prefetching.
Case as_drawn(const Case& c) { return c; }
Case with_shards(const Case& c, int num_shards) {
  Case s = c;
  s.num_shards = num_shards;
  return s;
}
Case one_shard(const Case& c) { return with_shards(c, 1); }  // shard_invariance runs 1 first
Case without_lr(const Case& c) {
  Case s = c;
  s.lr = 0.0f;
  return s;
}

Verdict accuracy(Implementation& impl, const Case& c, Observations& obs) {
  auto r = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&r)) return *v;
  const Expectation e = expect(c, impl.declaration().arithmetic);
  const auto bad = compare(std::get<StepResult>(r), e, every_output, &obs);
  if (bad.empty()) return Verdict::pass();
  return Verdict::fail(
      fmt::format("{} output elements outside the derived bound:{}", bad.size(), list(bad)));
}

Verdict shard_invariance(Implementation& impl, const Case& c, Observations& obs) {
  // 1, the generated count, counts that do not divide n, and one larger than n.
  std::set<int> counts = {1, 2, 3, c.num_shards, c.n + 1};
  // An implementation bounded by its devices is not asked for more shards than it has.
  if (const int most = impl.declaration().capabilities.max_shards; most > 0)
    std::erase_if(counts, [&](int s) { return s > most; });
  const bool sharded = impl.declaration().capabilities.sharded;
  const Expectation e = expect(c, impl.declaration().arithmetic);
  std::optional<StepResult> first;
  for (int s : counts) {
    auto r = run(impl, with_shards(c, s));
    if (auto* v = std::get_if<Verdict>(&r)) return *v;
    StepResult& res = std::get<StepResult>(r);
    if (sharded) {
      const auto bad = compare(res, e, every_output, &obs);
      if (!bad.empty()) return Verdict::fail(fmt::format("with num_shards={}:{}", s, list(bad)));
    } else if (!first) {
      first = std::move(res);
    } else if (auto diff = first_difference(*first, res)) {
      return Verdict::fail(fmt::format(
          "num_shards changed the result of an unsharded implementation: num_shards=1 vs {}: {}", s,
          *diff));
    }
  }
  return Verdict::pass();
}

Verdict pre_update_loss(Implementation& impl, const Case& c, Observations& obs) {
  const Expectation e = expect(c, impl.declaration().arithmetic);
  Case after = c;
  for (std::size_t i = 0; i < after.kernel.size(); ++i) after.kernel[i] = e.kernel[i].rounded;
  for (std::size_t i = 0; i < after.bias.size(); ++i) after.bias[i] = e.bias[i].rounded;
  const Expectation post = expect(after, impl.declaration().arithmetic);
  const Expected &pre_l = e.loss[0], &post_l = post.loss[0];
  if (pre_l.may_overflow || post_l.may_overflow || !std::isfinite(post_l.value) ||
      std::abs(pre_l.value - post_l.value) <= 2.0 * (pre_l.bound + post_l.bound)) {
    return Verdict::discard("pre- and post-update loss are not distinguishable");
  }
  auto r = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&r)) return *v;
  const float loss = std::get<StepResult>(r).loss;
  const ElementCheck chk = check_element(loss, pre_l);
  obs.record(Output::loss, chk);
  if (chk.ok) return Verdict::pass();
  const bool is_post = check_element(loss, post_l).ok;
  return Verdict::fail(fmt::format(
      "returned loss {} is {}; the pre-update loss is {} (bound {:.3g}), the post-update loss {}",
      describe(loss), is_post ? "the loss after the update" : "neither pre- nor post-update loss",
      describe(pre_l.rounded), pre_l.bound, describe(post_l.rounded)));
}

// |p' - (p - lr g)| for the implementation's own g: the update is judged apart from the
// gradient, so a gradient bug and an update bug are told apart.
std::vector<std::string> inconsistent_updates(const Case& c, const StepResult& r,
                                              const Expectation& e) {
  std::vector<std::string> out;
  auto check = [&](const char* name, const std::vector<float>& p, const std::vector<float>& p_new,
                   const std::vector<float>& g, const std::vector<double>& slack) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double v = double(p[i]) - double(c.lr) * double(g[i]);
      if (!std::isfinite(v) || !std::isfinite(p_new[i])) continue;
      const double allowed = e.u * (1.0 + e.u) * std::abs(v) + slack[i] + 0x1p-52 * std::abs(v);
      const double off = std::abs(double(p_new[i]) - v);
      if (off > allowed) {
        out.push_back(
            fmt::format("{}[{}] = {} but p - lr*g = {:.9g} for the reported g = {}: "
                        "off by {:.3g}, allowed {:.3g}",
                        name, i, describe(p_new[i]), v, describe(g[i]), off, allowed));
      }
    }
  };
  check("kernel", c.kernel, r.kernel, *r.grad_kernel, e.kernel_from_grad);
  check("bias", c.bias, r.bias, *r.grad_bias, e.bias_from_grad);
  return out;
}

Verdict update_rule(Implementation& impl, const Case& c, Observations& obs) {
  auto r = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&r)) return *v;
  const StepResult& res = std::get<StepResult>(r);
  const Expectation e = expect(c, impl.declaration().arithmetic);
  const auto bad = compare(res, e, {Output::kernel, Output::bias}, &obs);
  if (res.grad_kernel && res.grad_bias) {
    const auto inconsistent = inconsistent_updates(c, res, e);
    if (!inconsistent.empty()) {
      std::string s;
      for (std::size_t i = 0; i < inconsistent.size() && i < max_listed; ++i)
        s += "\n  " + inconsistent[i];
      return Verdict::fail(
          fmt::format("update bug: parameters do not move as p - lr*g for the implementation's "
                      "own gradient ({} elements):{}",
                      inconsistent.size(), s));
    }
    if (!bad.empty()) {
      return Verdict::fail(
          "gradient bug: parameters move as p - lr*g for the reported g, but that g is wrong, "
          "so the new parameters are outside the bound:" +
          list(bad));
    }
  }
  if (!bad.empty()) return Verdict::fail("new parameters outside the bound:" + list(bad));
  return Verdict::pass();
}

Verdict determinism(Implementation& impl, const Case& c, Observations&) {
  auto a = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&a)) return *v;
  auto b = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&b)) return *v;
  if (auto diff = first_difference(std::get<StepResult>(a), std::get<StepResult>(b)))
    return Verdict::fail("the same case twice gave different bits: " + *diff);
  return Verdict::pass();
}

Verdict step_counter(Implementation& impl, const Case& c, Observations&) {
  auto r = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&r)) return *v;
  const auto step = std::get<StepResult>(r).step;
  if (step == c.step + 1) return Verdict::pass();
  return Verdict::fail(fmt::format("step counter {} before the update, {} after; expected {}",
                                   c.step, step ? std::to_string(*step) : "none", c.step + 1));
}

Verdict zero_lr(Implementation& impl, const Case& c0, Observations&) {
  const Case c = without_lr(c0);
  // 0 * inf is NaN: where the gradient may overflow, p - 0*g need not be p.
  const Expectation e = expect(c, impl.declaration().arithmetic);
  for (const auto* v : {&e.kernel, &e.bias})
    for (const Expected& x : *v)
      if (x.may_overflow) return Verdict::discard("the gradient may overflow");
  auto r = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&r)) return *v;
  const StepResult& res = std::get<StepResult>(r);
  auto same = [](const std::vector<float>& p, const std::vector<float>& q,
                 const char* name) -> std::optional<std::string> {
    for (std::size_t i = 0; i < p.size(); ++i) {
      // p - 0*g is p exactly; only the sign of a zero may change (-0 - -0 = +0).
      if (!same_bits(p[i], q[i]) && !(p[i] == 0.0f && q[i] == 0.0f))
        return fmt::format("{}[{}] changed from {} to {}", name, i, describe(p[i]), describe(q[i]));
    }
    return std::nullopt;
  };
  if (auto d = same(c.kernel, res.kernel, "kernel")) return Verdict::fail("with lr = 0, " + *d);
  if (auto d = same(c.bias, res.bias, "bias")) return Verdict::fail("with lr = 0, " + *d);
  return Verdict::pass();
}

Verdict special_values(Implementation& impl, const Case& c, Observations& obs) {
  const StepOutcome out = impl.step(c);
  bool nonfinite_input = !std::isfinite(c.lr);
  for (const auto* v : {&c.kernel, &c.bias, &c.x, &c.y})
    for (float f : *v) nonfinite_input = nonfinite_input || !std::isfinite(f);
  if (!out.result) {
    if (nonfinite_input) return Verdict::pass();  // rejecting NaN/inf input is a valid policy
    return Verdict::fail("rejected a case with finite inputs: " + out.rejection);
  }
  if (auto why = malformed(*out.result, c, impl.declaration())) return Verdict::fail(*why);
  const Declaration& d = impl.declaration();
  const Expectation e = expect(c, d.arithmetic);
  const auto bad = compare(*out.result, e, every_output, &obs);
  if (bad.empty()) return Verdict::pass();
  return Verdict::fail(fmt::format("{} outputs violate the declared policy (subnormals: {}):{}",
                                   bad.size(), to_string(d.arithmetic.subnormals), list(bad)));
}

Verdict placement(Implementation& impl, const Case& c, Observations& obs) {
  auto r = run(impl, c);
  if (auto* v = std::get_if<Verdict>(&r)) return *v;
  const std::vector<ShardPart>& shards = *std::get<StepResult>(r).shards;
  Observations::ShardStorage stored{c.d, c.k, c.num_shards, {}};
  for (const ShardPart& p : shards) stored.values.push_back(p.kernel + p.bias);
  obs.shard_storage = std::move(stored);
  if (auto why = layout_violation(shards, c.d, c.k, c.num_shards))
    return Verdict::fail(fmt::format("with num_shards={}: {}", c.num_shards, *why));
  return Verdict::pass();
}

std::vector<Property> make_properties() {
  CaseProfile distinguishable;
  distinguishable.lr = LrRegime::usual;
  distinguishable.max_dim = 8;
  std::vector<Property> p;
  p.push_back({"accuracy",
               "every float32 output (loss, kernel, bias, gradients) lies within the derived "
               "bound of the exact value",
               always, any_case(), accuracy, as_drawn});
  p.push_back({"shard_invariance",
               "num_shards changes nothing: identical bits for an unsharded implementation, "
               "within the bound for a sharded one (counts 1, 2, 3, generated, n+1)",
               always, any_case(), shard_invariance, one_shard});
  p.push_back({"pre_update_loss",
               "the returned loss is the loss before the update, on cases where the loss "
               "after the update is distinguishable from it",
               always, cases(distinguishable), pre_update_loss});
  p.push_back({"update_rule",
               "parameters move as p - lr*g: within the bound of the exact update, and "
               "consistent with the implementation's own reported gradient",
               always, any_case(), update_rule, as_drawn});
  p.push_back({"determinism", "the same case twice gives the same bits", always, any_case(8),
               determinism, as_drawn});
  p.push_back({"step_counter", "the step counter advances by exactly one",
               [](const Declaration& d) { return d.capabilities.step_counter; }, any_case(4),
               step_counter, as_drawn});
  p.push_back({"zero_lr", "lr = 0 leaves every parameter unchanged", always, any_case(8), zero_lr,
               without_lr});
  p.push_back({"special_values",
               "NaN, infinities, -0 and subnormals are handled as declared: outputs that "
               "depend on a non-finite input are non-finite, the rest within the bound",
               always, special_cases(), special_values, as_drawn});
  p.push_back({"placement",
               "each shard stores its own part of the parameters: the parts cover every "
               "parameter exactly once, sized by the remainder rule (flat (D+1)*K vector "
               "split as numpy.array_split)",
               [](const Declaration& d) { return d.capabilities.shard_layout; }, any_case(),
               placement, as_drawn});
  return p;
}

}  // namespace

const std::vector<Property>& properties() {
  static const std::vector<Property> all = make_properties();
  return all;
}

const Property& find_property(std::string_view name) {
  for (const Property& p : properties())
    if (p.name == name) return p;
  std::string known;
  for (const Property& p : properties()) known += (known.empty() ? "" : ", ") + p.name;
  throw std::invalid_argument(fmt::format("no property named \"{}\"; known: {}", name, known));
}

}  // namespace sgdc
