// One step of the oracle at N = D = K = 8, 32, 64, 128: plain float32 and float64 (the
// yardsticks), the certified fast path, the 50-digit multiprecision step, the exact
// rational step, and expect() (certified values plus the error bounds).
#include <benchmark/benchmark.h>

#include "float_step.hpp"
#include "random_case.hpp"
#include "sgdc/reference/certified_step.hpp"
#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/rounded_step.hpp"

namespace sgdc::bench {
namespace {

Case shaped(const benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  return random_case(s, s, s);
}

void BM_Float32Step(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(float_step<float>(c));
}

void BM_Float64Step(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(float_step<double>(c));
}

void BM_CertifiedStep(benchmark::State& state) {
  const Case c = shaped(state);
  const CertificationCounters before = certification_counters();
  for (auto _ : state) benchmark::DoNotOptimize(certified_step(c));
  const CertificationCounters after = certification_counters();
  state.counters["exact_fallbacks"] =
      static_cast<double>(after.exact_cases - before.exact_cases) / state.iterations();
  state.counters["refined"] =
      static_cast<double>(after.refined_cases - before.refined_cases) / state.iterations();
}

void BM_MultiprecisionStep(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_step<HighPrecision>(c));
}

void BM_ExactRationalStep(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_step<Rational>(c));
}

void BM_ExactRoundedStep(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(round_exact_step(c));
}

void BM_Expect(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(expect(c));
}

#define SGDC_SHAPES ->Arg(8)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_Float32Step) SGDC_SHAPES;
BENCHMARK(BM_Float64Step) SGDC_SHAPES;
BENCHMARK(BM_CertifiedStep) SGDC_SHAPES;
BENCHMARK(BM_Expect) SGDC_SHAPES;
BENCHMARK(BM_MultiprecisionStep) SGDC_SHAPES;
BENCHMARK(BM_ExactRationalStep) SGDC_SHAPES;
BENCHMARK(BM_ExactRoundedStep) SGDC_SHAPES;

}  // namespace
}  // namespace sgdc::bench

BENCHMARK_MAIN();
