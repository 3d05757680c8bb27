// What a run exercised: counts per option, drawn ranges, and the declared options no judged
// case ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sgdc/properties/exercised.hpp"
#include "sgdc/properties/implementation.hpp"
#include "sgdc/reference/worked_example.hpp"

namespace sgdc::properties {
namespace {

int count(const Exercised& e, std::string_view name) {
  const auto& options = exercised_options();
  for (std::size_t i = 0; i < options.size(); ++i)
    if (name == options[i].name) return e.counts[i];
  ADD_FAILURE() << "no option " << name;
  return -1;
}

reference::Case nesterov_case() {
  reference::Case c = reference::worked_example();
  c.optimizer.kind = reference::Optimizer::Kind::momentum;
  c.optimizer.momentum = 0.9f;
  c.optimizer.nesterov = true;
  c.optimizer.weight_decay = 0.01f;
  c.optimizer.decay = reference::Optimizer::Decay::decoupled;
  c.num_shards = 2;
  return c;
}

TEST(Exercised, CountsOptionsAndRanges) {
  Exercised e;
  reference::Case plain = reference::worked_example();
  plain.lr = 0.5f;
  e.add(plain);
  e.add(nesterov_case());
  EXPECT_EQ(e.cases, 2);
  EXPECT_EQ(count(e, "sgd"), 1);
  EXPECT_EQ(count(e, "momentum"), 1);
  EXPECT_EQ(count(e, "nesterov"), 1);
  EXPECT_EQ(count(e, "decay decoupled"), 1);
  EXPECT_EQ(count(e, "decay coupled"), 0);
  EXPECT_EQ(count(e, "fresh state"), 1);
  EXPECT_EQ(count(e, "num_shards > 1"), 1);
  ASSERT_TRUE(e.ranges[0]);  // lr
  EXPECT_EQ(e.ranges[0]->first, std::min(0.5f, nesterov_case().lr));
  EXPECT_EQ(e.ranges[0]->second, std::max(0.5f, nesterov_case().lr));
  EXPECT_FALSE(e.ranges[4]) << "b1: no Adam case";
  Exercised twice = e;
  twice.merge(e);
  EXPECT_EQ(twice.cases, 4);
  EXPECT_EQ(count(twice, "nesterov"), 2);
  EXPECT_NE(e.summary().find("nesterov 1"), std::string::npos) << e.summary();
}

TEST(Exercised, WarnsOfDeclaredOptionsNeverRun) {
  Declaration d;
  d.capabilities.momentum = MomentumSupport{.nesterov = true, .decoupled_decay = true};
  Exercised only_plain;
  only_plain.add(reference::worked_example());
  const auto w = unexercised(only_plain, d);
  auto warns = [&](std::string_view what) {
    return std::any_of(w.begin(), w.end(),
                       [&](const std::string& s) { return s.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(warns("exercised momentum,"));
  EXPECT_TRUE(warns("exercised nesterov,"));
  EXPECT_TRUE(warns("exercised decay decoupled,"));
  EXPECT_FALSE(warns("dampening")) << "not declared";
  Exercised all = only_plain;
  all.add(nesterov_case());
  EXPECT_TRUE(unexercised(all, d).empty());
  // A recipe that runs no momentum: its options are not owed.
  d.recipe.optimizers = {reference::Optimizer::Kind::sgd};
  d.capabilities.momentum->decoupled_decay = false;
  EXPECT_TRUE(unexercised(only_plain, d).empty());
}

// A bias group is counted, its values drawn as ranges of their own, merged, and owed
// when declared.
TEST(Exercised, TheBiasGroup) {
  Exercised e;
  reference::Case c = nesterov_case();
  c.bias_group = reference::ParamGroup{.lr = 0.25f, .weight_decay = 0.0f};
  e.add(c);
  c.bias_group->lr = 0.5f;
  Exercised other;
  other.add(c);
  other.add(nesterov_case());
  e.merge(other);
  EXPECT_EQ(count(e, "bias group"), 2);
  const auto drawn = e.drawn();
  const auto at = [&](std::string_view name) {
    return std::find_if(drawn.begin(), drawn.end(), [&](const auto& d) { return d.first == name; });
  };
  ASSERT_NE(at("bias_group.lr"), drawn.end());
  EXPECT_EQ(at("bias_group.lr")->second, (std::pair{0.25f, 0.5f}));
  EXPECT_EQ(at("bias_group.weight_decay")->second, (std::pair{0.0f, 0.0f}));
  EXPECT_NE(e.summary().find("bias_group.lr [0.25, 0.5], bias_group.weight_decay 0"),
            std::string::npos)
      << e.summary();
  Declaration d;
  d.recipe.bias_group = DeclaredGroup{.weight_decay = {{0.0f, 0.0f}}};
  Exercised none;
  none.add(reference::worked_example());
  const auto w = unexercised(none, d);
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](const std::string& s) {
    return s.find("exercised bias group,") != std::string::npos;
  }));
  EXPECT_TRUE(unexercised(e, d).empty());
}

}  // namespace
}  // namespace sgdc::properties
