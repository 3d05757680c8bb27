// The skips/xfails file: parsing, its errors, and how it changes verdicts.
#include <gtest/gtest.h>

#include <fstream>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/expectations_file.hpp"
#include "sgdc/conformance/suite.hpp"
#include "support/temp_path.hpp"

namespace sgdc::conformance {
namespace {

// Reads `text` as an expectations file from a temporary file, which is removed again
// whether the reading succeeds or throws.
std::vector<ExpectedDeviation> read_text(const std::string& text) {
  const test_support::TempPath file("xfails");
  std::ofstream(file.str()) << text;
  return read_expectations_file(file.str());
}

std::string error_of(const std::string& text) {
  try {
    read_text(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ExpectationsFile, ParsesSkipAndXfailWithReasons) {
  const auto list = read_text(
      "# comment\n\nskip determinism  # nondeterministic by design\n"
      "xfail accuracy:*grad_bias*  # flushes subnormal gradients\n");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].kind, ExpectedDeviation::Kind::skip);
  EXPECT_EQ(list[0].property, "determinism");
  EXPECT_EQ(list[0].reason, "nondeterministic by design");
  EXPECT_EQ(list[0].line, 3);
  EXPECT_EQ(list[1].kind, ExpectedDeviation::Kind::xfail);
  EXPECT_EQ(list[1].property, "accuracy");
}

TEST(ExpectationsFile, RejectsLinesWithoutAReasonOrKeyword) {
  EXPECT_NE(error_of("skip determinism\n").find(":1: every line needs a reason"),
            std::string::npos);
  EXPECT_NE(error_of("ignore accuracy # why\n").find("expected 'skip' or 'xfail'"),
            std::string::npos);
  EXPECT_NE(error_of("xfail # why\n").find("missing PROPERTY"), std::string::npos);
  EXPECT_NE(error_of("xfail a b # why\n").find("one pattern per line"), std::string::npos);
  EXPECT_TRUE(read_text("# nothing expected\n").empty());
  try {
    read_expectations_file("/nonexistent/xfails.txt");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/xfails.txt"), std::string::npos);
  }
}

TEST(ExpectationsFile, XfailTurnsAMatchingFailureIntoAnExpectedOne) {
  const auto impl = builtin::make(builtin::find("bias-not-updated"));
  SuiteOptions options;
  options.only = {"accuracy"};
  options.expectations = read_text("xfail accuracy:*bias*  # bias is frozen on purpose\n");
  const SuiteReport matched = run_suite(*impl, options);
  ASSERT_EQ(matched.properties.size(), 1u);
  EXPECT_EQ(matched.properties[0].verdict(), "xfail");
  EXPECT_EQ(matched.verdict, SuiteVerdict::conformant);

  // A pattern that does not match the failure's text leaves it a failure.
  options.expectations = read_text("xfail accuracy:*grad_kernel[7]*  # unrelated\n");
  EXPECT_EQ(run_suite(*impl, options).verdict, SuiteVerdict::not_conformant);
}

TEST(ExpectationsFile, AnExpectedFailureKeepsThePropertyRunning) {
  const auto impl = builtin::make(builtin::find("bias-not-updated"));
  SuiteOptions options;
  options.only = {"accuracy"};
  options.run.cases = 20;
  options.expectations = read_text("xfail accuracy:*bias*  # bias is frozen on purpose\n");
  const SuiteReport r = run_suite(*impl, options);
  ASSERT_EQ(r.properties.size(), 1u);
  const properties::PropertyReport& p = r.properties[0].report;
  // Every case ran: the first expected failure did not stop the property.
  EXPECT_EQ(p.cases, 20);
  EXPECT_GT(p.expected_failures, 1);
  EXPECT_LE(p.expected_failures, p.cases);
  ASSERT_TRUE(p.first_expected.has_value());
  EXPECT_NE(p.first_expected->second.find("bias["), std::string::npos);
  EXPECT_FALSE(p.counterexample.has_value());
  EXPECT_EQ(r.properties[0].verdict(), "xfail");
  EXPECT_EQ(r.properties[0].xfail_reason, "bias is frozen on purpose");
  EXPECT_EQ(r.verdict, SuiteVerdict::conformant);
}

TEST(ExpectationsFile, AnXfailCoversTheElementsItMatchesAndNoOthers) {
  // A mean taken as a sum breaks the loss, the gradients and the new parameters: an
  // xfail line for the loss alone leaves the failure a failure, shrunk and reported with
  // the elements no line expects.
  const auto impl = builtin::make(builtin::find("sum-not-mean"));
  SuiteOptions options;
  options.only = {"accuracy"};
  options.run.cases = 20;
  options.expectations = read_text("xfail accuracy:loss[*  # the loss is a sum here\n");
  const SuiteReport some = run_suite(*impl, options);
  ASSERT_EQ(some.properties.size(), 1u);
  EXPECT_EQ(some.properties[0].verdict(), "fail");
  ASSERT_TRUE(some.properties[0].report.counterexample.has_value());
  EXPECT_NE(some.properties[0].report.counterexample->message.find("grad_"), std::string::npos);
  EXPECT_EQ(some.verdict, SuiteVerdict::not_conformant);

  // A line matching the message's first line covers every element of the failure.
  options.expectations = read_text("xfail accuracy:*derived?bound:*  # known\n");
  const SuiteReport all = run_suite(*impl, options);
  EXPECT_EQ(all.properties[0].verdict(), "xfail");
  EXPECT_EQ(all.properties[0].report.cases, 20);
  EXPECT_EQ(all.verdict, SuiteVerdict::conformant);
}

TEST(ExpectationsFile, SkipAndXpassAreReported) {
  const auto impl = builtin::make(builtin::find("float32"));
  SuiteOptions options;
  options.only = {"accuracy", "determinism"};
  options.expectations =
      read_text("skip determinism  # slow here\nxfail accuracy  # thought broken\n");
  const SuiteReport r = run_suite(*impl, options);
  ASSERT_EQ(r.properties.size(), 2u);
  EXPECT_EQ(r.properties[0].verdict(), "xpass");
  EXPECT_EQ(r.properties[1].verdict(), "skip");
  EXPECT_EQ(r.properties[1].report.cases, 0);
  EXPECT_EQ(r.verdict, SuiteVerdict::conformant);
}

}  // namespace
}  // namespace sgdc::conformance