#pragma once
// Bit-for-bit comparison of the oracle's results, for tests: every field of every
// element, bits compared (so -0 differs from +0, and NaN payloads count).

#include <gtest/gtest.h>

#include <string>

#include "sgdc/reference/expectation.hpp"
#include "sgdc/reference/rounded_step.hpp"
#include "support/float_bits.hpp"

namespace sgdc::reference::identical {

inline bool same(double a, double b) {
  return test_support::double_bits(a) == test_support::double_bits(b);
}
inline bool same(float a, float b) {
  return test_support::float_bits(a) == test_support::float_bits(b);
}

// Fails the test at the first field that differs, naming it; use under
// ASSERT_NO_FATAL_FAILURE.
inline void expect_identical(const Expectation& a, const Expectation& b, const std::string& where) {
  for (const Output o : all_outputs) {
    const auto &f = a[o], &e = b[o];
    ASSERT_EQ(f.size(), e.size()) << where;
    for (std::size_t i = 0; i < f.size(); ++i) {
      const std::string at = where + " " + to_string(o) + "[" + std::to_string(i) + "]";
      ASSERT_TRUE(same(f[i].rounded, e[i].rounded))
          << at << ": " << f[i].rounded << " vs " << e[i].rounded;
      ASSERT_TRUE(same(f[i].value, e[i].value)) << at << ": " << f[i].value << " vs " << e[i].value;
      ASSERT_TRUE(same(f[i].bound, e[i].bound)) << at << ": " << f[i].bound << " vs " << e[i].bound;
      ASSERT_EQ(f[i].may_overflow, e[i].may_overflow) << at;
      ASSERT_EQ(f[i].must_be_nonfinite, e[i].must_be_nonfinite) << at;
    }
  }
  ASSERT_EQ(a.kernel_from_grad.size(), b.kernel_from_grad.size()) << where;
  for (std::size_t i = 0; i < a.kernel_from_grad.size(); ++i)
    ASSERT_TRUE(same(a.kernel_from_grad[i], b.kernel_from_grad[i])) << where;
  ASSERT_EQ(a.bias_from_grad.size(), b.bias_from_grad.size()) << where;
  for (std::size_t i = 0; i < a.bias_from_grad.size(); ++i)
    ASSERT_TRUE(same(a.bias_from_grad[i], b.bias_from_grad[i])) << where;
  ASSERT_TRUE(same(a.u, b.u)) << where;
}

inline void expect_identical(const RoundedStep& a, const RoundedStep& b, const std::string& where) {
  ASSERT_EQ(a.residual.size(), b.residual.size()) << where;
  for (std::size_t i = 0; i < a.residual.size(); ++i)
    ASSERT_TRUE(same(a.residual[i], b.residual[i])) << where << " residual[" << i << "]";
  for (const Output o : all_outputs) {
    ASSERT_EQ(a[o].size(), b[o].size()) << where;
    for (std::size_t i = 0; i < a[o].size(); ++i) {
      const std::string at = where + " " + to_string(o) + "[" + std::to_string(i) + "]";
      ASSERT_TRUE(same(a[o][i].rounded, b[o][i].rounded)) << at;
      ASSERT_TRUE(same(a[o][i].value, b[o][i].value)) << at;
    }
  }
  ASSERT_EQ(a.fallback_elements, b.fallback_elements) << where;
  ASSERT_EQ(a.exact_evaluated, b.exact_evaluated) << where;
}

}  // namespace sgdc::reference::identical
