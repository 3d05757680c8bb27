// The runner: deterministic cases, shrinking to smaller counterexamples, fault handling.
#include <gtest/gtest.h>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/properties/runner.hpp"

namespace sgdc {
namespace {

int elements(const Case& c) { return c.n * c.d + c.n * c.k + c.d * c.k; }

TEST(Runner, SameSeedSameCases) {
  const Property& p = find_property("accuracy");
  for (int i : {0, 7, 150}) {
    const Case a = draw(p, 42, i).value(), b = draw(p, 42, i).value();
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.kernel, b.kernel);
  }
  EXPECT_NE(draw(p, 42, 3).value().x, draw(p, 43, 3).value().x);
}

TEST(Runner, ShrinksToASmallerCounterexample) {
  auto impl = builtin::make(builtin::find("wrong-sign"));
  RunOptions o;
  o.seed = 1;
  // Start from a large case: skip the small early ones.
  o.only_case = 150;
  const PropertyReport r = run_property(find_property("accuracy"), *impl, o);
  ASSERT_FALSE(r.passed);
  ASSERT_TRUE(r.counterexample);
  EXPECT_LT(elements(r.counterexample->shrunk), elements(r.counterexample->original));
  EXPECT_GT(r.counterexample->shrink_steps, 0);
  // The shrunk case still fails.
  Observations obs;
  EXPECT_EQ(find_property("accuracy").check(*impl, r.counterexample->shrunk, obs).kind,
            Verdict::Kind::fail);
}

TEST(Runner, ReplayReproducesTheCounterexample) {
  auto impl = builtin::make(builtin::find("mean-over-batch"));
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
      : inner_(builtin::make(builtin::find(builtin))), calls_left_(calls) {}
  const Declaration& declaration() const override { return inner_->declaration(); }
  StepOutcome step(const Case& c) override {
    if (calls_left_-- <= 0) throw ImplementationFault("adapter exited with status 1");
    return inner_->step(c);
  }

 private:
  std::unique_ptr<Implementation> inner_;
  int calls_left_;
};

TEST(Runner, FaultEndsTheRunAndKeepsWhatWasMeasured) {
  BreaksAfter impl("float32", 30);
  const PropertyReport r = run_property(find_property("accuracy"), impl, {});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.cases, 30);
  EXPECT_TRUE(r.observations.of(Output::kernel).seen);
  ASSERT_TRUE(r.fault);
  EXPECT_NE(r.fault->find("case 30: adapter exited with status 1"), std::string::npos) << *r.fault;
  EXPECT_TRUE(r.fatal_fault);
}

TEST(Runner, FaultWhileShrinkingKeepsTheCounterexample) {
  BreaksAfter impl("wrong-sign", 5);
  RunOptions o;
  o.only_case = 150;
  const PropertyReport r = run_property(find_property("accuracy"), impl, o);
  EXPECT_FALSE(r.passed);
  ASSERT_TRUE(r.counterexample);
  EXPECT_TRUE(r.counterexample->fault_while_shrinking);
  ASSERT_TRUE(r.fault);
  EXPECT_TRUE(r.fatal_fault);
}

// A built-in that records the prefetch hints and the steps it is asked for.
class Recorder final : public Implementation {
 public:
  explicit Recorder(int window)
      : inner_(builtin::make(builtin::find("float32"))), window_(window) {}
  const Declaration& declaration() const override { return inner_->declaration(); }
  StepOutcome step(const Case& c) override {
    stepped.push_back(c);
    return inner_->step(c);
  }
  void prefetch(std::span<const Case> upcoming) noexcept override {
    hints.emplace_back(upcoming.begin(), upcoming.end());
  }
  int prefetch_window() const noexcept override { return window_; }

  std::vector<Case> stepped;
  std::vector<std::vector<Case>> hints;

 private:
  std::unique_ptr<Implementation> inner_;
  int window_;
};

TEST(Runner, HintsTheFirstStepsOfTheNextCases) {
  for (const char* name : {"accuracy", "shard_invariance", "zero_lr", "determinism"}) {
    const Property& p = find_property(name);
    Recorder rec(4);
    RunOptions o;
    o.cases = 10;
    const PropertyReport r = run_property(p, rec, o);
    ASSERT_TRUE(r.passed) << name;
    ASSERT_EQ(rec.hints.size(), 10u) << name;
    for (std::size_t i = 0; i < rec.hints.size(); ++i) {
      // Up to the window, and never more than the run still needs.
      EXPECT_EQ(rec.hints[i].size(), std::min<std::size_t>(4, 10 - i)) << name;
      // The hint's first case is the check's first step, and the next hint goes on from it.
      EXPECT_EQ(rec.hints[i][0].x, p.first_step(draw(p, o.seed, static_cast<int>(i)).value()).x);
      EXPECT_EQ(rec.hints[i][0].lr, p.first_step(draw(p, o.seed, static_cast<int>(i)).value()).lr);
      if (i + 1 < rec.hints.size()) EXPECT_EQ(rec.hints[i][1].x, rec.hints[i + 1][0].x) << name;
    }
    // Each hint names the case stepped next.
    std::size_t next = 0;
    for (const Case& c : rec.stepped) {
      if (next < rec.hints.size() && c.x == rec.hints[next][0].x && c.lr == rec.hints[next][0].lr &&
          c.num_shards == rec.hints[next][0].num_shards)
        ++next;
    }
    EXPECT_EQ(next, rec.hints.size()) << name;
  }
}

TEST(Runner, NoHintsWithoutAWindowOrAFirstStep) {
  Recorder none(0);
  EXPECT_TRUE(run_property(find_property("accuracy"), none, {}).passed);
  EXPECT_TRUE(none.hints.empty());
  Recorder some(4);
  EXPECT_TRUE(run_property(find_property("pre_update_loss"), some, {}).passed);
  EXPECT_TRUE(some.hints.empty()) << "pre_update_loss may discard before it steps";
  RunOptions replay;
  replay.only_case = 3;
  EXPECT_TRUE(run_property(find_property("accuracy"), some, replay).passed);
  EXPECT_TRUE(some.hints.empty());
}

}  // namespace
}  // namespace sgdc
