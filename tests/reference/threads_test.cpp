// The oracle splits a large case's loops over threads (threads.hpp): certified_step()
// and expect(), with precision stages too, give the same bits on 1 thread and on
// several, on cases above the split threshold (N D K >= 2^17), and the certified path
// still agrees with the exact one there, through its second, exact-tracking pass too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "identical.hpp"
#include "sgdc/reference/certified_step.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/threads.hpp"

namespace sgdc::reference {
namespace {
using identical::expect_identical;

enum class Values {
  normal,    // N(0, 1)
  wide,      // N(0, 1) times 2^-60 .. 2^60
  specials,  // normal with NaN, infinities and -0 sprinkled in
  // Small integers, bias 2^53 and targets -1: residuals 2^53 + 1 + sum x W, whose sums
  // fall on double midpoints, which only the exact-tracking pass certifies.
  midpoints,
};

Case make_case(int n, int d, int k, Values values, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-4, 4), exponent(-60, 60), pick(0, 1999);
  auto draw = [&](std::size_t count) {
    std::vector<float> v(count);
    for (float& f : v) {
      switch (values) {
        case Values::normal:
          f = normal(rng);
          break;
        case Values::wide:
          f = std::ldexp(normal(rng), exponent(rng));
          break;
        case Values::specials: {
          constexpr float specials[] = {NAN, INFINITY, -INFINITY, -0.0f};
          const int p = pick(rng);
          f = p < 4 ? specials[p] : normal(rng);
          break;
        }
        case Values::midpoints:
          f = static_cast<float>(small(rng));
          break;
      }
    }
    return v;
  };
  Case c;
  c.n = n;
  c.d = d;
  c.k = k;
  c.kernel = draw(static_cast<std::size_t>(d) * k);
  c.bias = draw(static_cast<std::size_t>(k));
  c.x = draw(static_cast<std::size_t>(n) * d);
  c.y = draw(static_cast<std::size_t>(n) * k);
  c.lr = 0.01f;
  if (values == Values::midpoints) {
    for (float& b : c.bias) b = 0x1p53f;
    for (float& y : c.y) y = -1.0f;
    c.lr = 0x1p-3f;
  }
  return c;
}

struct Shape {
  int n, d, k;
  Values values;
  unsigned seed;
};

// Above the threshold: one column tile; three, the last one partial; poisoned outputs;
// the second pass; a single row.
constexpr Shape shapes[] = {{16, 96, 100, Values::normal, 1},
                            {3, 70, 1100, Values::wide, 2},
                            {16, 80, 130, Values::specials, 3},
                            {16, 64, 160, Values::midpoints, 4},
                            {1, 200, 700, Values::normal, 5}};

class OracleThreads : public ::testing::Test {
 protected:
  void TearDown() override { set_oracle_threads(0); }
};

TEST_F(OracleThreads, SameBitsOnAnyThreadCount) {
  constexpr const char* names[] = {"normal", "wide", "specials", "midpoints"};
  const ErrorModel ftz{.subnormals = Subnormals::flush_to_zero};
  for (const Shape& s : shapes) {
    const Case c = make_case(s.n, s.d, s.k, s.values, s.seed);
    const std::string shape = std::to_string(c.n) + "x" + std::to_string(c.d) + "x" +
                              std::to_string(c.k) + " " + names[static_cast<int>(s.values)];
    ASSERT_GE(static_cast<double>(c.n) * c.d * c.k, 0x1p17) << shape << ": below the threshold";
    const bool finite = !has_nonfinite_input(c);
    set_oracle_threads(1);
    const Expectation serial = expect(c), serial_ftz = expect(c, ftz);
    const RoundedStep serial_step = finite ? certified_step(c) : RoundedStep{};
    for (const int threads : {2, 5}) {
      set_oracle_threads(threads);
      const std::string where = shape + " on " + std::to_string(threads) + " threads";
      ASSERT_NO_FATAL_FAILURE(expect_identical(expect(c), serial, where));
      ASSERT_NO_FATAL_FAILURE(expect_identical(expect(c, ftz), serial_ftz, where + " (ftz)"));
      if (finite) ASSERT_NO_FATAL_FAILURE(expect_identical(certified_step(c), serial_step, where));
    }
  }
}

// Mixed precision by stage (staged_step.cpp): the outputs and the ranks' sums a tile of
// columns at a time, on every thread; the same bits as on one, with 3 ranks' uneven rows
// (a single row: ranks without rows), a bfloat16 or a float32 reduction.
TEST_F(OracleThreads, SameBitsOnAnyThreadCountWithStages) {
  for (const Shape& s : shapes) {
    Case c = make_case(s.n, s.d, s.k, s.values, s.seed);
    c.num_shards = 3;
    for (const Format& reduce : {formats::bfloat16, formats::float32}) {
      ErrorModel model;
      model.stages.param = formats::bfloat16;
      model.stages.reduce = reduce;
      const std::string shape = std::to_string(c.n) + "x" + std::to_string(c.d) + "x" +
                                std::to_string(c.k) + " seed " + std::to_string(s.seed) +
                                ", reduction " + to_string(reduce);
      set_oracle_threads(1);
      const Expectation serial = expect(c, model);
      for (const int threads : {2, 5}) {
        set_oracle_threads(threads);
        ASSERT_NO_FATAL_FAILURE(expect_identical(
            expect(c, model), serial, shape + " on " + std::to_string(threads) + " threads"));
      }
    }
  }
}

// Adam's elements are certified by its double words and, where those do not decide, by
// MPFR intervals, from several threads at once: the same bits as on one. AdamW with
// carried moments, a second moment of zero in a quarter of the elements (eps dominates),
// and the kernel's first row with a zero gradient and zero moments (v' = 0: a root the
// double words leave to the intervals).
TEST_F(OracleThreads, SameBitsOnAnyThreadCountWithAdam) {
  Case c = make_case(16, 96, 100, Values::normal, 6);
  c.optimizer.kind = Optimizer::Kind::adam;
  c.optimizer.b1 = 0.9f;
  c.optimizer.b2 = 0.999f;
  c.optimizer.eps = 1e-8f;
  c.optimizer.weight_decay = 0.01f;
  c.optimizer.decay = Optimizer::Decay::decoupled;
  c.step = 10;
  const Case m = make_case(16, 96, 100, Values::normal, 7);
  c.momentum_kernel = m.kernel;
  c.momentum_bias = m.bias;
  c.second_moment_kernel = m.kernel;
  c.second_moment_bias = m.bias;
  for (auto* v : {&c.second_moment_kernel, &c.second_moment_bias})
    for (std::size_t i = 0; i < v->size(); ++i) (*v)[i] = i % 4 == 0 ? 0.0f : (*v)[i] * (*v)[i];
  for (int i = 0; i < c.n; ++i) c.x[static_cast<std::size_t>(i) * c.d] = 0.0f;
  for (int j = 0; j < c.k; ++j) c.momentum_kernel[j] = c.second_moment_kernel[j] = 0.0f;
  set_oracle_threads(1);
  const Expectation serial = expect(c);
  const CertificationCounters before = certification_counters();
  const RoundedStep serial_step = certified_step(c);
  EXPECT_GE(certification_counters().adam_by_mpfr - before.adam_by_mpfr,
            static_cast<std::uint64_t>(c.k))
      << "no element went to the MPFR intervals: the test checks less than it says";
  for (const int threads : {2, 5}) {
    set_oracle_threads(threads);
    const std::string where = "AdamW on " + std::to_string(threads) + " threads";
    ASSERT_NO_FATAL_FAILURE(expect_identical(expect(c), serial, where));
    ASSERT_NO_FATAL_FAILURE(expect_identical(certified_step(c), serial_step, where));
  }
}

TEST_F(OracleThreads, SecondPassAgreesWithExactPath) {
  const Case c = make_case(16, 64, 160, Values::midpoints, 4);
  set_oracle_threads(3);
  const CertificationCounters before = certification_counters();
  const Expectation fast = expect(c);
  EXPECT_EQ(certification_counters().refined_cases, before.refined_cases + 1)
      << "the case no longer needs the second pass: it tests less than it says";
  ASSERT_NO_FATAL_FAILURE(expect_identical(fast, expect_exact(c), "16x64x160 midpoints"));
}

TEST_F(OracleThreads, CountFromSetterThenDefault) {
  set_oracle_threads(5);
  EXPECT_EQ(oracle_threads(), 5);
  set_oracle_threads(0);
  EXPECT_GE(oracle_threads(), 1);
}

}  // namespace
}  // namespace sgdc::reference
