// Property cases per second in process: every property of the catalogue run against
// the built-in float32 step (cases of N, D, K <= 12, the catalogue's generators), each
// case's oracle included. One iteration = 100 cases of every property.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

#include "sgdc/conformance/builtin/catalogue.hpp"
#include "sgdc/properties/property.hpp"
#include "sgdc/properties/runner.hpp"

namespace sgdc::bench {
namespace {

namespace builtin = conformance::builtin;
using properties::Property;

void BM_PropertyCases(benchmark::State& state) {
  const std::unique_ptr<properties::Implementation> impl = builtin::make(builtin::find("float32"));
  std::int64_t cases = 0;
  std::uint64_t seed = 1;
  for (auto _ : state) {
    for (const Property& p : properties::all_properties()) {
      if (!p.applies(impl->declaration())) continue;
      properties::RunOptions options;
      options.cases = 100;
      options.seed = seed;
      const properties::PropertyReport r = properties::run_property(p, *impl, options);
      if (!r.passed) state.SkipWithError("a property failed");
      cases += r.cases + r.discarded;
    }
    ++seed;
  }
  state.counters["cases_per_second"] =
      benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_PropertyCases)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace sgdc::bench

BENCHMARK_MAIN();
