// The runner: deterministic cases, shrinking to smaller counterexamples, fault handling.
#include <gtest/gtest.h>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/properties/runner.hpp"

namespace sgdc::properties {
namespace {

int elements(const reference::Case& c) { return c.n * c.d + c.n * c.k + c.d * c.k; }

const CaseSpace space;

TEST(Runner, SameSeedSameCases) {
  const Property& p = find_property("accuracy");
  for (int i : {0, 7, 150}) {
    const reference::Case a = draw(p, space, 42, i).value(), b = draw(p, space, 42, i).value();
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.kernel, b.kernel);
  }
  EXPECT_NE(draw(p, space, 42, 3).value().x, draw(p, space, 43, 3).value().x);
}

// The index of a case of at least 40 elements, from the 150th on, on which `impl` fails
// accuracy: a large counterexample to shrink.
int large_failing_case(Implementation& impl, const RunOptions& o) {
  const Property& p = find_property("accuracy");
  const CaseSpace s = case_space(impl.declaration(), o);
  for (int i = 150;; ++i) {
    const reference::Case c = draw(p, s, o.seed, i).value();
    Observations obs;
    if (elements(c) >= 40 && evaluate(p, impl, c, obs).kind == Judgement::Kind::fail) return i;
  }
}

TEST(Runner, ShrinksToASmallerCounterexample) {
  auto impl = conformance::builtin::make(conformance::builtin::find("wrong-sign"));
  RunOptions o;
  o.seed = 1;
  // Start from a large case: skip the small early ones.
  o.only_case = large_failing_case(*impl, o);
  const PropertyReport r = run_property(find_property("accuracy"), *impl, o);
  ASSERT_FALSE(r.passed);
  ASSERT_TRUE(r.counterexample);
  EXPECT_LT(elements(r.counterexample->shrunk), elements(r.counterexample->original));
  EXPECT_GT(r.counterexample->shrink_steps, 0);
  // The shrunk case still fails.
  Observations obs;
  EXPECT_EQ(evaluate(find_property("accuracy"), *impl, r.counterexample->shrunk, obs).kind,
            Judgement::Kind::fail);
}

TEST(Runner, ReplayReproducesTheCounterexample) {
  auto impl = conformance::builtin::make(conformance::builtin::find("mean-over-batch"));
  RunOptions o;
  o.seed = 3;
  const PropertyReport first = run_property(find_property("accuracy"), *impl, o);
  ASSERT_TRUE(first.counterexample);
  o.only_case = first.counterexample->case_index;
  const PropertyReport again = run_property(find_property("accuracy"), *impl, o);
  ASSERT_TRUE(again.counterexample);
  EXPECT_EQ(again.counterexample->shrunk.x, first.counterexample->shrunk.x);
  EXPECT_EQ(again.counterexample->message, first.counterexample->message);
}

// Runs a built-in, then breaks for good after `calls` steps, as a crashed adapter does.
class BreaksAfter final : public Implementation {
 public:
  BreaksAfter(const char* builtin, int calls)
      : inner_(conformance::builtin::make(conformance::builtin::find(builtin))),
        calls_left_(calls) {}
  const Declaration& declaration() const override { return inner_->declaration(); }
  StepOutcome step(const reference::Case& c) override {
    if (calls_left_-- <= 0) throw ImplementationFault("adapter exited with status 1");
    return inner_->step(c);
  }

 private:
  std::unique_ptr<Implementation> inner_;
  int calls_left_;
};

TEST(Runner, FaultEndsTheRunAndKeepsWhatWasMeasured) {
  BreaksAfter impl("float32", 30);
  RunOptions o;
  o.batch = 8;
  const PropertyReport r = run_property(find_property("accuracy"), impl, o);
  EXPECT_FALSE(r.passed);
  // The batches before the one it broke in are counted.
  EXPECT_EQ(r.cases, 24);
  EXPECT_TRUE(r.observations.of(reference::Output::kernel).seen);
  ASSERT_TRUE(r.fault);
  // The fault names the case it broke on, which replays with --case 30.
  EXPECT_NE(r.fault->find("case 30: adapter exited with status 1"), std::string::npos) << *r.fault;
  EXPECT_TRUE(r.broke);
}

TEST(Runner, FaultWhileShrinkingKeepsTheCounterexample) {
  BreaksAfter impl("wrong-sign", 5);
  RunOptions o;
  o.only_case =
      large_failing_case(*conformance::builtin::make(conformance::builtin::find("wrong-sign")), o);
  const PropertyReport r = run_property(find_property("accuracy"), impl, o);
  EXPECT_FALSE(r.passed);
  ASSERT_TRUE(r.counterexample);
  EXPECT_TRUE(r.counterexample->fault_while_shrinking);
  ASSERT_TRUE(r.fault);
  EXPECT_TRUE(r.broke);
}

// A built-in that records the batches it is handed.
class Recorder final : public Implementation {
 public:
  explicit Recorder(const char* builtin = "float32")
      : inner_(conformance::builtin::make(conformance::builtin::find(builtin))) {}
  const Declaration& declaration() const override { return inner_->declaration(); }
  StepOutcome step(const reference::Case& c) override { return inner_->step(c); }
  std::vector<StepOutcome> step_batch(std::span<const reference::Case> cases) override {
    batches.emplace_back(cases.begin(), cases.end());
    return Implementation::step_batch(cases);
  }
  std::vector<std::vector<reference::Case>> batches;

 private:
  std::unique_ptr<Implementation> inner_;
};

TEST(Runner, StepsTheDrawnCasesInBatches) {
  const Property& p = find_property("shard_invariance");
  Recorder rec;
  RunOptions o;
  o.cases = 10;
  o.batch = 4;
  ASSERT_TRUE(run_property(p, rec, o).passed);
  // Batches of 4, 4 and 2 drawn cases, never more than the run needs, each with all of its
  // cases' planned steps, in case order.
  ASSERT_EQ(rec.batches.size(), 3u);
  const CaseSpace drawn_space = case_space(rec.declaration(), o);
  std::size_t drawn = 0;
  for (const auto& batch : rec.batches) {
    std::size_t at = 0;
    const std::size_t cases = &batch == &rec.batches.back() ? 2 : 4;
    for (std::size_t i = 0; i < cases; ++i, ++drawn) {
      const reference::Case c = draw(p, drawn_space, o.seed, static_cast<int>(drawn)).value();
      Context ctx(rec.declaration());
      for (const reference::Case& step : p.plan(ctx, c).steps) {
        ASSERT_LT(at, batch.size());
        EXPECT_EQ(batch[at].x, step.x);
        EXPECT_EQ(batch[at].num_shards, step.num_shards);
        ++at;
      }
    }
    EXPECT_EQ(at, batch.size());
  }
}

TEST(Runner, BatchingChangesNoVerdict) {
  for (const char* name : {"mean-of-shard-means", "nondeterministic", "skip-tiny-updates"}) {
    for (const Property& p : all_properties()) {
      auto one = conformance::builtin::make(conformance::builtin::find(name));
      auto many = conformance::builtin::make(conformance::builtin::find(name));
      RunOptions o;
      o.batch = 1;
      const PropertyReport a = run_property(p, *one, o);
      o.batch = 8;
      const PropertyReport b = run_property(p, *many, o);
      if (std::string(name) == "nondeterministic") continue;  // its draws differ by design
      EXPECT_EQ(a.passed, b.passed) << name << " " << p.name;
      EXPECT_EQ(a.cases, b.cases) << name << " " << p.name;
      EXPECT_EQ(a.discarded, b.discarded) << name << " " << p.name;
      EXPECT_EQ(a.observations.overall().ratio, b.observations.overall().ratio)
          << name << " " << p.name;
      if (a.counterexample && b.counterexample) {
        EXPECT_EQ(a.counterexample->case_index, b.counterexample->case_index) << name;
        EXPECT_EQ(a.counterexample->message, b.counterexample->message) << name;
      }
    }
  }
}

// A property of three rounds: the drawn case, then the case with lr halved, then with lr
// a quarter, each asked for by the judgement of the round before.
Property three_rounds() {
  Property p = find_property("accuracy");
  p.name = "three_rounds";
  p.judge = [](Context&, const reference::Case& c, std::span<const StepOutcome> out,
               Observations&) {
    if (out.size() < 3) {
      reference::Case next = c;
      next.lr = c.lr / float(1 << out.size());
      return Judgement::then({next});
    }
    return out.size() == 3 ? Judgement::pass() : Judgement::fail("too many outcomes");
  };
  return p;
}

TEST(Runner, JudgementsAskForMoreStepsRoundByRound) {
  const Property p = three_rounds();
  Recorder rec;
  RunOptions o;
  o.cases = 5;
  o.batch = 5;
  const PropertyReport r = run_property(p, rec, o);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.cases, 5);
  // One batch per round, each with one step of every case.
  ASSERT_EQ(rec.batches.size(), 3u);
  for (const auto& batch : rec.batches) EXPECT_EQ(batch.size(), 5u);
  EXPECT_EQ(rec.batches[1][0].lr, rec.batches[0][0].lr / 2);
  EXPECT_EQ(rec.batches[2][0].lr, rec.batches[0][0].lr / 4);
}

TEST(Runner, AnExpectedFailureIsMatchedElementByElement) {
  RunOptions options;
  const Judgement two = Judgement::fail("2 output elements outside the derived bound:\n  ...", {},
                                        {"bias[0]: got 1", "kernel[3]: got 2"});
  EXPECT_FALSE(is_expected_failure(options, two)) << "nothing is expected without a filter";
  options.expected = [](const std::string& text) {
    return text.find("\nbias[") != std::string::npos;
  };
  EXPECT_FALSE(is_expected_failure(options, two)) << "kernel[3] is not expected";
  const Judgement bias_only =
      Judgement::fail("1 output element outside the derived bound:\n  ...", {}, {"bias[0]: got 1"});
  EXPECT_TRUE(is_expected_failure(options, bias_only));
  // Each element's text starts with the message's first line.
  options.expected = [](const std::string& text) { return text.starts_with("2 output elements"); };
  EXPECT_TRUE(is_expected_failure(options, two));
  // Without elements, the message is matched.
  options.expected = [](const std::string& text) { return text == "counter differs"; };
  EXPECT_TRUE(is_expected_failure(options, Judgement::fail("counter differs")));
  EXPECT_FALSE(is_expected_failure(options, Judgement::fail("counter wraps")));
  EXPECT_FALSE(is_expected_failure(options, Judgement::pass()));
}

}  // namespace
}  // namespace sgdc::properties
