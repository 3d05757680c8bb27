// Context::expect, the oracle's results kept per distinct case while one drawn case is
// evaluated (properties/src/evaluate.cpp).
#include <gtest/gtest.h>

#include <cstring>

#include "sgdc/properties/property.hpp"
#include "sgdc/reference/hyperparameters.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/worked_example.hpp"

namespace sgdc::properties {
namespace {

using reference::Optimizer;

// The worked example under an optimizer that takes `h`, with h's own value nudged to
// another valid one: two cases equal in every field but h.
reference::Case with_taker_of(const reference::Hyperparameter& h) {
  reference::Case c = reference::worked_example();
  for (const reference::OptimizerInfo& info : reference::optimizer_table) {
    const Optimizer::Kind kind = info.kind;
    if (!h.taken_by(kind)) continue;
    c.optimizer.kind = kind;
    if (kind == Optimizer::Kind::momentum) c.optimizer.momentum = 0.5f;
    if (kind == Optimizer::Kind::adam) {
      c.optimizer.b1 = 0.875f;
      c.optimizer.b2 = 0.96875f;
    }
    if (kind == Optimizer::Kind::adam || kind == Optimizer::Kind::adagrad)
      c.optimizer.eps = 0.0078125f;
    return c;
  }
  ADD_FAILURE() << h.name << " is taken by no optimizer";
  return c;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Context, ExpectTellsCasesApartByEveryHyperparameter) {
  const Declaration declaration{.name = "test"};
  for (const reference::Hyperparameter& h : reference::hyperparameters) {
    SCOPED_TRACE(h.name);
    reference::Case a = with_taker_of(h);
    const float v = h.get(a);
    reference::Case b = a;
    h.set(b, v == 0.0f ? 0.25f : v * 0.5f);
    ASSERT_TRUE(h.valid(h.get(b)));
    ASSERT_NO_THROW(b.validate());
    const reference::Expectation direct = reference::expect(b, declaration.arithmetic);
    Context ctx(declaration);
    const reference::Expectation& first = ctx.expect(a);
    const reference::Expectation& second = ctx.expect(b);
    EXPECT_NE(&first, &second) << "a case differing only in " << h.name << " shares a result";
    // And the result kept is b's own: its parameters' expected bits, element for element.
    ASSERT_EQ(second[reference::Output::kernel].size(), direct[reference::Output::kernel].size());
    for (std::size_t i = 0; i < direct[reference::Output::kernel].size(); ++i)
      EXPECT_TRUE(same_bits(second[reference::Output::kernel][i].rounded,
                            direct[reference::Output::kernel][i].rounded));
    // The same case again is the result already kept.
    EXPECT_EQ(&ctx.expect(b), &second);
  }
}

}  // namespace
}  // namespace sgdc::properties
