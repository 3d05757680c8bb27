#include "sgdc/properties/runner.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <span>
#include <vector>

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

namespace {

// Case `index` of a run, with the run's fixed num_shards applied.
rc::Shrinkable<Case> draw_for_run(const Property& property, const RunOptions& options, int index) {
  rc::Shrinkable<Case> drawn = draw(property, options.seed, index);
  if (options.num_shards) {
    drawn = rc::shrinkable::map(std::move(drawn), [s = *options.num_shards](Case c) {
      c.num_shards = s;
      return c;
    });
  }
  return drawn;
}

}  // namespace

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
  // Cases drawn ahead for Implementation::prefetch, case `index` first, and their first
  // steps (computed once: a case can be large).
  const int window = property.first_step && !options.only_case ? impl.prefetch_window() : 0;
  std::deque<rc::Shrinkable<Case>> ahead;
  std::vector<Case> upcoming;
  for (int index = first; index <= last && report.cases < wanted; ++index) {
    while (static_cast<int>(ahead.size()) < std::max(window, 1) &&
           index + static_cast<int>(ahead.size()) <= last) {
      ahead.push_back(draw_for_run(property, options, index + static_cast<int>(ahead.size())));
      if (window > 0) upcoming.push_back(property.first_step(ahead.back().value()));
    }
    if (window > 0) {
      // No more than the run still needs: an answer nobody asks for is wasted work.
      const auto hinted = std::min<std::size_t>(upcoming.size(), wanted - report.cases);
      impl.prefetch(std::span<const Case>(upcoming).first(hinted));
      upcoming.erase(upcoming.begin());
    }
    rc::Shrinkable<Case> drawn = std::move(ahead.front());
    ahead.pop_front();
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
