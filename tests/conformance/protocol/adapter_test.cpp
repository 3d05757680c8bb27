#include "sgdc/conformance/protocol/adapter.hpp"
#include "sgdc/reference/worked_example.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "process_helpers.hpp"
#include "support/float_bits.hpp"
#include "support/temp_path.hpp"

namespace sgdc::conformance::protocol {
namespace {

using namespace testing;

// d = k = 2, so that array-length faults cannot pass by accident.
reference::Case two_by_two() {
  reference::Case c;
  c.n = 1;
  c.d = 2;
  c.k = 2;
  c.kernel = {1, 2, 3, 4};
  c.bias = {0.5f, -0.5f};
  c.x = {1, -1};
  c.y = {0, 0};
  c.lr = 0.25f;
  c.num_shards = 2;
  c.step = 41;
  return c;
}

using test_support::float_bits;
using test_support::TempPath;

// `run` throws an exception of type E whose message contains every one of `needles`;
// returns the message.
template <class E>
std::string expect_fault(const std::function<void()>& run,
                         const std::vector<std::string>& needles) {
  try {
    run();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& needle : needles) {
      EXPECT_NE(what.find(needle), std::string::npos) << "missing '" << needle << "' in: " << what;
    }
    return what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception";
  return {};
}

// A mid-run fault: an ImplementationFault that is fatal and not a start failure.
std::string expect_case_fault(ProtocolAdapter& adapter, const reference::Case& c,
                              const std::vector<std::string>& needles) {
  std::string what;
  try {
    adapter.step(c);
    ADD_FAILURE() << "no fault";
  } catch (const AdapterStartFailure& e) {
    ADD_FAILURE() << "mid-run fault reported as a start failure: " << e.what();
  } catch (const properties::ImplementationFault& e) {
    what = e.what();
    for (const auto& needle : needles) {
      EXPECT_NE(what.find(needle), std::string::npos) << "missing '" << needle << "' in: " << what;
    }
  }
  EXPECT_TRUE(adapter.broken());
  // Every later case fails at once.
  const auto start = Clock::now();
  expect_fault<properties::ImplementationFault>([&] { adapter.step(c); },
                                                {"not run", "earlier fault"});
  EXPECT_LT(seconds_since(start), 0.5);
  return what;
}

std::unique_ptr<ProtocolAdapter> start(const std::string& mode, double case_timeout = 10,
                                       double handshake_timeout = 10) {
  return std::make_unique<ProtocolAdapter>(
      fake_command(mode),
      AdapterOptions{.case_timeout_s = case_timeout, .handshake_timeout_s = handshake_timeout});
}

// --- the well-behaved fake ---

TEST(ProtocolAdapter, WorkedExampleRoundTrips) {
  auto adapter = start("good");
  const properties::Declaration& d = adapter->declaration();
  EXPECT_EQ(d.name, "fake-good");
  EXPECT_EQ(d.version, "0.1");
  EXPECT_TRUE(d.capabilities.grads);
  EXPECT_TRUE(d.capabilities.step_counter);
  EXPECT_TRUE(d.capabilities.shard_layout);
  EXPECT_FALSE(d.capabilities.sharded);
  EXPECT_EQ(d.arithmetic.u, 0x1p-24);
  EXPECT_EQ(d.arithmetic.subnormals, reference::Subnormals::ieee);

  const properties::StepOutcome out = adapter->step(reference::worked_example());
  EXPECT_EQ(adapter->last_id(), 1);
  ASSERT_TRUE(out.result.has_value()) << out.rejection;
  const reference::StepResult& r = *out.result;
  EXPECT_EQ(r.loss, std::vector<float>{2.5f});
  EXPECT_EQ(r.kernel, std::vector<float>{0.5f});
  ASSERT_EQ(r.bias.size(), 1u);
  EXPECT_EQ(float_bits(r.bias[0]), float_bits(-0.3f));
  EXPECT_EQ(r.grad_kernel, std::vector<float>{5.0f});
  EXPECT_EQ(r.grad_bias, std::vector<float>{3.0f});
  EXPECT_EQ(r.step, 1);
  ASSERT_TRUE(r.shards.has_value());
  ASSERT_EQ(r.shards->size(), 1u);
  EXPECT_EQ(r.shards->at(0).kernel, 1);
  EXPECT_EQ(r.shards->at(0).bias, 1);

  // Later cases get increasing ids and are answered in turn.
  const properties::StepOutcome second = adapter->step(two_by_two());
  EXPECT_EQ(adapter->last_id(), 2);
  ASSERT_TRUE(second.result.has_value());
  EXPECT_EQ(second.result->kernel.size(), 4u);
  EXPECT_EQ(second.result->step, 42);
  EXPECT_EQ(second.result->shards->size(), 2u);
  EXPECT_EQ(adapter->step(reference::worked_example()).result->loss[0], 2.5f);

  const ChildExit s = adapter->close();
  EXPECT_TRUE(s.success()) << s.describe();
  expect_fault<properties::ImplementationFault>([&] { adapter->step(reference::worked_example()); },
                                                {"closed"});
}

TEST(ProtocolAdapter, MinimalAdapterHasNoOptionalOutputs) {
  auto adapter = start("minimal");
  EXPECT_FALSE(adapter->declaration().capabilities.grads);
  EXPECT_FALSE(adapter->declaration().capabilities.sharded);
  const properties::StepOutcome out = adapter->step(reference::worked_example());
  ASSERT_TRUE(out.result.has_value());
  EXPECT_TRUE(out.result->grad_kernel.empty());
  EXPECT_FALSE(out.result->step.has_value());
  EXPECT_FALSE(out.result->shards.has_value());
}

TEST(ProtocolAdapter, RejectionIsAnAnswerNotAFault) {
  auto adapter = start("reject");
  for (int i = 0; i < 2; ++i) {
    const properties::StepOutcome out = adapter->step(reference::worked_example());
    EXPECT_FALSE(out.result.has_value());
    EXPECT_EQ(out.rejection, "fake: rejecting every case");
  }
  EXPECT_FALSE(adapter->broken());
  EXPECT_TRUE(adapter->close().success());
}

// Far more than a pipe buffer each way, so writes and reads must wait for room.
void expect_large_case_round_trips(const std::string& mode) {
  reference::Case c;
  c.n = 1000;
  c.d = 64;
  c.k = 2;
  c.kernel.assign(static_cast<std::size_t>(c.d * c.k), 0.0f);
  c.bias = {0.0f, 0.0f};
  c.x.assign(static_cast<std::size_t>(c.n * c.d), 1.0f);
  c.y.assign(static_cast<std::size_t>(c.n * c.k), 1.0f);
  c.lr = 0.5f;
  auto adapter = start(mode, 60);
  const properties::StepOutcome out = adapter->step(c);
  ASSERT_TRUE(out.result.has_value());
  EXPECT_EQ(out.result->loss[0], 1.0f);
  // r = -1 everywhere, so gW = 2/(n*k) * n * (-1) = -1 and W' = 0 - 0.5 * (-1).
  EXPECT_EQ(out.result->kernel, std::vector<float>(128, 0.5f));
}

TEST(ProtocolAdapter, LargeCaseRoundTrips) { expect_large_case_round_trips("good"); }

TEST(ProtocolAdapter, ChattyStderrDoesNotBlockAndKeepsTheTail) {
  auto adapter = start("stderr_chatter", 30);
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(adapter->step(reference::worked_example()).result.has_value());
  const std::string tail = adapter->stderr_tail();
  EXPECT_LE(tail.size(), 4096u);
  EXPECT_TRUE(tail.ends_with("chatter end of case 2\n")) << tail;
}

TEST(ProtocolAdapter, BadTimeoutsAreRejected) {
  EXPECT_THROW(ProtocolAdapter(fake_command("good"), AdapterOptions{.case_timeout_s = 0}),
               std::invalid_argument);
  EXPECT_THROW(ProtocolAdapter(fake_command("good"), AdapterOptions{.handshake_timeout_s = -1}),
               std::invalid_argument);
  EXPECT_THROW(
      ProtocolAdapter(fake_command("good"), AdapterOptions{.case_timeout_s = std::nan("")}),
      std::invalid_argument);
}

// --- start failures ---

TEST(ProtocolAdapter, MissingCommandIsAStartFailure) {
  const auto start_time = Clock::now();
  expect_fault<AdapterStartFailure>(
      [] {
        ProtocolAdapter("/nonexistent/sgdc-no-such-adapter --flag",
                        AdapterOptions{.case_timeout_s = 5, .handshake_timeout_s = 5});
      },
      {"handshake: adapter exited with status 127 (command not found)",
       "stderr:", "sgdc-no-such-adapter"});
  EXPECT_LT(seconds_since(start_time), 3.0);
  try {
    ProtocolAdapter("/nonexistent/sgdc-no-such-adapter",
                    AdapterOptions{.case_timeout_s = 5, .handshake_timeout_s = 5});
  } catch (const AdapterStartFailure& e) {
    ASSERT_TRUE(e.exit_status().has_value());
    EXPECT_EQ(e.exit_status()->code, 127);
  }
}

TEST(ProtocolAdapter, StartFailureKeepsTheLaunchersExitStatus) {
  try {
    ProtocolAdapter("echo 'no venv' >&2; exit 77",
                    AdapterOptions{.case_timeout_s = 5, .handshake_timeout_s = 5});
    FAIL() << "no exception";
  } catch (const AdapterStartFailure& e) {
    ASSERT_TRUE(e.exit_status().has_value()) << e.what();
    EXPECT_EQ(e.exit_status()->code, 77);
    EXPECT_NE(std::string(e.what()).find("(stderr: no venv)"), std::string::npos) << e.what();
  }
  try {
    start("bad_protocol");
    FAIL() << "no exception";
  } catch (const AdapterStartFailure& e) {
    EXPECT_FALSE(e.exit_status().has_value()) << "the suite stopped it: " << e.what();
  }
}

TEST(ProtocolAdapter, WrongProtocolIsAStartFailure) {
  expect_fault<AdapterStartFailure>([] { start("bad_protocol"); },
                                    {"handshake: adapter speaks protocol 2"});
}

TEST(ProtocolAdapter, HelloNotJsonIsAStartFailure) {
  expect_fault<AdapterStartFailure>([] { start("hello_not_json"); },
                                    {"handshake: hello reply is not JSON", "hello there"});
}

TEST(ProtocolAdapter, ExitingAtOnceIsAStartFailure) {
  expect_fault<AdapterStartFailure>(
      [] { start("exit_immediately"); },
      {"handshake: adapter exited with status 3", "(stderr: fake: exiting at once)"});
}

TEST(ProtocolAdapter, SilentHandshakeIsAStartFailure) {
  const auto start_time = Clock::now();
  expect_fault<AdapterStartFailure>([] { start("hang_in_handshake", 10, 0.5); },
                                    {"handshake: no answer within 0.5 s"});
  EXPECT_LT(seconds_since(start_time), 4.0);
}

// --- faults mid-run ---

TEST(ProtocolAdapter, CrashMidRun) {
  auto adapter = start("crash_after_2");
  ASSERT_TRUE(adapter->step(reference::worked_example()).result.has_value());
  ASSERT_TRUE(adapter->step(reference::worked_example()).result.has_value());
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 3: adapter exited with status 1", "(stderr: fake: crashing on case 3)"});
}

TEST(ProtocolAdapter, HangIsCutOffByTheCaseTimeout) {
  auto adapter = start("hang", 0.5);
  const auto start_time = Clock::now();
  expect_case_fault(*adapter, reference::worked_example(), {"case 1: no answer within 0.5 s"});
  EXPECT_LT(seconds_since(start_time), 4.0);
}

TEST(ProtocolAdapter, HangIgnoringSigtermIsKilled) {
  SubreaperScope reaper;
  TempPath pid_file("adapter-pid");
  auto adapter = std::make_unique<ProtocolAdapter>(fake_command("hang_ignore_term", pid_file.str()),
                                                   AdapterOptions{.case_timeout_s = 0.5});
  const pid_t pid = read_pid_file(pid_file.str());
  ASSERT_GT(pid, 0);
  const auto start_time = Clock::now();
  expect_case_fault(*adapter, reference::worked_example(), {"case 1: no answer within 0.5 s"});
  // 0.5 s timeout, then SIGTERM (ignored) and SIGKILL after the 1 s term grace.
  EXPECT_LT(seconds_since(start_time), 5.0);
  EXPECT_TRUE(wait_until_gone(pid));
}

TEST(ProtocolAdapter, HangWithGrandchildKillsTheWholeGroup) {
  SubreaperScope reaper;
  TempPath pid_file("grandchild-pid");
  auto adapter = std::make_unique<ProtocolAdapter>(fake_command("hang_grandchild", pid_file.str()),
                                                   AdapterOptions{.case_timeout_s = 2.0});
  const auto start_time = Clock::now();
  expect_case_fault(*adapter, reference::worked_example(), {"case 1: no answer within 2 s"});
  EXPECT_LT(seconds_since(start_time), 6.0);
  const pid_t grandchild = read_pid_file(pid_file.str(), 1000ms);
  ASSERT_GT(grandchild, 0) << "the fake did not write its grandchild's pid in time";
  EXPECT_TRUE(wait_until_gone(grandchild)) << "grandchild " << grandchild << " survived";
}

TEST(ProtocolAdapter, AdapterThatStopsReadingIsCutOff) {
  reference::Case big;
  big.n = 100000;
  big.d = 10;
  big.k = 1;
  big.kernel.assign(10, 0.0f);
  big.bias = {0.0f};
  big.x.assign(1000000, 0.0f);
  big.y.assign(100000, 0.0f);
  auto adapter = start("hang_no_read", 0.5);
  const auto start_time = Clock::now();
  expect_case_fault(*adapter, big, {"case 1: adapter did not read its input within 0.5 s"});
  EXPECT_LT(seconds_since(start_time), 4.0);
}

TEST(ProtocolAdapter, NonProtocolLineOnStdout) {
  auto adapter = start("noise");
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: answer is not JSON", "(line: 'loading weights...')"});
}

TEST(ProtocolAdapter, WrongId) {
  auto adapter = start("wrong_id");
  expect_case_fault(*adapter, reference::worked_example(), {"case 1: answer has id 2, expected 1"});
}

TEST(ProtocolAdapter, ShortArray) {
  auto adapter = start("short_array");
  expect_case_fault(*adapter, two_by_two(), {"case 1: kernel has 3 values, expected 4"});
}

TEST(ProtocolAdapter, UndecodableBase64) {
  auto adapter = start("bad_base64");
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: kernel is not valid base64: invalid character '!' at offset 5"});
}

TEST(ProtocolAdapter, StepIsAString) {
  auto adapter = start("step_string");
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: step is not an integer: \"1\""});
}

TEST(ProtocolAdapter, StepIsNaN) {
  auto adapter = start("step_nan");
  expect_case_fault(*adapter, reference::worked_example(), {"case 1: answer is not JSON", "NaN"});
}

TEST(ProtocolAdapter, StepIsAFraction) {
  auto adapter = start("step_float");
  expect_case_fault(*adapter, reference::worked_example(), {"case 1: step is not an integer: 1.5"});
}

TEST(ProtocolAdapter, MissingPromisedCapabilityField) {
  auto adapter = start("missing_grad");
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: answer lacks grad_bias, which capability \"grads\" promises"});
}

TEST(ProtocolAdapter, UnterminatedAnswer) {
  auto adapter = start("unterminated");
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: adapter exited with status 1 after writing an unterminated line",
                     "{\"op\":\"result\",\"id\":"});
}

// --- binary arrays (docs/spec/protocol.md) ---

TEST(ProtocolAdapter, PublishedAdapterDeclinesTheBinaryOffer) {
  auto adapter = start("good");
  EXPECT_EQ(adapter->array_encoding(), ArrayEncoding::base64);
  EXPECT_EQ(adapter->step(reference::worked_example()).result->loss[0], 2.5f);
}

TEST(ProtocolAdapter, BinaryArraysRoundTrip) {
  auto adapter = start("binary");
  EXPECT_EQ(adapter->array_encoding(), ArrayEncoding::binary);
  const properties::StepOutcome out = adapter->step(reference::worked_example());
  ASSERT_TRUE(out.result.has_value()) << out.rejection;
  EXPECT_EQ(out.result->loss[0], 2.5f);
  EXPECT_EQ(out.result->kernel, std::vector<float>{0.5f});
  EXPECT_EQ(float_bits(out.result->bias.at(0)), float_bits(-0.3f));
  EXPECT_EQ(out.result->grad_kernel, std::vector<float>{5.0f});
  EXPECT_EQ(out.result->step, 1);
  // Each case's payload is read whole: the next one starts at the next line.
  const properties::StepOutcome second = adapter->step(two_by_two());
  ASSERT_TRUE(second.result.has_value());
  EXPECT_EQ(second.result->kernel.size(), 4u);
  EXPECT_EQ(second.result->step, 42);
  EXPECT_TRUE(adapter->close().success());
}

TEST(ProtocolAdapter, BinaryLargeCaseRoundTrips) { expect_large_case_round_trips("binary"); }

TEST(ProtocolAdapter, Base64OnlySuiteKeepsABinaryCapableAdapterOnBase64) {
  ProtocolAdapter adapter(fake_command("binary"), AdapterOptions{.offer = ArrayEncoding::base64});
  EXPECT_EQ(adapter.array_encoding(), ArrayEncoding::base64);
  EXPECT_EQ(adapter.step(reference::worked_example()).result->loss[0], 2.5f);
}

TEST(ProtocolAdapter, UnofferedBinaryIsAStartFailure) {
  expect_fault<AdapterStartFailure>(
      [] {
        ProtocolAdapter(fake_command("binary_unoffered"),
                        AdapterOptions{.offer = ArrayEncoding::base64});
      },
      {"handshake: adapter chose binary arrays, which the suite did not offer"});
}

TEST(ProtocolAdapter, BinaryReferenceOutsideThePayload) {
  auto adapter = start("binary_outside");
  expect_case_fault(*adapter, two_by_two(),
                    {"case 1: kernel (bytes ", "lies outside the", "-byte payload"});
}

TEST(ProtocolAdapter, BinaryArraySentAsBase64String) {
  auto adapter = start("binary_string");
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: kernel is not a binary array reference", "\"AAAAPw==\""});
}

TEST(ProtocolAdapter, PayloadCutShortByAnExit) {
  auto adapter = start("binary_cut");
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: adapter exited with status 1", "before the end of the answer's"});
}

TEST(ProtocolAdapter, PayloadThatNeverArrivesTimesOut) {
  auto adapter = start("binary_stall", 0.5);
  const auto start_time = Clock::now();
  expect_case_fault(*adapter, reference::worked_example(),
                    {"case 1: the answer's", "-byte payload did not arrive within 0.5 s"});
  EXPECT_LT(seconds_since(start_time), 4.0);
}

// --- batches: cases sent ahead, and adapter batches ---

// The worked example with another learning rate: a distinct case, with known answers.
reference::Case worked_with_lr(float lr) {
  reference::Case c = reference::worked_example();
  c.lr = lr;
  return c;
}

const std::vector<reference::Case> three_cases = {reference::worked_example(), two_by_two(),
                                                  worked_with_lr(0.5f)};

// The answers to three_cases, in order.
void expect_three_answers(const std::vector<properties::StepOutcome>& out) {
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].result->loss[0], 2.5f);
  EXPECT_EQ(out[1].result->step, 42);
  // lr 0.5: kernel 1 - 0.5 * 5 = -1.5, exactly.
  EXPECT_EQ(out[2].result->kernel, std::vector<float>{-1.5f});
}

TEST(ProtocolAdapter, AdapterWithoutMaxInFlightGetsOneCaseAtATime) {
  auto adapter = start("good");
  EXPECT_EQ(adapter->max_in_flight(), 1);
  expect_three_answers(adapter->step_batch(three_cases));
  EXPECT_EQ(adapter->last_id(), 3);
}

TEST(ProtocolAdapter, CasesSentAheadAreAnsweredInOrder) {
  auto adapter = start("pipelined");
  EXPECT_EQ(adapter->max_in_flight(), 8);
  expect_three_answers(adapter->step_batch(three_cases));
  // The same case twice is computed twice, as determinism needs.
  const std::vector<reference::Case> twice = {two_by_two(), two_by_two()};
  const auto out = adapter->step_batch(twice);
  EXPECT_EQ(out[0].result->kernel, out[1].result->kernel);
  EXPECT_EQ(adapter->last_id(), 5);
  EXPECT_TRUE(adapter->close().success());
}

TEST(ProtocolAdapter, FaultOnACaseSentAheadNamesItAndKeepsTheAnswersBefore) {
  auto adapter = start("pipelined_crash_after_1");
  try {
    adapter->step_batch(three_cases);
    ADD_FAILURE() << "no fault";
  } catch (const properties::ImplementationFault& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("case 2: adapter exited with status 1"), std::string::npos) << what;
    EXPECT_NE(what.find("fake: crashing on case 2"), std::string::npos) << what;
    EXPECT_EQ(e.position(), 1u);
    ASSERT_EQ(e.completed().size(), 1u);
    EXPECT_EQ(e.completed()[0].result->loss[0], 2.5f);
  }
  EXPECT_TRUE(adapter->broken());
}

TEST(ProtocolAdapter, CaseSentAheadStillTimesOut) {
  auto adapter = start("pipelined_hang", 0.5);
  const auto start_time = Clock::now();
  expect_fault<properties::ImplementationFault>([&] { adapter->step_batch(three_cases); },
                                                {"case 1: no answer within 0.5 s"});
  EXPECT_LT(seconds_since(start_time), 4.0);
}

TEST(ProtocolAdapter, BatchesAreSentWholeWithTheirPlace) {
  TempPath log("batches");
  ProtocolAdapter adapter(fake_command("batched", log.str()));
  EXPECT_EQ(adapter.max_batch(), 4);
  std::vector<reference::Case> six;
  for (int i = 0; i < 6; ++i) six.push_back(worked_with_lr(0.5f));
  six[1] = two_by_two();
  const auto out = adapter.step_batch(six);
  ASSERT_EQ(out.size(), 6u);
  for (const auto& o : out) ASSERT_TRUE(o.result) << o.rejection;  // consistent batch fields
  EXPECT_EQ(out[1].result->step, 42);
  EXPECT_EQ(out[5].result->kernel, std::vector<float>{-1.5f});
  // One case alone is a batch of one.
  EXPECT_EQ(adapter.step(reference::worked_example()).result->loss[0], 2.5f);
  EXPECT_TRUE(adapter.close().success());
  std::ifstream in(log.str());
  std::string sizes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(sizes, "4\n2\n1\n");
}

TEST(ProtocolAdapter, BatchedAdapterCrashInABatchNamesTheCase) {
  auto adapter = start("batched_crash_after_2");
  try {
    adapter->step_batch(three_cases);
    ADD_FAILURE() << "no fault";
  } catch (const properties::ImplementationFault& e) {
    EXPECT_NE(std::string(e.what()).find("case 3: adapter exited with status 1"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.position(), 2u);
    EXPECT_EQ(e.completed().size(), 2u);
  }
}

}  // namespace
}  // namespace sgdc::conformance::protocol
