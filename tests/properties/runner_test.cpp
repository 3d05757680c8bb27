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

}  // namespace
}  // namespace sgdc
