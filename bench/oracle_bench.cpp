// One step of the oracle at N = D = K = 8, 32, 64, 128: plain float32 and float64 (the
// yardsticks), the certified fast path, the 50-digit multiprecision step, the exact
// rational step, and expect() (certified values plus the error bounds). At layer sizes
// (N x D x K = 32 x 1024 x 1024 and 8 x 4096 x 4096) the yardsticks, the certified path
// and expect() only: the rational paths would take hours there. A heavy-ball momentum step
// and an AdamW step too, at every size, each beside the float32 step of the same optimizer.
// The certified path and expect() take the oracle's thread count as a fourth argument
// (set_oracle_threads; the Eigen steps use one thread).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>

#include "float_step.hpp"
#include "random_case.hpp"
#include "sgdc/reference/certified_step.hpp"
#include "sgdc/reference/exact_step.hpp"
#include "sgdc/reference/oracle.hpp"
#include "sgdc/reference/rounded_step.hpp"
#include "sgdc/reference/threads.hpp"

namespace sgdc::bench {
namespace {
using reference::certification_counters;
using reference::CertificationCounters;
using reference::certified_step;
using reference::evaluate_step;
using reference::expect;
using reference::HighPrecision;
using reference::Rational;
using reference::round_exact_step;
using reference::set_oracle_threads;

// N, D, K = range(0), range(1), range(2).
Case shaped(const benchmark::State& state) {
  return random_case(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                     static_cast<int>(state.range(2)));
}

void BM_Float32Step(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(float_step<float>(c));
}

void BM_Float64Step(benchmark::State& state) {
  const Case c = shaped(state);
  for (auto _ : state) benchmark::DoNotOptimize(float_step<double>(c));
}

// Sets the oracle's thread count to range(3) for one benchmark.
class OracleThreads {
 public:
  explicit OracleThreads(benchmark::State& state) {
    set_oracle_threads(static_cast<int>(state.range(3)));
    state.counters["threads"] = static_cast<double>(state.range(3));
  }
  ~OracleThreads() { set_oracle_threads(0); }
  OracleThreads(const OracleThreads&) = delete;
  OracleThreads& operator=(const OracleThreads&) = delete;
};

void BM_CertifiedStep(benchmark::State& state) {
  const Case c = shaped(state);
  const OracleThreads threads(state);
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
  const OracleThreads threads(state);
  for (auto _ : state) benchmark::DoNotOptimize(expect(c));
}

// The momentum case of random_case.hpp at the benchmark's shape.
Case momentum_case(const benchmark::State& state) {
  return random_momentum_case(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                              static_cast<int>(state.range(2)));
}

void BM_Float32MomentumStep(benchmark::State& state) {
  const Case c = momentum_case(state);
  for (auto _ : state) benchmark::DoNotOptimize(float_step<float>(c));
}

void BM_CertifiedMomentumStep(benchmark::State& state) {
  const Case c = momentum_case(state);
  const OracleThreads threads(state);
  for (auto _ : state) benchmark::DoNotOptimize(certified_step(c));
}

void BM_ExpectMomentum(benchmark::State& state) {
  const Case c = momentum_case(state);
  const OracleThreads threads(state);
  for (auto _ : state) benchmark::DoNotOptimize(expect(c));
}

// The AdamW case of random_case.hpp at the benchmark's shape.
Case adam_case(const benchmark::State& state) {
  return random_adam_case(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                          static_cast<int>(state.range(2)));
}

void BM_Float32AdamStep(benchmark::State& state) {
  const Case c = adam_case(state);
  for (auto _ : state) benchmark::DoNotOptimize(float_step<float>(c));
}

void BM_CertifiedAdamStep(benchmark::State& state) {
  const Case c = adam_case(state);
  const OracleThreads threads(state);
  const CertificationCounters before = certification_counters();
  for (auto _ : state) benchmark::DoNotOptimize(certified_step(c));
  const CertificationCounters after = certification_counters();
  state.counters["exact_fallbacks"] =
      static_cast<double>(after.exact_cases - before.exact_cases) / state.iterations();
  // The fraction of Adam's elements that its double words left to the MPFR intervals.
  state.counters["adam_by_mpfr"] =
      static_cast<double>(after.adam_by_mpfr - before.adam_by_mpfr) /
      static_cast<double>(std::max<std::uint64_t>(1, after.adam_elements - before.adam_elements));
}

void BM_ExpectAdam(benchmark::State& state) {
  const Case c = adam_case(state);
  const OracleThreads threads(state);
  for (auto _ : state) benchmark::DoNotOptimize(expect(c));
}

// The clipped case of random_case.hpp at the benchmark's shape.
Case clipped_case(const benchmark::State& state) {
  return random_clipped_case(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                             static_cast<int>(state.range(2)));
}

void BM_Float32ClippedStep(benchmark::State& state) {
  const Case c = clipped_case(state);
  for (auto _ : state) benchmark::DoNotOptimize(float_step<float>(c));
}

void BM_CertifiedClippedStep(benchmark::State& state) {
  const Case c = clipped_case(state);
  const OracleThreads threads(state);
  const CertificationCounters before = certification_counters();
  for (auto _ : state) benchmark::DoNotOptimize(certified_step(c));
  const CertificationCounters after = certification_counters();
  state.counters["exact_fallbacks"] =
      static_cast<double>(after.exact_cases - before.exact_cases) / state.iterations();
}

void BM_ExpectClipped(benchmark::State& state) {
  const Case c = clipped_case(state);
  const OracleThreads threads(state);
  for (auto _ : state) benchmark::DoNotOptimize(expect(c));
}

// The momentum case under FSDP2's bfloat16 stages (param_dtype bfloat16, float32
// reduction and master weights; docs/error-model.md, section 18), on 2 ranks.
void BM_ExpectStagedMomentum(benchmark::State& state) {
  Case c = momentum_case(state);
  c.num_shards = 2;
  reference::ErrorModel model;
  model.stages.param = reference::formats::bfloat16;
  const OracleThreads threads(state);
  for (auto _ : state) benchmark::DoNotOptimize(expect(c, model));
}

#define SGDC_SHAPES           \
  ->Args({8, 8, 8})           \
      ->Args({32, 32, 32})    \
      ->Args({64, 64, 64})    \
      ->Args({128, 128, 128}) \
      ->Unit(benchmark::kMicrosecond)
// The same with the oracle's threads: 1, and 2 where the case is split (N D K >= 2^17).
#define SGDC_SHAPES_THREADS           \
  ->Args({8, 8, 8, 1})                \
      ->Args({32, 32, 32, 1})         \
      ->Args({32, 64, 64, 1})         \
      ->Args({32, 64, 64, 2})         \
      ->Args({64, 64, 64, 1})         \
      ->Args({64, 64, 64, 2})         \
      ->Args({128, 128, 128, 1})      \
      ->Args({128, 128, 128, 2})      \
      ->Unit(benchmark::kMicrosecond) \
      ->MeasureProcessCPUTime()       \
      ->UseRealTime()
BENCHMARK(BM_Float32Step) SGDC_SHAPES;
BENCHMARK(BM_Float64Step) SGDC_SHAPES;
BENCHMARK(BM_CertifiedStep) SGDC_SHAPES_THREADS;
BENCHMARK(BM_Expect) SGDC_SHAPES_THREADS;
BENCHMARK(BM_Float32MomentumStep) SGDC_SHAPES;
BENCHMARK(BM_CertifiedMomentumStep) SGDC_SHAPES_THREADS;
BENCHMARK(BM_ExpectStagedMomentum) SGDC_SHAPES_THREADS;
BENCHMARK(BM_ExpectMomentum) SGDC_SHAPES_THREADS;
BENCHMARK(BM_Float32AdamStep) SGDC_SHAPES;
BENCHMARK(BM_CertifiedAdamStep) SGDC_SHAPES_THREADS;
BENCHMARK(BM_ExpectAdam) SGDC_SHAPES_THREADS;
BENCHMARK(BM_Float32ClippedStep) SGDC_SHAPES;
BENCHMARK(BM_CertifiedClippedStep) SGDC_SHAPES_THREADS;
BENCHMARK(BM_ExpectClipped) SGDC_SHAPES_THREADS;
BENCHMARK(BM_MultiprecisionStep) SGDC_SHAPES;
BENCHMARK(BM_ExactRationalStep) SGDC_SHAPES;
BENCHMARK(BM_ExactRoundedStep) SGDC_SHAPES;

// Layer sizes: wall time; the CPU column is the whole process's (worker threads too).
#define SGDC_LAYERS                   \
  ->Args({32, 1024, 1024})            \
      ->Args({8, 4096, 4096})         \
      ->ArgNames({"n", "d", "k"})     \
      ->Unit(benchmark::kMillisecond) \
      ->MeasureProcessCPUTime()       \
      ->UseRealTime()
#define SGDC_LAYERS_THREADS                  \
  ->Args({32, 1024, 1024, 1})                \
      ->Args({32, 1024, 1024, 2})            \
      ->Args({8, 4096, 4096, 1})             \
      ->Args({8, 4096, 4096, 2})             \
      ->ArgNames({"n", "d", "k", "threads"}) \
      ->Unit(benchmark::kMillisecond)        \
      ->MeasureProcessCPUTime()              \
      ->UseRealTime()
BENCHMARK(BM_Float32Step) SGDC_LAYERS;
BENCHMARK(BM_Float64Step) SGDC_LAYERS;
BENCHMARK(BM_CertifiedStep) SGDC_LAYERS_THREADS;
BENCHMARK(BM_Expect) SGDC_LAYERS_THREADS;
BENCHMARK(BM_Float32MomentumStep) SGDC_LAYERS;
BENCHMARK(BM_CertifiedMomentumStep) SGDC_LAYERS_THREADS;
BENCHMARK(BM_ExpectMomentum) SGDC_LAYERS_THREADS;
BENCHMARK(BM_ExpectStagedMomentum) SGDC_LAYERS_THREADS;
BENCHMARK(BM_Float32AdamStep) SGDC_LAYERS;
BENCHMARK(BM_CertifiedAdamStep) SGDC_LAYERS_THREADS;
BENCHMARK(BM_ExpectAdam) SGDC_LAYERS_THREADS;
BENCHMARK(BM_Float32ClippedStep) SGDC_LAYERS;
BENCHMARK(BM_CertifiedClippedStep) SGDC_LAYERS_THREADS;
BENCHMARK(BM_ExpectClipped) SGDC_LAYERS_THREADS;

}  // namespace
}  // namespace sgdc::bench

BENCHMARK_MAIN();
