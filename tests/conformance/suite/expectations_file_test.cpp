// The skips/xfails file: parsing, its errors, and how it changes verdicts.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>

#include <fstream>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/expectations_file.hpp"
#include "sgdc/conformance/suite.hpp"

namespace sgdc::conformance {
namespace {

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/sgdc-xfails-XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

std::string error_of(const std::string& text) {
  try {
    read_expectations_file(write_temp(text));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ExpectationsFile, ParsesSkipAndXfailWithReasons) {
  const auto list = read_expectations_file(
      write_temp("# comment\n\nskip determinism  # nondeterministic by design\n"
                 "xfail accuracy:*grad_bias*  # flushes subnormal gradients\n"));
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
  EXPECT_TRUE(read_expectations_file(write_temp("# nothing expected\n")).empty());
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
  options.expectations =
      read_expectations_file(write_temp("xfail accuracy:*bias*  # bias is frozen on purpose\n"));
  const SuiteReport matched = run_suite(*impl, options);
  ASSERT_EQ(matched.properties.size(), 1u);
  EXPECT_EQ(matched.properties[0].verdict(), "xfail");
  EXPECT_EQ(matched.verdict, SuiteVerdict::conformant);

  // A pattern that does not match the failure's text leaves it a failure.
  options.expectations =
      read_expectations_file(write_temp("xfail accuracy:*grad_kernel[7]*  # unrelated\n"));
  EXPECT_EQ(run_suite(*impl, options).verdict, SuiteVerdict::not_conformant);
}

TEST(ExpectationsFile, SkipAndXpassAreReported) {
  const auto impl = builtin::make(builtin::find("float32"));
  SuiteOptions options;
  options.only = {"accuracy", "determinism"};
  options.expectations = read_expectations_file(
      write_temp("skip determinism  # slow here\nxfail accuracy  # thought broken\n"));
  const SuiteReport r = run_suite(*impl, options);
  ASSERT_EQ(r.properties.size(), 2u);
  EXPECT_EQ(r.properties[0].verdict(), "xpass");
  EXPECT_EQ(r.properties[1].verdict(), "skip");
  EXPECT_EQ(r.properties[1].report.cases, 0);
  EXPECT_EQ(r.verdict, SuiteVerdict::conformant);
}

}  // namespace
}  // namespace sgdc::conformance