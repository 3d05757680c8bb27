// A declared recipe: cases drawn and shrunk only inside it, narrowing, validation.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "sgdc/properties/declared_recipe.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/properties/runner.hpp"

namespace sgdc::properties {
namespace {

using Kind = reference::Optimizer::Kind;

void declare(DeclaredRecipe& r, std::string_view name, float lo, float hi) {
  for (std::size_t i = 0; i < reference::hyperparameters.size(); ++i)
    if (name == reference::hyperparameters[i].name) r.ranges[i] = ValueRange{lo, hi};
}

// An AdamW recipe as a user runs it in production, with even batches.
Declaration adamw_declaration() {
  Declaration d;
  d.capabilities.momentum = MomentumSupport{.nesterov = true, .coupled_decay = true};
  d.capabilities.adam = AdamSupport{.decoupled_decay = true};
  d.recipe.optimizers = {Kind::adam};
  declare(d.recipe, "lr", 3e-4f, 3e-4f);
  declare(d.recipe, "b1", 0.9f, 0.9f);
  declare(d.recipe, "b2", 0.95f, 0.95f);
  declare(d.recipe, "weight_decay", 0.0f, 0.1f);
  d.recipe.even_batches = true;
  validate(d.recipe, d.capabilities);
  return d;
}

TEST(DeclaredRecipe, EveryDrawnCaseAndItsShrinksLieInside) {
  const Declaration d = adamw_declaration();
  RunOptions o;
  const CaseSpace space = case_space(d, o);
  int with_decay = 0, uneven_without = 0, shrinks = 0;
  for (const Property& p : all_properties()) {
    for (int i = 0; i < 60; ++i) {
      const rc::Shrinkable<reference::Case> s = draw(p, space, 5, i);
      const reference::Case& c = s.value();
      ASSERT_TRUE(d.recipe.admits(c)) << p.name << " case " << i;
      EXPECT_EQ(c.optimizer.kind, Kind::adam);
      EXPECT_EQ(c.lr, 3e-4f);
      EXPECT_EQ(c.optimizer.b1, 0.9f);
      EXPECT_EQ(c.optimizer.b2, 0.95f);
      EXPECT_EQ(c.n % c.num_shards, 0) << p.name << " case " << i;
      EXPECT_NO_THROW(c.validate());
      if (c.optimizer.weight_decay != 0.0f) {
        ++with_decay;
        EXPECT_EQ(c.optimizer.decay, reference::Optimizer::Decay::decoupled)
            << "the only convention declared";
      }
      auto seq = s.shrinks();
      for (int k = 0; k < 40; ++k) {
        const auto next = seq.next();
        if (!next) break;
        ++shrinks;
        ASSERT_TRUE(d.recipe.admits(next->value())) << p.name << " case " << i << " shrink " << k;
      }
    }
  }
  EXPECT_GT(with_decay, 50) << "the declared range's nonzero values are drawn";
  EXPECT_GT(shrinks, 1000) << "shrinking goes on inside the recipe";
  // Without the recipe the same space draws batches that do not split evenly.
  Declaration undeclared = d;
  undeclared.recipe = {};
  const CaseSpace wide = case_space(undeclared, o);
  for (int i = 0; i < 100; ++i) {
    const reference::Case c = draw(find_property("accuracy"), wide, 5, i).value();
    uneven_without += c.n % c.num_shards != 0;
  }
  EXPECT_GT(uneven_without, 10);
}

TEST(DeclaredRecipe, ForcedShardCountKeepsBatchesEven) {
  Declaration d;
  d.recipe.even_batches = true;
  RunOptions o;
  o.num_shards = 3;
  const CaseSpace space = case_space(d, o);
  for (int i = 0; i < 100; ++i) {
    const auto s = draw(find_property("accuracy"), space, 2, i);
    EXPECT_EQ(s.value().n % 3, 0) << i;
    auto seq = s.shrinks();
    for (int k = 0; k < 30; ++k) {
      const auto next = seq.next();
      if (!next) break;
      EXPECT_EQ(next->value().n % 3, 0) << i << " shrink " << k;
    }
  }
}

TEST(DeclaredRecipe, MaxShardsBoundsTheDrawnShardCounts) {
  Declaration d;
  d.capabilities.max_shards = 4;
  const CaseSpace space = case_space(d, RunOptions{});
  int four = 0;
  for (int i = 0; i < 200; ++i) {
    const int s = draw(find_property("placement"), space, 1, i).value().num_shards;
    EXPECT_LE(s, 4);
    four += s == 4;
  }
  EXPECT_GT(four, 0);
}

TEST(DeclaredRecipe, ZeroLrOnlyWhereTheRecipeAllowsIt) {
  const Property& zero_lr = find_property("zero_lr");
  Declaration d;
  EXPECT_TRUE(zero_lr.applies(d));
  declare(d.recipe, "lr", 0.0f, 0.1f);
  EXPECT_TRUE(zero_lr.applies(d));
  declare(d.recipe, "lr", 1e-3f, 0.1f);
  EXPECT_FALSE(zero_lr.applies(d));
}

TEST(DeclaredRecipe, NarrowIntersects) {
  DeclaredRecipe declared, asked;
  declared.optimizers = {Kind::sgd, Kind::adam};
  declare(declared, "lr", 1e-4f, 1e-2f);
  asked.optimizers = {Kind::adam};
  declare(asked, "lr", 3e-4f, 3e-4f);
  declare(asked, "b1", 0.9f, 0.9f);
  asked.even_batches = true;
  const DeclaredRecipe both = narrow(declared, asked);
  EXPECT_EQ(both.optimizers, std::vector<Kind>{Kind::adam});
  EXPECT_EQ(both.range("lr"), (ValueRange{3e-4f, 3e-4f}));
  EXPECT_EQ(both.range("b1"), (ValueRange{0.9f, 0.9f}));
  EXPECT_TRUE(both.even_batches);
  declare(asked, "lr", 0.5f, 1.0f);
  try {
    narrow(declared, asked);
    ADD_FAILURE() << "an empty intersection was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("recipe.lr: [0.5, 1] lies outside the declared"),
              std::string::npos)
        << e.what();
  }
  asked = {};
  asked.optimizers = {Kind::momentum};
  EXPECT_THROW(narrow(declared, asked), std::invalid_argument);
}

// A bias group declared: every drawn case and shrink carries it, inside its ranges, the
// weight decay only where the optimizer decays; an undeclared recipe draws none.
TEST(DeclaredRecipe, TheBiasGroupIsDrawnAndShrunkInside) {
  Declaration d;
  d.capabilities.momentum = MomentumSupport{.coupled_decay = true, .decoupled_decay = true};
  d.capabilities.adam = AdamSupport{.coupled_decay = true, .decoupled_decay = true};
  d.recipe.bias_group = DeclaredGroup{.lr = {{1e-3f, 1e-1f}}, .weight_decay = {{0.0f, 0.0f}}};
  validate(d.recipe, d.capabilities);
  const CaseSpace space = case_space(d, RunOptions{});
  int sgd = 0, decaying = 0, shrinks = 0;
  for (int i = 0; i < 200; ++i) {
    const auto s = draw(find_property("accuracy"), space, 5, i);
    const reference::Case& c = s.value();
    ASSERT_TRUE(c.bias_group) << i;
    EXPECT_NO_THROW(c.validate());
    ASSERT_TRUE(d.recipe.admits(c)) << i;
    EXPECT_TRUE(c.bias_group->lr && *c.bias_group->lr >= 1e-3f && *c.bias_group->lr <= 1e-1f);
    if (c.optimizer.kind == Kind::sgd) {
      ++sgd;
      EXPECT_FALSE(c.bias_group->weight_decay) << "plain SGD does not decay";
    } else {
      ++decaying;
      EXPECT_EQ(c.bias_group->weight_decay, 0.0f);
    }
    auto seq = s.shrinks();
    for (int k = 0; k < 30; ++k) {
      const auto next = seq.next();
      if (!next) break;
      ++shrinks;
      ASSERT_TRUE(d.recipe.admits(next->value())) << i << " shrink " << k;
    }
  }
  EXPECT_GT(sgd, 20);
  EXPECT_GT(decaying, 20);
  EXPECT_GT(shrinks, 1000);
  reference::Case c = draw(find_property("accuracy"), space, 5, 0).value();
  c.bias_group.reset();
  EXPECT_FALSE(d.recipe.admits(c)) << "a case without the declared group";
  const CaseSpace undeclared = case_space(Declaration{}, RunOptions{});
  for (int i = 0; i < 50; ++i)
    EXPECT_FALSE(draw(find_property("accuracy"), undeclared, 5, i).value().bias_group);
}

TEST(DeclaredRecipe, BadGroupsAreNamedAndNarrowed) {
  Capabilities caps;
  caps.momentum = MomentumSupport{.coupled_decay = true};
  DeclaredRecipe r;
  r.bias_group = DeclaredGroup{};
  EXPECT_THROW(
      {
        try {
          validate(r, caps);
        } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(), "recipe.bias_group: declares neither lr nor weight_decay");
          throw;
        }
      },
      std::invalid_argument);
  r.bias_group = DeclaredGroup{.weight_decay = {{-1.0f, 0.0f}}};
  try {
    validate(r, caps);
    ADD_FAILURE() << "a negative weight decay was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("recipe.bias_group.weight_decay: ", 0), 0u) << e.what();
  }
  DeclaredRecipe declared, asked;
  declared.bias_group = DeclaredGroup{.weight_decay = {{0.0f, 0.1f}}};
  asked.bias_group = DeclaredGroup{.lr = {{0.5f, 0.5f}}, .weight_decay = {{0.0f, 0.0f}}};
  const DeclaredRecipe both = narrow(declared, asked);
  EXPECT_EQ(both.bias_group, (DeclaredGroup{.lr = {{0.5f, 0.5f}}, .weight_decay = {{0.0f, 0.0f}}}));
  asked.bias_group = DeclaredGroup{.weight_decay = {{0.25f, 0.5f}}};
  try {
    narrow(declared, asked);
    ADD_FAILURE() << "an empty intersection was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("recipe.bias_group.weight_decay: [0.25, 0.5] lies", 0),
              0u)
        << e.what();
  }
}

// A case outside the declaration is named (a fixture of it is not applicable); every
// case the run draws lies inside.
TEST(DeclaredRecipe, OutsideTheDeclarationIsNamed) {
  reference::Case c;
  c.optimizer.kind = Kind::momentum;
  c.optimizer.momentum = 0.5f;
  c.optimizer.dampening = 0.25f;
  Declaration d;
  EXPECT_EQ(outside_declaration(c, d), "a momentum step; the implementation declares no momentum");
  d.capabilities.momentum = MomentumSupport{};
  EXPECT_EQ(outside_declaration(c, d),
            "a dampened momentum step; momentum.dampening is not declared");
  d.capabilities.momentum->dampening = true;
  EXPECT_EQ(outside_declaration(c, d), std::nullopt);
  c.bias_group = reference::ParamGroup{.weight_decay = 0.0f};
  EXPECT_EQ(outside_declaration(c, d),
            "a bias in a parameter group of its own; the recipe declares no bias_group");
  d.recipe.bias_group = DeclaredGroup{.weight_decay = {{0.0f, 0.0f}}};
  EXPECT_EQ(outside_declaration(c, d), std::nullopt);
  c.bias_group->weight_decay = 0.5f;
  EXPECT_EQ(outside_declaration(c, d),
            "weight decay coupled; momentum.weight_decay does not declare it");
  d.capabilities.momentum->coupled_decay = true;
  EXPECT_EQ(outside_declaration(c, d), "outside the declared recipe");
  Declaration adamw = adamw_declaration();
  const CaseSpace space = case_space(adamw, RunOptions{});
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(outside_declaration(draw(find_property("accuracy"), space, 5, i).value(), adamw),
              std::nullopt)
        << i;
}

}  // namespace
}  // namespace sgdc::properties
