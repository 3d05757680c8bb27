// Diagnosis: each bug class is named on a step that has the bug, and nothing is named on
// one that does not; shrinking keeps the dimension that tells two suspects apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/properties/diagnosis.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/properties/runner.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::properties {
namespace {

std::unique_ptr<Implementation> builtin(const char* name) {
  return conformance::builtin::make(conformance::builtin::find(name));
}

// The shrunk counterexample of `property` against the built-in `name` at `seed`.
Counterexample counterexample(const char* name, const char* property, std::uint64_t seed = 1) {
  auto impl = builtin(name);
  RunOptions o;
  o.seed = seed;
  const PropertyReport r = run_property(find_property(property), *impl, o);
  EXPECT_FALSE(r.passed) << name << " passed " << property;
  return r.counterexample.value_or(Counterexample{});
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The first suspect of each mutant's failure names the class its catalogue entry says.
struct Named {
  const char* mutant;
  const char* property;
};
class FirstSuspect : public testing::TestWithParam<Named> {};

TEST_P(FirstSuspect, NamesTheMutantsClass) {
  const Named& n = GetParam();
  const auto& entry = conformance::builtin::find(n.mutant);
  const Counterexample cx = counterexample(n.mutant, n.property);
  ASSERT_FALSE(cx.suspects.empty()) << cx.message;
  EXPECT_TRUE(contains(cx.suspects[0], entry.named_by)) << cx.suspects[0];
  EXPECT_TRUE(contains(cx.message, "suspected: " + cx.suspects[0])) << cx.message;
}

INSTANTIATE_TEST_SUITE_P(
    NewClasses, FirstSuspect,
    testing::Values(
        Named{"sum-not-mean", "accuracy"}, Named{"mean-over-batch", "accuracy"},
        Named{"clipped-gradients", "accuracy"}, Named{"momentum-on-plain-sgd", "accuracy"},
        Named{"decay-in-loss", "accuracy"}, Named{"gradients-accumulate", "determinism"},
        Named{"nondeterministic", "determinism"}, Named{"half-precision-grad", "accuracy"},
        Named{"step-not-advanced", "step_counter"}, Named{"float32-counter", "step_counter"},
        Named{"int32-counter", "step_counter"},
        Named{"adam-bias-correction-off-by-one", "accuracy"}, Named{"unbiased-mean", "accuracy"},
        Named{"buffer-shared", "accuracy"}, Named{"adam-b2-on-gradient", "accuracy"},
        Named{"adam-decay-in-moment", "accuracy"}, Named{"adam-moments-bfloat16", "accuracy"},
        Named{"adam-state-not-advanced", "accuracy"}, Named{"tf32-matmul-undeclared", "accuracy"},
        Named{"bf16-matmul-undeclared", "accuracy"}, Named{"columns-past-8-dropped", "accuracy"},
        Named{"grad-times-shards", "accuracy"}, Named{"drop-remainder-rows", "accuracy"},
        Named{"nesterov-without-lookahead", "accuracy"},
        Named{"decay-convention-swapped", "accuracy"}, Named{"adam-eps-inside", "accuracy"},
        Named{"adam-decay-convention-swapped", "accuracy"},
        Named{"adagrad-eps-swapped", "accuracy"}, Named{"adagrad-sum-reset-every-step", "accuracy"},
        Named{"adagrad-initial-value-ignored", "accuracy"},
        Named{"fresh-buffer-every-step", "accuracy"},
        Named{"dampening-on-first-step", "special_values"}, Named{"clip-not-applied", "accuracy"},
        Named{"clip-local-shard-norm", "accuracy"}, Named{"clip-per-parameter", "accuracy"},
        Named{"clip-after-decay", "accuracy"}, Named{"clip-reported-gradients", "accuracy"},
        Named{"clip-eps-swapped", "accuracy"}),
    [](const testing::TestParamInfo<Named>& i) {
      std::string s = i.param.mutant;
      for (char& ch : s)
        if (ch == '-') ch = '_';
      return s;
    });

TEST(Diagnosis, ANaNIsBlamedOnTheDivisionThatMakesIt) {
  // One case at N*K = 1, at the first step: the mean's N*K - 1 and Adam's 1 - b^t with
  // t = step are both 0 there; where the NaN lies tells which.
  reference::Case c;
  c.n = c.d = c.k = 1;
  c.lr = 0.5f;
  c.kernel = {1.0f};
  c.bias = {0.0f};
  c.x = {1.0f};
  c.y = {0.0f};
  c.step = 0;
  c.optimizer.kind = reference::Optimizer::Kind::adam;
  c.optimizer.b1 = 0.9f;
  c.optimizer.b2 = 0.999f;
  c.optimizer.eps = 1e-8f;
  const reference::Expectation e = reference::expect(c);
  const StepOutcome right = builtin("float32")->step(c);
  ASSERT_TRUE(right.result);
  EXPECT_TRUE(suspected_bugs(c, *right.result, e).empty());

  reference::StepResult in_params = *right.result;
  in_params.kernel[0] = in_params.bias[0] = std::nanf("");
  const auto adam = suspected_bugs(c, in_params, e);
  ASSERT_EQ(adam.size(), 1u) << join_suspects(adam);
  EXPECT_TRUE(contains(adam[0], "t = step, not step + 1")) << adam[0];

  // A wrong moment (b2 applied to g, not g^2: negative) is another bug's NaN.
  reference::StepResult wrong_moment = in_params;
  wrong_moment.second_moment_kernel[0] = -wrong_moment.second_moment_kernel[0] - 1.0f;
  for (const std::string& s : suspected_bugs(c, wrong_moment, e))
    EXPECT_FALSE(contains(s, "1 - b^t")) << s;

  reference::StepResult in_mean = in_params;
  in_mean.loss[0] = in_mean.grad_kernel[0] = std::nanf("");
  const auto mean = suspected_bugs(c, in_mean, e);
  ASSERT_FALSE(mean.empty());
  EXPECT_TRUE(contains(mean[0], "N*K - 1")) << join_suspects(mean);
  for (const std::string& s : mean) EXPECT_FALSE(contains(s, "1 - b^t")) << s;

  // A step after the first cannot divide by 1 - b^0.
  c.step = 3;
  c.momentum_kernel = {0.0f};
  c.momentum_bias = {0.0f};
  c.second_moment_kernel = {0.0f};
  c.second_moment_bias = {0.0f};
  for (const std::string& s : suspected_bugs(c, in_params, reference::expect(c)))
    EXPECT_FALSE(contains(s, "1 - b^t")) << s;
}

TEST(Diagnosis, SumAndMeanOverTheBatchGetDifferentReports) {
  const Counterexample sum = counterexample("sum-not-mean", "accuracy");
  const Counterexample batch = counterexample("mean-over-batch", "accuracy");
  ASSERT_FALSE(sum.suspects.empty());
  ASSERT_FALSE(batch.suspects.empty());
  EXPECT_NE(sum.suspects, batch.suspects);
  for (const std::string& s : sum.suspects) EXPECT_FALSE(contains(s, "over the batch only")) << s;
  for (const std::string& s : batch.suspects) EXPECT_FALSE(contains(s, "a sum where")) << s;
  // Each shrunk case keeps N * K apart from K and from 2: neither merges with the other.
  EXPECT_GT(sum.shrunk.n, 1);
  EXPECT_GT(batch.shrunk.k, 2);
}

TEST(Diagnosis, NothingIsSuspectedOfACorrectStep) {
  for (const char* name : {"float32", "sequential", "pairwise", "float64", "adam-torch",
                           "adagrad-torch", "adagrad-optax"}) {
    auto impl = builtin(name);
    const Property& p = find_property("accuracy");
    const CaseSpace space = case_space(impl->declaration(), RunOptions{});
    for (int i = 0; i < 200; ++i) {
      const reference::Case c = draw(p, space, 7, i).value();
      const StepOutcome out = impl->step(c);
      ASSERT_TRUE(out.result);
      const auto suspects =
          suspected_bugs(c, *out.result, reference::expect(c, impl->declaration().arithmetic));
      EXPECT_TRUE(suspects.empty()) << name << " case " << i << ": " << join_suspects(suspects);
    }
  }
}

// A case whose optimizer state and products show each class of the state and of the
// compute format: a second step (state given), weight decay large enough to show in a
// moment, values with more significant bits than TF32 and bfloat16 keep.
reference::Case state_case(reference::Optimizer::Kind kind) {
  reference::Case c;
  c.n = 3, c.d = 2, c.k = 2;
  c.kernel = {0.7132f, -1.3391f, 0.2571f, 2.0913f};
  c.bias = {0.1257f, -0.5123f};
  c.x = {1.0371f, 2.3313f, -1.1193f, 0.5417f, 3.0111f, -2.1789f};
  c.y = {0.0137f, 1.1171f, 2.2231f, -1.0471f, 0.5319f, 0.2513f};
  c.lr = 0.0625f;
  c.step = 3;
  c.optimizer.kind = kind;
  if (kind == reference::Optimizer::Kind::momentum) {
    c.optimizer.momentum = 0.9f;
    c.momentum_kernel = {0.5137f, -0.2519f, 0.3331f, 0.1173f};
    c.momentum_bias = {-0.4127f, 0.6653f};
  } else if (kind == reference::Optimizer::Kind::adam) {
    c.optimizer.b1 = 0.9f;
    c.optimizer.b2 = 0.999f;
    c.optimizer.eps = 1e-8f;
    c.optimizer.weight_decay = 0.1f;
    c.optimizer.decay = reference::Optimizer::Decay::decoupled;
    c.momentum_kernel = {0.2137f, -0.1519f, 0.3331f, 0.1173f};
    c.momentum_bias = {-0.4127f, 0.2653f};
    c.second_moment_kernel = {0.0513f, 0.0219f, 0.0731f, 0.0117f};
    c.second_moment_bias = {0.0412f, 0.0665f};
  }
  return c;
}

struct OnACase {
  const char* mutant;
  reference::Optimizer::Kind kind;
};
class NamedFromTheNumbers : public testing::TestWithParam<OnACase> {};

// The step with the bug names its class first; the correct step of the same case names
// nothing, the class least of all.
TEST_P(NamedFromTheNumbers, OnAStepWithTheBugAndNotOnOneWithout) {
  const OnACase& p = GetParam();
  const auto& entry = conformance::builtin::find(p.mutant);
  ASSERT_FALSE(entry.named_by.empty()) << p.mutant;
  const reference::Case c = state_case(p.kind);
  const reference::Expectation e = reference::expect(c);
  const StepOutcome wrong = builtin(p.mutant)->step(c);
  ASSERT_TRUE(wrong.result);
  const auto named = suspected_bugs(c, *wrong.result, e);
  ASSERT_FALSE(named.empty()) << p.mutant;
  EXPECT_TRUE(contains(named[0], entry.named_by)) << join_suspects(named);
  const StepOutcome right = builtin("float32")->step(c);
  ASSERT_TRUE(right.result);
  const auto none = suspected_bugs(c, *right.result, e);
  EXPECT_TRUE(none.empty()) << join_suspects(none);
}

INSTANTIATE_TEST_SUITE_P(
    StateAndFormat, NamedFromTheNumbers,
    testing::Values(OnACase{"buffer-shared", reference::Optimizer::Kind::momentum},
                    OnACase{"adam-state-not-advanced", reference::Optimizer::Kind::adam},
                    OnACase{"adam-moments-bfloat16", reference::Optimizer::Kind::adam},
                    OnACase{"adam-b2-on-gradient", reference::Optimizer::Kind::adam},
                    OnACase{"adam-decay-in-moment", reference::Optimizer::Kind::adam},
                    OnACase{"adam-decay-convention-swapped", reference::Optimizer::Kind::adam},
                    OnACase{"tf32-matmul-undeclared", reference::Optimizer::Kind::sgd},
                    OnACase{"bf16-matmul-undeclared", reference::Optimizer::Kind::sgd}),
    [](const testing::TestParamInfo<OnACase>& i) {
      std::string s = i.param.mutant;
      for (char& ch : s)
        if (ch == '-') ch = '_';
      return s;
    });

TEST(Diagnosis, TheMomentumBufferNamesItsFormula) {
  // The other decay convention (wd large enough to show), a dampened first buffer: each
  // named from the buffer, the correct step's buffer naming neither.
  reference::Case c = state_case(reference::Optimizer::Kind::momentum);
  c.optimizer.weight_decay = 0.1f;
  const StepOutcome swapped = builtin("decay-convention-swapped")->step(c);
  ASSERT_TRUE(swapped.result);
  const auto decay = suspected_bugs(c, *swapped.result, reference::expect(c));
  ASSERT_FALSE(decay.empty());
  EXPECT_TRUE(contains(decay[0], "where the case's")) << join_suspects(decay);
  c.momentum_kernel.clear();
  c.momentum_bias.clear();
  c.optimizer.weight_decay = 0.0f;
  c.optimizer.dampening = 0.5f;
  const StepOutcome dampened = builtin("dampening-on-first-step")->step(c);
  ASSERT_TRUE(dampened.result);
  const auto first = suspected_bugs(c, *dampened.result, reference::expect(c));
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(contains(first[0], "dampened first buffer")) << join_suspects(first);
  const StepOutcome right = builtin("float32")->step(c);
  ASSERT_TRUE(right.result);
  EXPECT_TRUE(suspected_bugs(c, *right.result, reference::expect(c)).empty());
}

TEST(Diagnosis, AdamsOtherWeightDecayConventionIsNamedFromTheNumbers) {
  // Adam where AdamW is declared, and AdamW where Adam is: the moments read g + wd p, or g
  // alone, as the other convention has them. The correct steps of the same cases name
  // nothing, and the neighbouring decay bugs keep their own classes: the decay inside the
  // first moment (the parameters still decay decoupled) and a bias stepped without decay
  // (the kernel's moments right).
  for (const auto decay :
       {reference::Optimizer::Decay::decoupled, reference::Optimizer::Decay::coupled}) {
    reference::Case c = state_case(reference::Optimizer::Kind::adam);
    c.optimizer.decay = decay;
    const reference::Expectation e = reference::expect(c);
    const char* convention =
        decay == reference::Optimizer::Decay::decoupled ? "decoupled" : "coupled";
    const StepOutcome swapped = builtin("adam-decay-convention-swapped")->step(c);
    ASSERT_TRUE(swapped.result);
    const auto named = suspected_bugs(c, *swapped.result, e);
    ASSERT_FALSE(named.empty()) << convention;
    EXPECT_TRUE(contains(named[0], "where the case's Adam")) << join_suspects(named);
    EXPECT_TRUE(contains(named[0], decay == reference::Optimizer::Decay::decoupled
                                       ? "the case's AdamW (decoupled decay) belongs"
                                       : "the case's Adam with coupled decay"))
        << join_suspects(named);
    for (const char* right : {"float32", "adam-torch", "adam-optax"}) {
      const StepOutcome out = builtin(right)->step(c);
      ASSERT_TRUE(out.result);
      const auto none = suspected_bugs(c, *out.result, e);
      EXPECT_TRUE(none.empty()) << right << ", " << convention << ": " << join_suspects(none);
    }
    const char* neighbour = decay == reference::Optimizer::Decay::decoupled
                                ? "adam-decay-in-moment"
                                : "no-decay-on-bias-undeclared";
    const StepOutcome other = builtin(neighbour)->step(c);
    ASSERT_TRUE(other.result);
    const auto theirs = suspected_bugs(c, *other.result, e);
    ASSERT_FALSE(theirs.empty()) << neighbour;
    EXPECT_TRUE(contains(theirs[0], conformance::builtin::find(neighbour).named_by))
        << join_suspects(theirs);
    for (const std::string& s : theirs)
      EXPECT_FALSE(contains(s, "where the case's Adam")) << neighbour << ": " << s;
  }
}

TEST(Diagnosis, AdamsOtherDecayConventionIsToldFromABiasWithoutDecay) {
  // A zero kernel shows no decay of its own: the bias alone tells the other convention from
  // a bias stepped without decay (an undeclared parameter group), by its moments (AdamW
  // declared: a bias without decoupled decay keeps them right) or by its decoupled decay
  // (Adam declared: both bugs read g alone into the moments). At lr 0 nothing decays, and
  // where the moments cannot tell either, both classes are named.
  const std::string swapped = "where the case's Adam";
  const std::string group = "the bias stepped without weight decay";
  for (const auto decay :
       {reference::Optimizer::Decay::decoupled, reference::Optimizer::Decay::coupled}) {
    for (const float lr : {0.0625f, 0.0f}) {
      reference::Case c = state_case(reference::Optimizer::Kind::adam);
      c.optimizer.decay = decay;
      c.kernel.assign(c.kernel.size(), 0.0f);
      c.lr = lr;
      const reference::Expectation e = reference::expect(c);
      const std::string where =
          std::string(decay == reference::Optimizer::Decay::decoupled ? "AdamW" : "Adam") +
          (lr == 0.0f ? " at lr 0" : " at lr 1/16");
      const bool apart = decay == reference::Optimizer::Decay::decoupled || lr != 0.0f;
      auto suspects = [&](const char* name) {
        const StepOutcome out = builtin(name)->step(c);
        EXPECT_TRUE(out.result);
        return out.result ? suspected_bugs(c, *out.result, e) : std::vector<std::string>{};
      };
      auto named = [](const std::vector<std::string>& s, const std::string& part) {
        return std::any_of(s.begin(), s.end(),
                           [&](const std::string& x) { return contains(x, part); });
      };
      const auto convention = suspects("adam-decay-convention-swapped");
      ASSERT_FALSE(convention.empty()) << where;
      EXPECT_TRUE(contains(convention[0], apart ? swapped : group))
          << where << ": " << join_suspects(convention);
      EXPECT_EQ(named(convention, group), !apart) << where << ": " << join_suspects(convention);
      const auto bias = suspects("no-decay-on-bias-undeclared");
      // AdamW at lr 0: the bias's missing decay shows nowhere, and nothing is wrong.
      if (decay == reference::Optimizer::Decay::decoupled && lr == 0.0f) {
        EXPECT_TRUE(bias.empty()) << join_suspects(bias);
        continue;
      }
      ASSERT_FALSE(bias.empty()) << where;
      EXPECT_TRUE(contains(bias[0], group)) << where << ": " << join_suspects(bias);
      EXPECT_EQ(named(bias, swapped), !apart) << where << ": " << join_suspects(bias);
    }
  }
}

TEST(Diagnosis, AdagradsClassesAreNamedFromTheNumbers) {
  // Adagrad (torch's convention: eps outside the root) with an eps large enough to show on
  // either side of the root and an initial value: on a carried sum and on a fresh one, each
  // mutant whose bug the case shows is named by its class first; the others, and the correct
  // steps, are named nothing.
  for (const bool fresh : {false, true}) {
    reference::Case c = state_case(reference::Optimizer::Kind::adagrad);
    c.optimizer.eps = 0.25f;
    c.optimizer.initial_accumulator_value = 0.5f;
    if (!fresh) {
      c.second_moment_kernel = {0.0513f, 1.0219f, 0.0731f, 2.0117f};
      c.second_moment_bias = {0.0412f, 0.3665f};
    }
    const reference::Expectation e = reference::expect(c);
    for (const char* name : {"adagrad-eps-swapped", "adagrad-sum-reset-every-step",
                             "adagrad-initial-value-ignored", "adagrad-torch", "adagrad-optax"}) {
      const auto& entry = conformance::builtin::find(name);
      const bool shows =
          entry.kind == conformance::builtin::Kind::mutant &&
          (entry.recipe.bug == conformance::builtin::Bug::adagrad_eps_swapped ||
           fresh == (entry.recipe.bug == conformance::builtin::Bug::adagrad_initial_value_ignored));
      const StepOutcome out = builtin(name)->step(c);
      ASSERT_TRUE(out.result);
      const auto named = suspected_bugs(c, *out.result, e);
      const std::string where =
          std::string(name) + (fresh ? " on a fresh sum" : " on a carried sum");
      if (!shows) {
        EXPECT_TRUE(named.empty()) << where << ": " << join_suspects(named);
        continue;
      }
      ASSERT_FALSE(named.empty()) << where;
      EXPECT_TRUE(contains(named[0], entry.named_by)) << where << ": " << join_suspects(named);
    }
  }
}

TEST(Diagnosis, DeclaredComputeFormatsAreNotSuspected) {
  // The same products declared (compute_format tf32, bfloat16) are within their bound.
  const reference::Case c = state_case(reference::Optimizer::Kind::sgd);
  for (const char* name : {"tf32-matmul", "bf16-matmul"}) {
    auto impl = builtin(name);
    const StepOutcome out = impl->step(c);
    ASSERT_TRUE(out.result);
    const auto s =
        suspected_bugs(c, *out.result, reference::expect(c, impl->declaration().arithmetic));
    EXPECT_TRUE(s.empty()) << name << ": " << join_suspects(s);
  }
}

TEST(Diagnosis, ASharedBufferIsToldFromABufferStartedAfresh) {
  // The kernel's buffer near zero: a bias buffer read from it is one started afresh, and
  // both are named; the fresh-buffer bug (the kernel's buffer wrong too) is not shared.
  reference::Case c = state_case(reference::Optimizer::Kind::momentum);
  const StepOutcome fresh = builtin("fresh-buffer-every-step")->step(c);
  ASSERT_TRUE(fresh.result);
  const auto afresh = suspected_bugs(c, *fresh.result, reference::expect(c));
  ASSERT_FALSE(afresh.empty());
  EXPECT_TRUE(contains(afresh[0], "the given buffer ignored")) << afresh[0];
  for (const std::string& s : afresh) EXPECT_FALSE(contains(s, "one buffer shared")) << s;
  // The correct step from the same case names nothing.
  const StepOutcome right = builtin("float32")->step(c);
  ASSERT_TRUE(right.result);
  EXPECT_TRUE(suspected_bugs(c, *right.result, reference::expect(c)).empty());
  c.momentum_kernel = {0.0f, 0.0f, 0.0f, 0.0f};
  const StepOutcome shared = builtin("buffer-shared")->step(c);
  ASSERT_TRUE(shared.result);
  const auto both = suspected_bugs(c, *shared.result, reference::expect(c));
  ASSERT_EQ(both.size(), 2u) << join_suspects(both);
  EXPECT_TRUE(contains(both[0], "started afresh")) << both[0];
  EXPECT_TRUE(contains(both[1], "one buffer shared")) << both[1];
}

// Two answers to one case, built from the correct one: the second as each cross-call bug
// makes it.
class BetweenCalls : public testing::Test {
 protected:
  void SetUp() override {
    c.n = 3, c.d = 2, c.k = 2;
    c.kernel = {0.5f, -1.0f, 0.25f, 2.0f};
    c.bias = {0.125f, -0.5f};
    c.x = {1.0f, 2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
    c.y = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f, 0.25f};
    c.lr = 0.0625f;
    e = reference::expect(c, {});
    auto impl = builtin("float32");
    first = *impl->step(c).result;
  }
  reference::StepResult with_grads(float factor, bool plus_one_more) const {
    reference::StepResult r = first;
    for (auto* g : {&r.grad_kernel, &r.grad_bias})
      for (float& v : *g) v = plus_one_more ? 2.0f * v : factor * v;
    for (std::size_t i = 0; i < r.kernel.size(); ++i)
      r.kernel[i] = c.kernel[i] - c.lr * r.grad_kernel[i];
    for (std::size_t i = 0; i < r.bias.size(); ++i) r.bias[i] = c.bias[i] - c.lr * r.grad_bias[i];
    return r;
  }
  reference::Case c;
  reference::Expectation e;
  reference::StepResult first;
};

TEST_F(BetweenCalls, AccumulatedGradients) {
  const auto s = suspected_between_calls(c, first, with_grads(1.0f, true), e);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(contains(s[0], "gradients accumulate across calls")) << s[0];
  EXPECT_TRUE(contains(s[0], "zero_grad")) << s[0];
}

TEST_F(BetweenCalls, AccumulatedOntoALargeLeftover) {
  // A gradient left from earlier calls, far larger than this case's, keeps both answers'
  // norms alike: the sum is told element by element.
  reference::StepResult a = first, b = first;
  for (auto [ga, gb, g] : {std::tuple{&a.grad_kernel, &b.grad_kernel, &first.grad_kernel},
                           std::tuple{&a.grad_bias, &b.grad_bias, &first.grad_bias}})
    for (std::size_t i = 0; i < g->size(); ++i) {
      const float left = i == 0 ? 1e12f : 0.0f;
      (*ga)[i] = left + (*g)[i];
      (*gb)[i] = (*ga)[i] + (*g)[i];
    }
  const auto s = suspected_between_calls(c, a, b, e);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(contains(s[0], "gradients accumulate across calls")) << s[0];
}

TEST_F(BetweenCalls, AConstantFactorPerCall) {
  const auto s = suspected_between_calls(c, first, with_grads(0.5f, false), e);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(contains(s[0], "gradients differ by a constant factor between calls")) << s[0];
}

TEST_F(BetweenCalls, StateCarriedWithTheSameGradients) {
  reference::StepResult second = first;
  for (float& p : second.kernel) p -= 0.25f;
  const auto s = suspected_between_calls(c, first, second, e);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(contains(s[0], "state carried across calls")) << s[0];
}

TEST_F(BetweenCalls, TwoAnswersWithinTheBoundDifferByRoundingAlone) {
  // Gradients that cancel to nearly nothing: one call's zero, the other's a rounding
  // error, both within the bound, whatever their ratio.
  c.y = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  c.kernel = {0.0f, 0.0f, 0.0f, 0.0f};
  c.bias = {0.0f, 0.0f};
  e = reference::expect(c, {});
  first = *builtin("float32")->step(c).result;
  reference::StepResult second = first;
  second.grad_bias[0] = 0x1p-149f;
  const auto s = suspected_between_calls(c, first, second, e);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(contains(s[0], "rounding alone")) << s[0];
}

TEST_F(BetweenCalls, RoundingAlone) {
  reference::StepResult second = first;
  second.grad_bias[0] = std::nextafter(second.grad_bias[0], 10.0f);
  const auto s = suspected_between_calls(c, first, second, e);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(contains(s[0], "rounding alone")) << s[0];
}

TEST(Shrinking, KeepsSuspectsApart) {
  EXPECT_TRUE(keeps_suspects_apart({}, {}));
  EXPECT_TRUE(keeps_suspects_apart({}, {"a", "b"}));
  EXPECT_TRUE(keeps_suspects_apart({"a"}, {"b"}));
  EXPECT_TRUE(keeps_suspects_apart({"a", "b"}, {"a"}));
  EXPECT_FALSE(keeps_suspects_apart({"a"}, {"a", "b"}));  // would merge two classes
  EXPECT_FALSE(keeps_suspects_apart({"a"}, {}));          // would lose the class
}

TEST(SpecialValues, BlamesThePolicyOnlyWhereASpecialValueIsInvolved) {
  // An update bug on normal numbers: out of bound, with accuracy's suspects, not a policy.
  const Counterexample cx = counterexample("lr-twice", "special_values");
  if (!contains(cx.message, "declared policy")) {
    EXPECT_TRUE(contains(cx.message, "from finite inputs where no subnormal is involved"))
        << cx.message;
    EXPECT_FALSE(cx.suspects.empty()) << cx.message;
  }
  // Flushing subnormals while declaring ieee is the policy's failure.
  auto impl = builtin("float32");
  reference::Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {0x1p-140f};
  c.bias = {0.0f};
  c.x = {1.0f};
  c.y = {0.0f};
  c.lr = 0.0f;
  StepOutcome out = impl->step(c);
  ASSERT_TRUE(out.result);
  out.result->loss = {0.0f};
  out.result->grad_kernel = {0.0f};
  out.result->grad_bias = {0.0f};
  Context ctx(impl->declaration());
  Observations obs;
  const Judgement j =
      find_property("special_values").judge(ctx, c, std::span<const StepOutcome>(&out, 1), obs);
  ASSERT_EQ(j.kind, Judgement::Kind::fail);
  EXPECT_TRUE(contains(j.message, "the declared policy (subnormals: ieee)")) << j.message;
}

// A refusal passes where an overflow may trap (torch.optim.Adam raises where its step size
// lr / (1 - b1^t) passes float32's range) and fails on a finite case that cannot overflow.
TEST(Refusals, AllowedOnlyWhereTheStepMayOverflow) {
  auto impl = builtin("adam-torch");
  reference::Case c;
  c.n = c.d = c.k = 1;
  c.kernel = {0.0f};
  c.bias = {0.0f};
  c.x = {0.0f};
  c.y = {0.0f};
  c.lr = 0x1.fep127f;
  c.optimizer.kind = reference::Optimizer::Kind::adam;
  c.optimizer.b1 = 0.875f;
  c.optimizer.b2 = 0.96875f;
  c.optimizer.eps = 1e-8f;
  const StepOutcome refused{.result = std::nullopt,
                            .rejection =
                                "RuntimeError: value cannot be converted to type float "
                                "without overflow"};
  auto judge = [&](const char* property, const reference::Case& k) {
    Context ctx(impl->declaration());
    Observations obs;
    return find_property(property).judge(ctx, k, std::span<const StepOutcome>(&refused, 1), obs);
  };
  EXPECT_EQ(judge("special_values", c).kind, Judgement::Kind::pass);
  reference::Case fits = c;
  fits.lr = 0.5f;
  const Judgement j = judge("special_values", fits);
  ASSERT_EQ(j.kind, Judgement::Kind::fail);
  EXPECT_TRUE(contains(j.message, "rejected a case with finite inputs that cannot overflow"))
      << j.message;
  // The other properties judge nothing from such a refusal (a declared lr near float32's
  // largest reaches them too): the case is discarded, the rejection its reason; a refusal
  // of a case that cannot overflow fails each.
  for (const char* name : {"accuracy", "update_rule", "training"}) {
    const Judgement d = judge(name, c);
    EXPECT_EQ(d.kind, Judgement::Kind::discard) << name << ": " << d.message;
    EXPECT_TRUE(contains(d.message, "value cannot be converted")) << name << ": " << d.message;
    const Judgement f = judge(name, fits);
    ASSERT_EQ(f.kind, Judgement::Kind::fail) << name;
    EXPECT_TRUE(contains(f.message, "rejected a valid case")) << name << ": " << f.message;
  }
}

// Each storage names its own wrong counter and no other; a right counter names nothing.
TEST(Diagnosis, CounterClasses) {
  auto only = [](std::int64_t before, std::int64_t after, std::int64_t want) {
    const auto s = suspected_counter(before, after, want);
    return s.size() == 1 ? s[0] : join_suspects(s);
  };
  EXPECT_TRUE(contains(only(5, 5, 6), "not advanced"));
  EXPECT_TRUE(contains(only(16777217, 16777216, 16777218), "float32"));
  EXPECT_TRUE(contains(only(2147483647, -2147483648LL, 2147483648LL), "signed 32-bit"));
  EXPECT_TRUE(contains(only(4294967295LL, 0, 4294967296LL), "unsigned 32-bit"));
  EXPECT_TRUE(suspected_counter(5, 6, 6).empty());
  EXPECT_TRUE(suspected_counter(5, 8, 6).empty());  // no storage makes 8 of 5
  EXPECT_TRUE(suspected_counter(5, std::nullopt, 6).empty());
}

TEST(ShardInvariance, DriftBetweenCallsIsNotBlamedOnTheShardCount) {
  const Counterexample cx = counterexample("nondeterministic", "shard_invariance");
  EXPECT_TRUE(contains(cx.message, "the step is not deterministic")) << cx.message;
  EXPECT_FALSE(contains(cx.message, "declare it")) << cx.message;
}

}  // namespace
}  // namespace sgdc::properties
