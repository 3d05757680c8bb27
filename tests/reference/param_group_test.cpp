// Parameter groups in the oracle: the bias's outputs are those of the case its group sees,
// every other output that of the case without it; the certified path agrees with the
// exact one on grouped cases bit for bit; bad groups are named.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <limits>
#include <string>

#include "identical.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/reference/oracle.hpp"

namespace sgdc::reference {
namespace {
using identical::expect_identical;
using identical::same;

// A momentum case with coupled decay and a buffer: decay reaches the bias's buffer too.
Case momentum_case() {
  Case c;
  c.n = 3;
  c.d = 2;
  c.k = 2;
  c.kernel = {0.5f, -0.25f, 0.125f, 1.5f};
  c.bias = {0.75f, -1.25f};
  c.x = {1.0f, 2.0f, -0.5f, 0.25f, 3.0f, -1.0f};
  c.y = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f};
  c.lr = 0.0625f;
  c.optimizer.kind = Optimizer::Kind::momentum;
  c.optimizer.momentum = 0.875f;
  c.optimizer.weight_decay = 0.0625f;
  c.momentum_kernel = {0.1f, 0.2f, -0.3f, 0.4f};
  c.momentum_bias = {-0.5f, 0.25f};
  return c;
}

void expect_same_outputs(const Expectation& a, const Expectation& b, Extent extent,
                         const std::string& where) {
  for (const OutputInfo& info : output_table) {
    if (info.extent != extent) continue;
    const auto &x = a[info.output], &y = b[info.output];
    ASSERT_EQ(x.size(), y.size()) << where << " " << info.name;
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_TRUE(same(x[i].rounded, y[i].rounded)) << where << " " << info.name << "[" << i << "]";
      EXPECT_TRUE(same(x[i].bound, y[i].bound)) << where << " " << info.name << "[" << i << "]";
    }
  }
}

TEST(ParamGroup, TheBiasIsSteppedWithItsGroupsHyperparameters) {
  Case grouped = momentum_case();
  grouped.bias_group = ParamGroup{.lr = 0.25f, .weight_decay = 0.0f};
  const Expectation e = expect(grouped);
  Case bias_view = momentum_case();
  bias_view.lr = 0.25f;
  bias_view.optimizer.weight_decay = 0.0f;
  const Expectation as_bias = expect(bias_view);
  const Expectation as_kernel = expect(momentum_case());
  expect_same_outputs(e, as_bias, Extent::bias, "bias");
  expect_same_outputs(e, as_kernel, Extent::kernel, "kernel");
  expect_same_outputs(e, as_kernel, Extent::one, "loss");
  // And the bias really moved by its own lr, without decay: b' = b - lr_b (mu m + g).
  for (int j = 0; j < grouped.k; ++j) {
    const double g = e.grad_bias[j].value;
    const double buffer = 0.875 * double(grouped.momentum_bias[j]) + g;
    EXPECT_NEAR(e.bias[j].value, double(grouped.bias[j]) - 0.25 * buffer, 1e-12) << j;
    EXPECT_NEAR(e.momentum_bias[j].value, buffer, 1e-12) << j;
  }
  // The group changes the bias: a step that ignores it is out of bound.
  bool differs = false;
  for (int j = 0; j < grouped.k; ++j)
    differs = differs || std::abs(e.bias[j].value - as_kernel.bias[j].value) > e.bias[j].bound;
  EXPECT_TRUE(differs);
}

TEST(ParamGroup, ALeftOutValueIsTheKernels) {
  Case grouped = momentum_case();
  grouped.bias_group = ParamGroup{.weight_decay = 0.0f};
  EXPECT_EQ(bias_group_case(grouped).lr, grouped.lr);
  EXPECT_EQ(bias_group_case(grouped).optimizer.weight_decay, 0.0f);
  EXPECT_FALSE(bias_group_case(grouped).bias_group);
  EXPECT_FALSE(kernel_group_case(grouped).bias_group);
  EXPECT_EQ(kernel_group_case(grouped).optimizer.weight_decay, 0.0625f);
}

TEST(ParamGroup, ANonFiniteKernelLrLeavesTheBiasFinite) {
  Case grouped = momentum_case();
  grouped.lr = std::numeric_limits<float>::quiet_NaN();
  grouped.bias_group = ParamGroup{.lr = 0.25f};
  EXPECT_TRUE(has_nonfinite_input(grouped));
  const Expectation e = expect(grouped);
  for (const Expected& x : e.kernel) EXPECT_TRUE(x.must_be_nonfinite);
  for (const Expected& x : e.bias) EXPECT_FALSE(x.must_be_nonfinite);
  Case nan_bias = momentum_case();
  nan_bias.bias_group = ParamGroup{.lr = std::numeric_limits<float>::infinity()};
  EXPECT_TRUE(has_nonfinite_input(nan_bias));
  EXPECT_EQ(*with_nonfinite_as_zero(nan_bias).bias_group->lr, 0.0f);
  const Expectation f = expect(nan_bias);
  for (const Expected& x : f.bias) EXPECT_TRUE(x.must_be_nonfinite);
  for (const Expected& x : f.kernel) EXPECT_FALSE(x.must_be_nonfinite);
}

void expect_invalid(const Case& c, const std::string& field) {
  try {
    c.validate();
    ADD_FAILURE() << "accepted; expected an error naming " << field;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(field + ":", 0), 0u) << e.what();
  }
}

TEST(ParamGroup, BadGroupsAreNamed) {
  Case c = momentum_case();
  c.bias_group = ParamGroup{};
  expect_invalid(c, "bias_group");
  c.bias_group = ParamGroup{.lr = 0x1p-140f};
  expect_invalid(c, "bias_lr");
  c.bias_group = ParamGroup{.weight_decay = 0x1p-130f};
  expect_invalid(c, "bias_weight_decay");
  Case sgd = momentum_case();
  sgd.optimizer = Optimizer{};
  sgd.momentum_kernel.clear();
  sgd.momentum_bias.clear();
  sgd.bias_group = ParamGroup{.weight_decay = 0.5f};
  expect_invalid(sgd, "bias_weight_decay");
  sgd.bias_group = ParamGroup{.lr = 0.5f};
  EXPECT_NO_THROW(sgd.validate());
}

// Grouped cases of every optimizer from the project's generators: the certified path
// and the exact one agree bit for bit.
TEST(ParamGroup, CertifiedAgreesWithExactOnGroupedCases) {
  properties::CaseSpace space;
  space.momentum = properties::MomentumSupport{
      .dampening = true, .nesterov = true, .coupled_decay = true, .decoupled_decay = true};
  space.adam =
      properties::AdamSupport{.coupled_decay = true, .decoupled_decay = true, .eps_root = true};
  space.recipe.bias_group =
      properties::DeclaredGroup{.lr = {{1e-4f, 1.0f}}, .weight_decay = {{0.0f, 0.1f}}};
  int grouped = 0;
  const auto result = rc::check("grouped cases agree", [&] {
    const Case c = *properties::any_case(space, 8);
    RC_ASSERT(c.bias_group.has_value());
    ++grouped;
    expect_identical(expect(c), expect_exact(c), "grouped case");
    RC_ASSERT(!testing::Test::HasFatalFailure());
  });
  EXPECT_TRUE(result);
  EXPECT_GT(grouped, 50);
}

}  // namespace
}  // namespace sgdc::reference
