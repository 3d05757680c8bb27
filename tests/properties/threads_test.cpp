// A run spreads its drawn cases over the oracle's threads (reference::for_each_index)
// when the implementation allows concurrent steps: every verdict, count, observation,
// first failure and shrunk counterexample is what one thread gives, so the text and JSON
// reports are the same bytes but for the times. An implementation that does not allow it
// is stepped as before: in batches, from one thread, in case order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/conformance/machine_report.hpp"
#include "sgdc/conformance/suite.hpp"
#include "sgdc/conformance/text_report.hpp"
#include "sgdc/properties/runner.hpp"
#include "sgdc/reference/threads.hpp"

namespace sgdc {
namespace {

using reference::for_each_index;
using reference::inside_for_each_index;
using reference::set_oracle_threads;

class Threads : public ::testing::Test {
 protected:
  void TearDown() override { set_oracle_threads(0); }
};

TEST_F(Threads, ForEachIndexCallsEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    set_oracle_threads(threads);
    for (std::size_t count : {0u, 1u, 2u, 7u, 1000u}) {
      std::vector<std::atomic<int>> calls(count);
      for_each_index(count, [&](std::size_t i) { ++calls[i]; });
      for (std::size_t i = 0; i < count; ++i)
        EXPECT_EQ(calls[i].load(), 1) << threads << " threads, index " << i << " of " << count;
    }
  }
}

TEST_F(Threads, ForEachIndexUsesUpToTheThreadCount) {
  set_oracle_threads(2);
  std::mutex mutex;
  std::set<std::thread::id> seen;
  // Each call waits a little, so that both threads get some.
  for_each_index(128, [&](std::size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::lock_guard lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen.count(std::this_thread::get_id())) << "the calling thread takes a share";

  set_oracle_threads(1);
  seen.clear();
  for_each_index(16, [&](std::size_t) { seen.insert(std::this_thread::get_id()); });
  EXPECT_EQ(seen, std::set{std::this_thread::get_id()});
}

TEST_F(Threads, ForEachIndexRethrowsTheLowestIndexAfterEveryCall) {
  for (int threads : {1, 2, 4}) {
    set_oracle_threads(threads);
    std::atomic<int> calls{0};
    try {
      for_each_index(100, [&](std::size_t i) {
        ++calls;
        if (i == 90 || i == 17 || i == 55) throw std::runtime_error(std::to_string(i));
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "17") << threads << " threads";
    }
    EXPECT_EQ(calls.load(), 100) << threads << " threads";
  }
}

TEST_F(Threads, NothingSplitsInsideForEachIndex) {
  set_oracle_threads(4);
  EXPECT_FALSE(inside_for_each_index());
  std::atomic<int> nested_elsewhere{0}, outside{0};
  for_each_index(8, [&](std::size_t) {
    if (!inside_for_each_index()) ++outside;
    const auto self = std::this_thread::get_id();
    for_each_index(8, [&](std::size_t) {
      if (std::this_thread::get_id() != self) ++nested_elsewhere;
    });
  });
  EXPECT_EQ(outside.load(), 0);
  EXPECT_EQ(nested_elsewhere.load(), 0);
  EXPECT_FALSE(inside_for_each_index());
}

TEST_F(Threads, OnlyStatelessBuiltinsStepConcurrently) {
  using conformance::builtin::find;
  using conformance::builtin::make;
  EXPECT_TRUE(make(find("float32"))->concurrent_steps());
  EXPECT_TRUE(make(find("wrong-sign"))->concurrent_steps());
  // Its outcomes depend on the order of the calls.
  EXPECT_FALSE(make(find("gradients-accumulate"))->concurrent_steps());
}

struct Reports {
  std::string text, json;
};

// The suite's text and JSON reports on builtin `name` with `threads` oracle threads, the
// times set to 0.
Reports run_with(const std::string& name, int threads, int cases,
                 std::vector<properties::Shape> shapes = {}) {
  set_oracle_threads(threads);
  auto impl = conformance::builtin::make(conformance::builtin::find(name));
  conformance::SuiteOptions options;
  options.run.cases = cases;
  options.run.shapes.exact = std::move(shapes);
  conformance::SuiteReport report = conformance::run_suite(*impl, options);
  set_oracle_threads(0);
  report.seconds = 0.0;
  for (conformance::PropertyOutcome& o : report.properties) o.report.seconds = 0.0;
  const std::string prefix = "sgd-conformance run --impl 'builtin:" + name + "'";
  std::ostringstream text, json;
  conformance::write_text_report(text, report, prefix);
  conformance::write_json_report(json, report, prefix);
  return {text.str(), json.str()};
}

void expect_same_reports(const std::string& name, int cases, bool should_fail,
                         const std::vector<properties::Shape>& shapes = {}) {
  const Reports one = run_with(name, 1, cases, shapes), two = run_with(name, 2, cases, shapes);
  EXPECT_EQ(one.text, two.text) << name;
  EXPECT_EQ(one.json, two.json) << name;
  EXPECT_EQ(one.text.find("FAIL") != std::string::npos, should_fail) << one.text;
}

TEST_F(Threads, ReportsOfTheCorrectBuiltinAreTheSameOnOneAndTwoThreads) {
  expect_same_reports("float32", 300, false);
}

// Failing runs: the first failure and its shrinking are the one thread's.
TEST_F(Threads, ReportsOfMutantsAreTheSameOnOneAndTwoThreads) {
  for (const char* name : {"wrong-sign", "rows-past-16-dropped", "columns-past-8-dropped",
                           "adam-eps-inside", "gradients-accumulate"})
    expect_same_reports(name, 200, true);
}

// Cases large enough for the oracle to split their loops are evaluated one at a time,
// beside the small ones the same shape's properties still draw (zero_lr's, say).
TEST_F(Threads, ReportsAtALargeShapeAreTheSameOnOneAndTwoThreads) {
  ASSERT_TRUE(reference::splits_case(64, 64, 32));
  const std::vector<properties::Shape> shapes = {{64, 64, 32}, {3, 5, 7}};
  expect_same_reports("float32", 4, false, shapes);
  expect_same_reports("wrong-sign", 4, true, shapes);
}

// A built-in that records the threads and the batches it is handed, without allowing
// concurrent steps (as an adapter in another process): its batches and their order are
// what they were on one thread.
class Recorder final : public properties::Implementation {
 public:
  Recorder() : inner_(conformance::builtin::make(conformance::builtin::find("float32"))) {}
  const properties::Declaration& declaration() const override { return inner_->declaration(); }
  properties::StepOutcome step(const reference::Case& c) override { return inner_->step(c); }
  std::vector<properties::StepOutcome> step_batch(std::span<const reference::Case> cases) override {
    threads.insert(std::this_thread::get_id());
    std::vector<float> xs;
    for (const reference::Case& c : cases) xs.insert(xs.end(), c.x.begin(), c.x.end());
    batches.push_back(std::move(xs));
    return Implementation::step_batch(cases);
  }
  std::set<std::thread::id> threads;
  std::vector<std::vector<float>> batches;

 private:
  std::unique_ptr<properties::Implementation> inner_;
};

TEST_F(Threads, AnImplementationWithoutConcurrentStepsIsSteppedAsOnOneThread) {
  const properties::Property& p = properties::find_property("training");
  properties::RunOptions o;
  o.cases = 40;
  set_oracle_threads(1);
  Recorder one;
  ASSERT_TRUE(properties::run_property(p, one, o).passed);
  set_oracle_threads(2);
  Recorder two;
  ASSERT_TRUE(properties::run_property(p, two, o).passed);
  EXPECT_EQ(two.threads, std::set{std::this_thread::get_id()});
  EXPECT_EQ(one.batches, two.batches);
}

}  // namespace
}  // namespace sgdc
