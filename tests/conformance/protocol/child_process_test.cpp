#include "protocol/child_process.hpp"

#include <gtest/gtest.h>

#include <string>

#include "process_helpers.hpp"

namespace sgdc::conformance::protocol {
namespace {

using namespace testing;
using Status = ChildProcess::Line::Status;

Clock::time_point in(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

TEST(ChildProcess, EchoesLines) {
  ChildProcess child("cat");
  ASSERT_EQ(child.write_all("one\ntwo\n", in(5)), ChildProcess::WriteStatus::ok);
  auto line = child.read_line(in(5));
  EXPECT_EQ(line.status, Status::ok);
  EXPECT_EQ(line.text, "one");
  line = child.read_line(in(5));
  EXPECT_EQ(line.text, "two");
  EXPECT_TRUE(child.running());
  const ChildExit s = child.stop();
  EXPECT_TRUE(s.success()) << s.describe();
  EXPECT_FALSE(child.running());
  EXPECT_TRUE(wait_until_gone(child.pid()));
}

TEST(ChildProcess, ShellSyntaxAndArguments) {
  ChildProcess child("printf '%s|%s\\n' 'a b' \"$((6 * 7))\"");
  const auto line = child.read_line(in(5));
  EXPECT_EQ(line.text, "a b|42");
  EXPECT_EQ(child.read_line(in(5)).status, Status::closed);
}

TEST(ChildProcess, ReadTimesOut) {
  ChildProcess child("sleep 100");
  const auto start = Clock::now();
  const auto line = child.read_line(in(0.2));
  EXPECT_EQ(line.status, Status::timed_out);
  EXPECT_GE(seconds_since(start), 0.19);
  EXPECT_LT(seconds_since(start), 2.0);
  child.stop(ChildProcess::Seconds{0});
  EXPECT_LT(seconds_since(start), 3.0);
}

// Napping changes how the reader waits, never what it reads or how long it may wait.
TEST(ChildProcess, NappingReaderSeesLateOutputAndKeepsDeadlines) {
  ChildProcess late("sleep 0.05; echo first; sleep 0.01; echo second");
  late.set_napping(true);
  EXPECT_EQ(late.read_line(in(5)).text, "first");
  EXPECT_EQ(late.read_line(in(5)).text, "second");
  EXPECT_EQ(late.read_line(in(5)).status, Status::closed);

  ChildProcess silent("sleep 100");
  silent.set_napping(true);
  auto start = Clock::now();
  EXPECT_EQ(silent.read_line(in(0.2)).status, Status::timed_out);
  EXPECT_GE(seconds_since(start), 0.19);
  EXPECT_LT(seconds_since(start), 2.0);
  // A deadline shorter than a nap's slice, or past: no nap outlives it.
  start = Clock::now();
  EXPECT_EQ(silent.read_line(in(20e-6)).status, Status::timed_out);
  EXPECT_EQ(silent.read_line(in(-1)).status, Status::timed_out);
  EXPECT_LT(seconds_since(start), 0.1);
  silent.stop(ChildProcess::Seconds{0});
}

TEST(ChildProcess, NappingReaderDrainsStderr) {
  // 200 KB to stderr before the line: more than the pipe holds, so the child finishes
  // only if stderr is read while the reader naps or waits.
  ChildProcess noisy("head -c 200000 /dev/zero | tr '\\0' x >&2; echo done");
  noisy.set_napping(true);
  EXPECT_EQ(noisy.read_line(in(10)).text, "done");
  noisy.stop();
  EXPECT_TRUE(noisy.stderr_tail().ends_with("xxxx"));
}

TEST(ChildProcess, ExitStatusAndSignal) {
  ChildProcess exits("echo bye >&2; exit 7");
  const auto s = exits.wait_for_exit(in(5));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->code, 7);
  EXPECT_EQ(s->describe(), "exited with status 7");
  EXPECT_EQ(exits.stop().code, 7);
  EXPECT_EQ(exits.stderr_tail(), "bye\n");

  ChildProcess killed("kill -9 $$");
  const auto k = killed.wait_for_exit(in(5));
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->signal, 9);
  EXPECT_NE(k->describe().find("killed by signal 9"), std::string::npos) << k->describe();
}

TEST(ChildProcess, MissingCommandExits127) {
  ChildProcess child("/nonexistent/sgdc-no-such-command --flag");
  const auto s = child.wait_for_exit(in(5));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->code, 127);
  EXPECT_EQ(s->describe(), "exited with status 127 (command not found)");
  child.stop();
  EXPECT_NE(child.stderr_tail().find("not found"), std::string::npos) << child.stderr_tail();
}

TEST(ChildProcess, WritingToADeadChildDoesNotRaiseSigpipe) {
  ChildProcess child("exec 0<&-; exit 0");
  ASSERT_TRUE(child.wait_for_exit(in(5)).has_value());
  // If SIGPIPE were raised, the default action would kill this test process.
  const std::string big(1 << 20, 'x');
  EXPECT_EQ(child.write_all(big, in(5)), ChildProcess::WriteStatus::closed);
  EXPECT_EQ(child.write_all("more", in(5)), ChildProcess::WriteStatus::closed);
}

TEST(ChildProcess, WriteTimesOutWhenTheChildDoesNotRead) {
  ChildProcess child("sleep 100");
  const std::string big(4 << 20, 'x');
  const auto start = Clock::now();
  EXPECT_EQ(child.write_all(big, in(0.3)), ChildProcess::WriteStatus::timed_out);
  EXPECT_LT(seconds_since(start), 2.0);
  child.stop(ChildProcess::Seconds{0});
}

TEST(ChildProcess, StderrRingKeepsTheTail) {
  ChildProcess child(
      "i=0; while [ $i -lt 3000 ]; do echo \"line $i\" >&2; i=$((i+1)); done; echo done");
  const auto line = child.read_line(in(10));
  EXPECT_EQ(line.text, "done");
  child.stop();
  const std::string tail = child.stderr_tail();
  EXPECT_LE(tail.size(), 4096u);
  EXPECT_GE(tail.size(), 4000u);
  EXPECT_TRUE(tail.ends_with("line 2999\n")) << tail.substr(tail.size() - 40);
}

TEST(ChildProcess, UnterminatedOutputAndLongLines) {
  ChildProcess partial("printf abc");
  EXPECT_EQ(partial.read_line(in(5)).status, Status::closed);
  EXPECT_EQ(partial.unterminated_output(), "abc");

  ChildProcess::Options options;
  options.max_line_bytes = 10;
  ChildProcess long_line("echo 0123456789abcdef", options);
  EXPECT_EQ(long_line.read_line(in(5)).status, Status::too_long);
}

TEST(ChildProcess, StopKillsTheWholeProcessGroup) {
  SubreaperScope reaper;
  ChildProcess child("sleep 1000 & echo $!; wait");
  const auto line = child.read_line(in(5));
  ASSERT_EQ(line.status, Status::ok);
  const pid_t grandchild = static_cast<pid_t>(std::stol(line.text));
  ASSERT_EQ(::kill(grandchild, 0), 0);
  const auto start = Clock::now();
  const ChildExit s = child.stop(ChildProcess::Seconds{0});
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_EQ(s.signal, SIGTERM) << s.describe();
  EXPECT_TRUE(wait_until_gone(grandchild));
  EXPECT_TRUE(wait_until_gone(child.pid()));
}

TEST(ChildProcess, StopKillsLeftoversOfAChildThatExitedByItself) {
  SubreaperScope reaper;
  ChildProcess child("sleep 1000 & echo $!");  // the shell exits, sleep stays behind
  const auto line = child.read_line(in(5));
  ASSERT_EQ(line.status, Status::ok);
  const pid_t grandchild = static_cast<pid_t>(std::stol(line.text));
  ASSERT_TRUE(child.wait_for_exit(in(5)).has_value());
  EXPECT_TRUE(child.stop().success());
  EXPECT_TRUE(wait_until_gone(grandchild));
}

TEST(ChildProcess, StopEscalatesToSigkill) {
  ChildProcess::Options options;
  options.term_grace = ChildProcess::Seconds{0.3};
  ChildProcess child("trap '' TERM; echo ready; while :; do sleep 1; done", options);
  ASSERT_EQ(child.read_line(in(5)).text, "ready");
  const auto start = Clock::now();
  const ChildExit s = child.stop(ChildProcess::Seconds{0.1});
  EXPECT_EQ(s.signal, SIGKILL) << s.describe();
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST(ChildProcess, DestructorStopsAHangingChild) {
  SubreaperScope reaper;
  pid_t pid = -1;
  const auto start = Clock::now();
  {
    ChildProcess::Options options;
    options.stop_grace = ChildProcess::Seconds{0.2};
    ChildProcess child("sleep 1000", options);
    pid = child.pid();
  }
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_TRUE(wait_until_gone(pid));
}

TEST(ChildProcess, InheritedStderrIsNotCapturedTeedIs) {
  ChildProcess::Options options;
  options.stderr_mode = ChildProcess::StderrMode::inherit;
  ChildProcess child("echo 'to the test log' >&2; echo ok", options);
  EXPECT_EQ(child.read_line(in(5)).text, "ok");
  child.stop();
  EXPECT_EQ(child.stderr_tail(), "");

  options.stderr_mode = ChildProcess::StderrMode::tee;
  ChildProcess teed("echo 'teed to the test log' >&2; echo ok", options);
  EXPECT_EQ(teed.read_line(in(5)).text, "ok");
  teed.stop();
  EXPECT_EQ(teed.stderr_tail(), "teed to the test log\n");
}

}  // namespace
}  // namespace sgdc::conformance::protocol