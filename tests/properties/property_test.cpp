// Each property as its own RapidCheck test against the implementation named by the
// environment variable SGDC_IMPL (default builtin:float32). A failure prints RapidCheck's
// shrunk counterexample and its RC_PARAMS replay line.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <memory>

#include "sgdc/conformance/open.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/properties/runner.hpp"

namespace sgdc::properties {
namespace {

Implementation& subject() {
  static const std::unique_ptr<Implementation> impl = [] {
    const char* spec = std::getenv("SGDC_IMPL");
    return conformance::open_implementation(spec && *spec ? spec : "builtin:float32");
  }();
  return *impl;
}

void check(const char* name) {
  const Property& p = find_property(name);
  Implementation& impl = subject();
  // Properties that do not apply (e.g. step_counter without the capability) hold vacuously.
  if (!p.applies(impl.declaration())) RC_SUCCEED("not applicable to " + impl.declaration().name);
  const reference::Case c = *p.generator(case_space(impl.declaration(), RunOptions{}));
  Observations obs;
  const Judgement j = evaluate(p, impl, c, obs);
  RC_PRE(j.kind != Judgement::Kind::discard);
  if (j.kind == Judgement::Kind::fail)
    RC_FAIL(impl.declaration().name + ", " + name + ": " + j.message);
}

RC_GTEST_PROP(Properties, Accuracy, ()) { check("accuracy"); }
RC_GTEST_PROP(Properties, ShardInvariance, ()) { check("shard_invariance"); }
RC_GTEST_PROP(Properties, PreUpdateLoss, ()) { check("pre_update_loss"); }
RC_GTEST_PROP(Properties, UpdateRule, ()) { check("update_rule"); }
RC_GTEST_PROP(Properties, Training, ()) { check("training"); }
RC_GTEST_PROP(Properties, Determinism, ()) { check("determinism"); }
RC_GTEST_PROP(Properties, StepCounter, ()) { check("step_counter"); }
RC_GTEST_PROP(Properties, ZeroLr, ()) { check("zero_lr"); }
RC_GTEST_PROP(Properties, SpecialValues, ()) { check("special_values"); }
RC_GTEST_PROP(Properties, Placement, ()) { check("placement"); }

TEST(Properties, EveryPropertyHasATest) {
  // Keeps this file in step with the catalogue: a new property needs its RC_GTEST_PROP.
  EXPECT_EQ(all_properties().size(), 10u);
}

}  // namespace
}  // namespace sgdc::properties