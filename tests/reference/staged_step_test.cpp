// Mixed precision by stage in the oracle (docs/spec/step.md, "Mixed precision by stage";
// docs/error-model.md, section 18): rounding to a narrower format checked against an
// independent bit-level rounding, a worked case by hand, soundness and tightness of the
// staged intervals under several evaluation strategies, the nearest wrong stage
// rejected, and bad declarations named.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "identical.hpp"
#include "sgdc/properties/generators.hpp"
#include "sgdc/reference/oracle.hpp"
#include "staged_step.hpp"

namespace sgdc::reference {
namespace {

using formats::bfloat16;
using formats::float16;
using formats::float32;

// bfloat16 rounding of a finite float32 by its bits: the upper half, rounded to nearest
// even on the lower half (what torch's float -> bfloat16 cast does).
float bf16_by_bits(float v) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float out = 0.0f;
  std::memcpy(&out, &u, sizeof out);
  return out;
}

TEST(Stages, RoundToFormatAgreesWithBitRounding) {
  rc::Random random(5);
  std::uint64_t checked = 0;
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t bits = static_cast<std::uint32_t>(random.next());
    float v = 0.0f;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v)) continue;
    const float by_bits = bf16_by_bits(v);
    const double ours = round_to_format(v, bfloat16);
    // The bit rounding carries into the exponent past the largest value: +-inf as ours.
    ASSERT_EQ(ours, static_cast<double>(by_bits)) << v;
    ++checked;
  }
  EXPECT_GT(checked, 190000u);
  // Ties to even, subnormals, overflow; float16's range.
  EXPECT_EQ(round_to_format(1.0 + 0x1p-8, bfloat16), 1.0);
  EXPECT_EQ(round_to_format(1.0 + 3 * 0x1p-8, bfloat16), 1.0 + 0x1p-6);
  EXPECT_EQ(round_to_format(0x1p-134, bfloat16), 0.0);
  EXPECT_EQ(round_to_format(3 * 0x1p-135, bfloat16), 0x1p-133);
  EXPECT_EQ(round_to_format(3.39e38, bfloat16), 0x1.fep127);
  EXPECT_TRUE(std::isinf(round_to_format(3.4e38, bfloat16)));
  EXPECT_EQ(round_to_format(65504.0, float16), 65504.0);
  EXPECT_TRUE(std::isinf(round_to_format(65520.0, float16)));
  EXPECT_EQ(round_to_format(0x1p-25, float16), 0.0);
  EXPECT_EQ(round_to_format(0x1.8p-25, float16), 0x1p-24);
  EXPECT_EQ(round_to_format(-0.0, bfloat16), -0.0);
}

// Every format's ties, and their neighbours a double ulp either side, at every exponent
// from below half the smallest subnormal to past the largest finite value, against the
// rounding by scaling: v 2^(p - e) to an integer by nearbyint (ties to even), then back.
// round_to_format rounds most of these in the bits; the last place kept at a subnormal's
// implicit bit (1.5 2^-133 in bfloat16) is where the bits alone would read the exponent.
TEST(Stages, RoundToFormatTiesAtEveryExponent) {
  auto by_scaling = [](double v, const Format& f) {
    int e = 0;
    std::frexp(v, &e);
    const int exponent = std::max(e - 1, f.min_exponent);
    const double r = std::ldexp(std::nearbyint(std::ldexp(v, f.fraction_bits - exponent)),
                                exponent - f.fraction_bits);
    return std::abs(r) > f.max_finite() ? std::copysign(INFINITY, v) : r;
  };
  std::uint64_t checked = 0;
  for (const Format& f : {bfloat16, float16, formats::tf32, float32}) {
    for (int e = f.min_exponent - f.fraction_bits - 3; e <= f.max_exponent + 1; ++e) {
      const double ulp = std::ldexp(1.0, std::max(e, f.min_exponent) - f.fraction_bits);
      for (const double m : {0.5, 1.5, 2.5, 3.5}) {
        // Ties at the bottom of the binade and at its top (the carry into the next).
        for (const double at : {std::ldexp(1.0, e) + m * ulp, std::ldexp(2.0, e) - m * ulp}) {
          if (!(at > 0.0)) continue;
          for (const double v : {at, std::nextafter(at, 0.0), std::nextafter(at, INFINITY)}) {
            for (const double sv : {v, -v}) {
              ASSERT_EQ(round_to_format(sv, f), by_scaling(sv, f))
                  << std::hexfloat << sv << " in " << to_string(f);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000u);
  EXPECT_EQ(round_to_format(0x1.8p-133, bfloat16), 0x1p-132);
  EXPECT_EQ(round_to_format(-0x1.8p-133, bfloat16), -0x1p-132);
  EXPECT_EQ(round_to_format(0x1.8p-134, bfloat16), 0x1p-133);
}

// n = d = k = 1, x = 1, W = 1 + 2^-10, b = y = 0, lr = 1/2: the compute copy reads W as
// 1, so out = 1, r = 1, the output's gradient 2, gW = gb = 2, W' = W - 1 = 2^-10 and
// b' = -1, where the float32 step has gW = 2 + 2^-9 and W' = 0.
TEST(Stages, ByHand) {
  Case c;
  c.n = c.d = c.k = 1;
  c.x = {1.0f};
  c.kernel = {1.0f + 0x1p-10f};
  c.bias = {0.0f};
  c.y = {0.0f};
  c.lr = 0.5f;
  ErrorModel model;
  model.stages = {.param = bfloat16};
  const Expectation e = expect(c, model);
  // Every rounding to bfloat16 decided: each value exact up to the double centre's own
  // rounding, within a few float32 roundings (the reduction's divide factor) of it.
  auto near = [](const Expected& x, double v) {
    EXPECT_NEAR(x.value, v, 0x1p-50 * std::abs(v));
    EXPECT_LE(x.bound, 8 * 0x1p-24 * std::abs(v));
  };
  near(e.loss[0], 1.0);
  near(e.grad_kernel[0], 2.0);
  near(e.grad_bias[0], 2.0);
  EXPECT_NEAR(e.kernel[0].value, 0x1p-10, 0x1p-60);
  EXPECT_LE(e.kernel[0].bound, 8 * 0x1p-24);  // lr times the gradient's, the update's
  near(e.bias[0], -1.0);
  const Expectation plain = expect(c, ErrorModel{});
  EXPECT_EQ(plain.grad_kernel[0].value, 2.0 + 0x1p-9);
  EXPECT_EQ(plain.kernel[0].value, 0.0);
  // Two ranks, one row each: r = 1.5 and 2^-8, each rank's gradient (2 r / 2) exact in
  // bfloat16; their sum 1.5 + 2^-8 is exact in float32, and a tie in bfloat16, which
  // rounds it to 1.5.
  c.n = 2;
  c.num_shards = 2;
  c.x = {1.0f, 1.0f};
  c.kernel = {1.0f};
  c.y = {-0.5f, 1.0f - 0x1p-8f};
  const Expectation f32 = expect(c, model);
  near(f32.grad_kernel[0], 1.5 + 0x1p-8);
  const float bf16_sum = 1.5f;  // what a bfloat16 reduction returns
  EXPECT_GT(std::abs(bf16_sum - f32.grad_kernel[0].value), f32.grad_kernel[0].bound);
  model.stages.reduce = bfloat16;
  const Expectation bf16 = expect(c, model);
  EXPECT_LE(std::abs(bf16_sum - bf16.grad_kernel[0].value), bf16.grad_kernel[0].bound);
}

// One way to compute the staged step in float, as an implementation may.
struct Strategy {
  const char* name;
  bool reversed = false;        // every accumulation right to left
  bool wide = false;            // accumulations in double, rounded to float once
  bool bias_last = false;       // the bias added after the products
  bool scale_in_parts = false;  // the output's gradient as (2 r) (1 / (N K)), not r (2 / (N K))
};

double round_in(double v, const Format& f) {
  return f == float32 ? static_cast<double>(static_cast<float>(v))
                      : round_to_format(static_cast<float>(v), f);
}

struct Staged {
  float loss;
  std::vector<float> grad_kernel, grad_bias;
};

// The staged step of `c` in stages `s`, as `how` evaluates it; each rank's rows as
// tensor_split gives them.
Staged simulate(const Case& c, const Stages& s, const Strategy& how) {
  const int n = c.n, d = c.d, k = c.k;
  auto cast = [&](const std::vector<float>& v) {
    std::vector<float> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      out[i] = static_cast<float>(round_to_format(v[i], s.param));
    return out;
  };
  const std::vector<float> x = cast(c.x), w = cast(c.kernel), b = cast(c.bias);
  // A sum of `terms`, in float or in double, in order or reversed.
  auto sum = [&](std::vector<float> terms) {
    if (how.reversed) std::reverse(terms.begin(), terms.end());
    if (how.wide) {
      double t = 0.0;
      for (float v : terms) t += v;
      return static_cast<float>(t);
    }
    float t = 0.0f;
    for (float v : terms) t += v;
    return t;
  };
  const float count = static_cast<float>(n) * static_cast<float>(k);
  std::vector<float> gout(static_cast<std::size_t>(n) * k), squares;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      std::vector<float> terms;
      if (!how.bias_last) terms.push_back(b[j]);
      for (int l = 0; l < d; ++l) terms.push_back(x[i * d + l] * w[l * k + j]);
      if (how.bias_last) terms.push_back(b[j]);
      const float out = static_cast<float>(round_in(sum(terms), s.param));
      const float r = out - c.y[i * k + j];
      squares.push_back(r * r);
      const float g = how.scale_in_parts ? (2.0f * r) * (1.0f / count) : r * (2.0f / count);
      gout[i * k + j] = static_cast<float>(round_in(g, s.param));
    }
  }
  Staged out;
  out.loss = sum(squares) / count;
  const int shards = std::max(1, c.num_shards);
  auto reduce = [&](std::vector<float> parts) {
    if (how.reversed) std::reverse(parts.begin(), parts.end());
    double total = round_in(parts[0], s.reduce);
    for (std::size_t i = 1; i < parts.size(); ++i)
      total = round_in(total + round_in(parts[i], s.reduce), s.reduce);
    return static_cast<float>(total);
  };
  auto gradient = [&](int j, const std::function<float(int)>& x_at) {
    std::vector<float> parts;
    for (int r = 0; r < shards; ++r) {
      const auto [first, last] = split_part(n, shards, r);
      const int begin = static_cast<int>(first), end = static_cast<int>(last);
      std::vector<float> terms;
      for (int i = begin; i < end; ++i) terms.push_back(x_at(i) * gout[i * k + j]);
      parts.push_back(static_cast<float>(round_in(sum(terms), s.param)));
    }
    return reduce(parts);
  };
  for (int l = 0; l < d; ++l)
    for (int j = 0; j < k; ++j)
      out.grad_kernel.push_back(gradient(j, [&](int i) { return x[i * d + l]; }));
  for (int j = 0; j < k; ++j) out.grad_bias.push_back(gradient(j, [](int) { return 1.0f; }));
  return out;
}

const Strategy strategies[] = {
    {"sequential"},
    {"reversed, bias last", true, false, true},
    {"double accumulation", false, true},
    {"(2 r)(1 / (N K))", false, false, false, true},
};

// The worst err/radius per case over the loss and every gradient element: above 1 is
// outside the oracle's interval.
double worst_ratio(const Staged& got, const Expectation& e) {
  double worst = 0.0;
  auto check = [&](float v, const Expected& x) {
    if (x.may_overflow) return;
    const double err = std::abs(double(v) - x.value);
    const double allowed = x.bound + 0x1p-52 * std::abs(x.value);
    worst = std::max(worst, allowed > 0.0 ? err / allowed : (err > 0.0 ? INFINITY : 0.0));
  };
  check(got.loss, e.loss[0]);
  for (std::size_t i = 0; i < got.grad_kernel.size(); ++i)
    check(got.grad_kernel[i], e.grad_kernel[i]);
  for (std::size_t i = 0; i < got.grad_bias.size(); ++i) check(got.grad_bias[i], e.grad_bias[i]);
  return worst;
}

// Soundness: every strategy inside the declared stages' intervals. Tightness: the nearest
// wrong stages (a bfloat16 reduction, a float32 compute copy) outside them on most cases
// that can show it.
TEST(Stages, SoundForEveryStrategyAndTheNearestWrongStagesRejected) {
  const Stages f32_reduce{.param = bfloat16}, bf16_reduce{.param = bfloat16, .reduce = bfloat16};
  for (const properties::Spread spread : {properties::Spread::unit, properties::Spread::wide}) {
    properties::CaseSpace space;
    space.max_shards = 4;
    const rc::Gen<Case> gen = properties::cases(space, {.spread = spread, .max_dim = 10});
    rc::Random random(23);
    for (const Stages& declared : {f32_reduce, bf16_reduce}) {
      ErrorModel model;
      model.stages = declared;
      std::vector<double> ratios;
      int showable = 0, rejected_reduce = 0, rejected_f32 = 0;
      for (int i = 0; i < 2000; ++i) {
        rc::Random r = random.split();
        const Case c = gen(r, i % 101).value();
        if (has_nonfinite_input(c)) continue;
        const Expectation e = expect(c, model);
        double worst = 0.0;
        for (const Strategy& how : strategies) {
          const double ratio = worst_ratio(simulate(c, declared, how), e);
          ASSERT_LE(ratio, 1.0) << how.name << " n=" << c.n << " d=" << c.d << " k=" << c.k
                                << " S=" << c.num_shards;
          worst = std::max(worst, ratio);
        }
        ratios.push_back(worst);
        if (declared == f32_reduce && c.num_shards > 1 && c.n > 1) {
          ++showable;
          rejected_reduce += worst_ratio(simulate(c, bf16_reduce, strategies[0]), e) > 1.0;
          rejected_f32 += worst_ratio(simulate(c, Stages{}, strategies[0]), e) > 1.0;
        }
      }
      std::sort(ratios.begin(), ratios.end());
      std::printf("  %s, reduce %s: worst err/radius per case median %.3g max %.3g over %zu\n",
                  spread == properties::Spread::unit ? "unit normal" : "1e-3..1e3",
                  to_string(declared.reduce).c_str(), ratios[ratios.size() / 2], ratios.back(),
                  ratios.size());
      EXPECT_GT(ratios.back(), 0.5);
      if (declared == f32_reduce) {
        std::printf(
            "    of %d cases with 2+ ranks: a bfloat16 reduction rejected on %d, a "
            "float32 compute copy on %d\n",
            showable, rejected_reduce, rejected_f32);
        EXPECT_GT(rejected_reduce, showable / 2);
        EXPECT_GT(rejected_f32, showable * 9 / 10);
      }
    }
  }
}

// The optimizer from the staged gradients' centres: the certified double words
// (expect) and the exact rationals (expect_exact) give the same bits and bounds, for
// every optimizer, clipped or not, master weights float32 or bfloat16.
// The residual out - y (S2) passes float32's range where out and y do not: b = -2^120
// and y = 2^128 - 2^120 make r = -2^128, +-inf in float32, and the kernel's gradient
// x^T g = 0 inf is NaN. Its column's gradients and the loss may overflow; with
// y = 2^126 the residual is within range and the gradients may not (the loss, r^2, may).
TEST(Stages, AResidualPastTheRangeMayOverflow) {
  Case c;
  c.n = 2;
  c.d = 1;
  c.k = 2;
  c.x = {0.0f, 0.0f};
  c.kernel = {0.0f, 0.0f};
  c.bias = {0.0f, -0x1p120f};
  c.y = {0.0f, 0x1.fep127f, -1.0f, 0.0f};
  c.lr = 0.0f;
  ErrorModel model;
  model.stages = {.param = bfloat16};
  const Expectation e = expect(c, model);
  EXPECT_TRUE(e.loss[0].may_overflow);
  EXPECT_TRUE(e.grad_kernel[1].may_overflow);
  EXPECT_TRUE(e.grad_bias[1].may_overflow);
  EXPECT_FALSE(e.grad_kernel[0].may_overflow);  // column 0's residuals are 0 and 1
  Case within = c;
  within.y[1] = 0x1p126f;
  const Expectation f = expect(within, model);
  EXPECT_FALSE(f.grad_kernel[1].may_overflow);
  EXPECT_FALSE(f.grad_bias[1].may_overflow);
}

TEST(Stages, CertifiedOptimizerAgreesWithExact) {
  properties::CaseSpace space;
  space.max_shards = 4;
  space.momentum = properties::MomentumSupport{
      .dampening = true, .nesterov = true, .coupled_decay = true, .decoupled_decay = true};
  space.adam =
      properties::AdamSupport{.coupled_decay = true, .decoupled_decay = true, .eps_root = true};
  properties::CaseSpace clipped = space;
  clipped.recipe.clipping = properties::DeclaredClipping{.max_norm = {1e-7f, 1e4f}, .eps = 1e-6f};
  properties::CaseSpace adagrad;
  adagrad.max_shards = 4;
  adagrad.adagrad = properties::AdagradSupport{.coupled_decay = true, .eps_root = true};
  adagrad.recipe.optimizers = {Optimizer::Kind::adagrad};
  rc::Random random(31);
  int cases = 0;
  for (const properties::CaseSpace* sp : {&space, &clipped, &adagrad}) {
    const rc::Gen<Case> gen =
        properties::cases(*sp, {.spread = properties::Spread::unit, .max_dim = 8});
    for (const Stages& stages :
         {Stages{.param = bfloat16}, Stages{.param = bfloat16, .master = bfloat16}}) {
      ErrorModel model;
      model.stages = stages;
      for (int i = 0; i < 150; ++i) {
        rc::Random r = random.split();
        const Case c = gen(r, i % 101).value();
        if (has_nonfinite_input(c)) continue;
        const std::string where = "case " + std::to_string(i) + " n=" + std::to_string(c.n) +
                                  " d=" + std::to_string(c.d) + " k=" + std::to_string(c.k);
        ASSERT_NO_FATAL_FAILURE(
            identical::expect_identical(expect(c, model), expect_exact(c, model), where));
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 800);
}

TEST(Stages, BadDeclarationsAreNamed) {
  EXPECT_EQ(stages_problem(Stages{}), "");
  EXPECT_EQ(stages_problem(Stages{.param = bfloat16}), "");
  EXPECT_NE(stages_problem(Stages{.reduce = bfloat16}).find("param_dtype float32"),
            std::string::npos);
  EXPECT_NE(stages_problem(Stages{.param = Format{30, -126, 127}}).find("param_dtype: "),
            std::string::npos);
  Case c;
  c.n = c.d = c.k = 1;
  c.x = c.kernel = c.bias = c.y = {1.0f};
  c.lr = 0.1f;
  ErrorModel ftz;
  ftz.stages.param = bfloat16;
  ftz.subnormals = Subnormals::flush_to_zero;
  EXPECT_THROW(expect(c, ftz), std::invalid_argument);
  ErrorModel both;
  both.stages.param = bfloat16;
  both.format = formats::tf32;
  try {
    expect(c, both);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("declare one"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sgdc::reference
