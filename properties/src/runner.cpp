#include "sgdc/properties/runner.hpp"

#include <algorithm>
#include <chrono>

namespace sgdc {

namespace {

Counterexample shrink(const Property& p, Implementation& impl, rc::Shrinkable<Case> failing,
                      std::string message, int index, int budget) {
  Counterexample cx;
  cx.case_index = index;
  cx.original = failing.value();
  bool progressed = true;
  while (progressed && budget > 0) {
    progressed = false;
    auto shrinks = failing.shrinks();
    while (auto candidate = shrinks.next()) {
      if (--budget < 0) break;
      Observations ignored;
      Verdict v;
      try {
        v = p.check(impl, candidate->value(), ignored);
      } catch (const ImplementationFault& f) {
        if (f.fatal()) {
          // Keep the smallest failure found so far; the fault is reported beside it.
          cx.fault_while_shrinking = f.what();
          budget = 0;
          break;
        }
        v = Verdict::fail(f.what());
      }
      if (v.kind == Verdict::Kind::fail) {
        failing = std::move(*candidate);
        message = std::move(v.message);
        ++cx.shrink_steps;
        progressed = true;
        break;
      }
    }
  }
  cx.shrunk = failing.value();
  cx.message = std::move(message);
  return cx;
}

}  // namespace

rc::Shrinkable<Case> draw(const Property& property, std::uint64_t seed, int index) {
  rc::Random random(seed);
  rc::Random mine = random;
  for (int i = 0; i <= index; ++i) mine = random.split();
  return property.generator(mine, std::min(index, 100));
}

PropertyReport run_property(const Property& property, Implementation& impl,
                            const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PropertyReport report;
  report.property = property.name;
  report.applicable = property.applies(impl.declaration());
  if (!report.applicable) return report;

  const int first = options.only_case.value_or(0);
  const int wanted = options.only_case ? 1 : options.cases;
  // A property that discards (e.g. indistinguishable losses) may draw up to 10x.
  const int last = options.only_case ? first : first + 10 * wanted;
  for (int index = first; index <= last && report.cases < wanted; ++index) {
    rc::Shrinkable<Case> drawn = draw(property, options.seed, index);
    if (options.num_shards) {
      drawn = rc::shrinkable::map(std::move(drawn), [s = *options.num_shards](Case c) {
        c.num_shards = s;
        return c;
      });
    }
    try {
      const Verdict v = property.check(impl, drawn.value(), report.observations);
      if (v.kind == Verdict::Kind::discard) {
        ++report.discarded;
        continue;
      }
      ++report.cases;
      if (options.progress) options.progress(report.cases);
      if (v.kind == Verdict::Kind::fail) {
        report.passed = false;
        report.counterexample =
            shrink(property, impl, drawn, v.message, index, options.shrink_budget);
        if (report.counterexample->fault_while_shrinking) {
          report.fault = "while shrinking: " + *report.counterexample->fault_while_shrinking;
          report.fatal_fault = true;
        }
        break;
      }
    } catch (const ImplementationFault& f) {
      report.passed = false;
      report.fault = "case " + std::to_string(index) + ": " + f.what();
      report.fatal_fault = f.fatal();
      break;
    }
  }
  if (report.cases == 0 && report.passed && !report.fault) {
    report.passed = false;
    report.fault = "no case could be used: every generated case was discarded";
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace sgdc
