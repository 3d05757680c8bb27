// Protocol round trip per case against the NumPy adapter: the suite encodes a case,
// the adapter decodes it, runs the NumPy step, encodes the result, and the suite
// decodes and validates it. bench/numpy_step_inprocess.py times the same NumPy step
// without the protocol; the difference is the protocol's overhead.
//
// SGDC_BENCH_PYTHON names the interpreter (default /usr/bin/python3, which has
// Debian's NumPy).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "random_case.hpp"
#include "sgdc/conformance/protocol/adapter.hpp"

namespace sgdc::bench {
namespace {

std::string adapter_command() {
  const char* python = std::getenv("SGDC_BENCH_PYTHON");
  return std::string(python != nullptr ? python : "/usr/bin/python3") +
         " " SGDC_SOURCE_DIR "/conformance/python/adapters/numpy_step.py";
}

void BM_NumpyRoundTrip(benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  const Case c = random_case(s, s, s);
  protocol::ProtocolAdapter adapter(adapter_command(), 60.0, 60.0);
  for (auto _ : state) {
    const StepOutcome o = adapter.step(c);
    if (!o.result) state.SkipWithError("the adapter rejected the case");
  }
  adapter.close();
}

BENCHMARK(BM_NumpyRoundTrip)
    ->Arg(8)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(1.0);

}  // namespace
}  // namespace sgdc::bench

BENCHMARK_MAIN();
