// Protocol round trip per case against the NumPy adapter: the suite encodes a case,
// the adapter decodes it, runs the NumPy step, encodes the result, and the suite
// decodes and validates it. The adapter (bench/timed_adapter.py) times its own step()
// in the same run; counters: round_trip_us and step_us per case, and
// overhead_pct = (round trip - step) / round trip. The Null benchmarks run the adapter
// with --null (a step that computes nothing): the protocol's cost alone. The Ahead
// benchmarks keep 8 cases in flight, as a conformance run does: round_trip_us is then
// the time per case of the stream.
//
// SGDC_BENCH_PYTHON names the interpreter (default the project's .venv/bin/python, which
// scripts/install-deps.sh makes, with NumPy and the adapter kit).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "random_case.hpp"
#include "sgdc/conformance/protocol/adapter.hpp"

namespace sgdc::bench {
namespace {

namespace protocol = conformance::protocol;
using properties::StepOutcome;

std::string adapter_command(bool null) {
  const char* python = std::getenv("SGDC_BENCH_PYTHON");
  return std::string(python != nullptr ? python : SGDC_SOURCE_DIR "/.venv/bin/python") +
         " " SGDC_SOURCE_DIR "/bench/timed_adapter.py" + (null ? " --null" : "");
}

// Seconds the adapter spent in step() over `cases` cases, from its last stderr line.
bool step_seconds(const std::string& stderr_tail, double& seconds, double& cases) {
  static const std::regex line(R"(timed-step: (\d+) cases, ([0-9.eE+-]+) s in step\(\))");
  std::smatch m;
  if (!std::regex_search(stderr_tail, m, line)) return false;
  cases = std::stod(m[1]);
  seconds = std::stod(m[2]);
  return true;
}

// Arrays as raw payload bytes (the binary extension, what the suite negotiates) or as
// base64 inside the JSON line (protocol v1 as published).
// With `ahead` > 1, cases go as the runner sends them: `ahead` at a time through
// step_batch, sent before their answers are read (AdapterOptions::window), so that up to
// `ahead` are in flight.
void round_trips(benchmark::State& state, protocol::ArrayEncoding arrays, bool null,
                 int ahead = 1) {
  const int s = static_cast<int>(state.range(0));
  const Case c = random_case(s, s, s);
  protocol::AdapterOptions options;
  options.offer = arrays;
  options.window = ahead;
  protocol::ProtocolAdapter adapter(adapter_command(null), options);
  if (adapter.array_encoding() != arrays) state.SkipWithError("the adapter chose another encoding");
  if (adapter.max_in_flight() < ahead) state.SkipWithError("the adapter takes fewer cases ahead");
  const std::vector<Case> batch(static_cast<std::size_t>(ahead), c);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (const StepOutcome& o : adapter.step_batch(batch))
      if (!o.result) state.SkipWithError("the adapter rejected the case");
  }
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  adapter.close();
  double seconds = 0, cases = 0;
  if (!step_seconds(adapter.stderr_tail(), seconds, cases) || cases == 0) {
    state.SkipWithError("the adapter did not report its step time");
    return;
  }
  const double round_trip =
      wall.count() / (static_cast<double>(state.iterations()) * static_cast<double>(ahead));
  const double step = seconds / cases;
  state.counters["round_trip_us"] = round_trip * 1e6;
  state.counters["step_us"] = step * 1e6;
  state.counters["overhead_pct"] = 100 * (round_trip - step) / round_trip;
}

// N = D = K of every benchmark here.
void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(8)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
}

void BM_NumpyRoundTripBinary(benchmark::State& state) {
  round_trips(state, protocol::ArrayEncoding::binary, false);
}
void BM_NumpyRoundTripBase64(benchmark::State& state) {
  round_trips(state, protocol::ArrayEncoding::base64, false);
}
void BM_NumpyAheadBinary(benchmark::State& state) {
  round_trips(state, protocol::ArrayEncoding::binary, false, 8);
}
void BM_NullAheadBinary(benchmark::State& state) {
  round_trips(state, protocol::ArrayEncoding::binary, true, 8);
}
void BM_NullRoundTripBinary(benchmark::State& state) {
  round_trips(state, protocol::ArrayEncoding::binary, true);
}
void BM_NullRoundTripBase64(benchmark::State& state) {
  round_trips(state, protocol::ArrayEncoding::base64, true);
}

BENCHMARK(BM_NumpyRoundTripBinary)->Apply(sizes);
BENCHMARK(BM_NumpyRoundTripBase64)->Apply(sizes);
BENCHMARK(BM_NumpyAheadBinary)->Apply(sizes);
BENCHMARK(BM_NullAheadBinary)->Apply(sizes);
BENCHMARK(BM_NullRoundTripBinary)->Apply(sizes);
BENCHMARK(BM_NullRoundTripBase64)->Apply(sizes);

}  // namespace
}  // namespace sgdc::bench

BENCHMARK_MAIN();
