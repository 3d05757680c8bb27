#include "sgdc/properties/runner.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "sgdc/reference/threads.hpp"

namespace sgdc::properties {

namespace {

// "case 7: adapter exited ..." for the run's case 7; an adapter's own numbering of the
// messages it broke on ("case 12: ..." from the protocol) is kept as its message id.
std::string fault_at(const std::string& where, const std::string& what) {
  std::size_t digits = 5;
  while (digits < what.size() && std::isdigit(static_cast<unsigned char>(what[digits]))) ++digits;
  if (what.starts_with("case ") && digits > 5 && what.compare(digits, 2, ": ") == 0)
    return where + " (message id " + what.substr(5, digits - 5) + "): " + what.substr(digits + 2);
  return where + ": " + what;
}

// The most drawn cases a runner batch grows to for an implementation's preference.
constexpr int max_batch_cases = 64;

// Drawn cases evaluated side by side: the first batch holds this many per thread, and
// each next one twice the last, up to `most_side_by_side` (or the first, if larger).
// Each batch starts its threads and waits for its slowest case: a `run --cases 2000` on
// 2 threads took 4.06 s in batches of 64 and 3.56 s in batches of 512 (one core: 6.6 s).
// Starting from one case per thread, a property that fails at its first cases evaluates
// few beyond them: the kill matrix (`mutants`, seeds 1-4) took 27 s of wall and 44 s of
// CPU on 2 threads from 32 per thread, 21 s and 33 s from one, with `run --cases 2000`
// the same 1.65 s (docs/benchmarks.md, "Every core for the properties").
constexpr int cases_per_thread = 1;
constexpr int most_side_by_side = 512;

Counterexample shrink(const Property& p, Implementation& impl, const RunOptions& options,
                      rc::Shrinkable<reference::Case> failing, Judgement failure,
                      Observations observed, int index, int budget) {
  Counterexample cx;
  cx.case_index = index;
  cx.original = failing.value();
  std::string message = std::move(failure.message);
  std::vector<std::string> suspects = std::move(failure.suspects);
  bool progressed = true;
  while (progressed && budget > 0) {
    progressed = false;
    auto shrinks = failing.shrinks();
    while (auto candidate = shrinks.next()) {
      if (--budget < 0) break;
      Observations seen;
      Judgement j;
      try {
        j = evaluate(p, impl, candidate->value(), seen);
      } catch (const ImplementationFault& f) {
        // Keep the smallest failure found so far; the fault is reported beside it.
        cx.fault_while_shrinking = f.what();
        budget = 0;
        break;
      }
      // A candidate failing only as expected is not the failure being shrunk.
      if (j.kind == Judgement::Kind::fail && !is_expected_failure(options, j) &&
          keeps_suspects_apart(suspects, j.suspects)) {
        failing = std::move(*candidate);
        message = std::move(j.message);
        suspects = std::move(j.suspects);
        observed = std::move(seen);
        ++cx.shrink_steps;
        progressed = true;
        break;
      }
    }
  }
  cx.shrunk = failing.value();
  cx.message = std::move(message);
  cx.suspects = std::move(suspects);
  cx.observations = std::move(observed);
  return cx;
}

// Case `index` of a run, with the run's fixed num_shards applied.
rc::Shrinkable<reference::Case> draw_for_run(const Property& property, const CaseSpace& space,
                                             const RunOptions& options, int index) {
  rc::Shrinkable<reference::Case> drawn = draw(property, space, options.seed, index);
  if (options.num_shards) {
    drawn = rc::shrinkable::map(std::move(drawn), [s = *options.num_shards](reference::Case c) {
      c.num_shards = s;
      return c;
    });
  }
  return drawn;
}

// Drawn cases of a run, in index order, with their verdicts.
struct Batch {
  std::vector<rc::Shrinkable<reference::Case>> drawn;
  std::vector<reference::Case> cases;
  std::vector<Observations> obs;
  std::vector<Judgement> judgements;
};

// Cases first .. first + count - 1, drawn in order and evaluated together: each round of
// their steps goes to one step_batch call.
Batch together(const Property& property, Implementation& impl, const CaseSpace& space,
               const RunOptions& options, int first, int count) {
  Batch b;
  for (int i = 0; i < count; ++i) {
    b.drawn.push_back(draw_for_run(property, space, options, first + i));
    b.cases.push_back(b.drawn.back().value());
  }
  b.obs.resize(b.cases.size());
  b.judgements = evaluate_together(property, impl, b.cases, b.obs);
  return b;
}

// The same cases, each drawn and evaluated alone, side by side on the oracle's threads
// (Implementation::concurrent_steps). Case i depends only on the seed and i, and its
// judgement only on its own steps' outcomes, so every value is what together() gives; a
// fault is reported at the lowest case that met one. Drawing is spread too (case i is a
// pure function of the seed and i), so that only the fold stays on one thread.
// A case large enough for the oracle to split its loops (a user's layer shape) is left
// for after, evaluated alone on every thread as before: one such case's expectations
// take gigabytes, which side by side would multiply.
Batch side_by_side(const Property& property, Implementation& impl, const CaseSpace& space,
                   const RunOptions& options, int first, int count) {
  const auto n = static_cast<std::size_t>(count);
  std::vector<std::optional<rc::Shrinkable<reference::Case>>> drawn(n);
  std::vector<std::optional<Judgement>> judged(n);
  std::vector<std::optional<std::string>> faults(n);
  Batch b;
  b.cases.resize(n);
  b.obs.resize(n);
  auto run = [&](std::size_t i) {
    try {
      judged[i] = evaluate(property, impl, b.cases[i], b.obs[i]);
    } catch (const ImplementationFault& f) {
      faults[i] = f.what();
    }
  };
  std::vector<char> large(n, 0);
  reference::for_each_index(n, [&](std::size_t i) {
    drawn[i].emplace(draw_for_run(property, space, options, first + static_cast<int>(i)));
    b.cases[i] = drawn[i]->value();
    const reference::Case& c = b.cases[i];
    large[i] = reference::splits_case(c.n, c.d, c.k);
    if (!large[i]) run(i);
  });
  for (std::size_t i = 0; i < n; ++i)
    if (large[i]) run(i);
  for (std::size_t i = 0; i < n; ++i)
    if (faults[i]) throw ImplementationFault(*faults[i], i);
  b.drawn.reserve(n);
  b.judgements.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    b.drawn.push_back(std::move(*drawn[i]));
    b.judgements.push_back(std::move(*judged[i]));
  }
  return b;
}

}  // namespace

bool is_expected_failure(const RunOptions& options, const Judgement& j) {
  if (!options.expected || j.kind != Judgement::Kind::fail) return false;
  if (j.elements.empty()) return options.expected(j.message);
  const std::string head = j.message.substr(0, j.message.find('\n'));
  return std::all_of(j.elements.begin(), j.elements.end(), [&](const std::string& element) {
    return options.expected(head + "\n" + element);
  });
}

bool keeps_suspects_apart(const std::vector<std::string>& current,
                          const std::vector<std::string>& candidate) {
  if (current.empty()) return true;
  return !candidate.empty() && candidate.size() <= current.size();
}

CaseSpace case_space(const Declaration& declaration, const RunOptions& options) {
  CaseSpace space;
  space.counter = declaration.counter;
  space.pool = shape_pool(options.seed, options.shapes);
  space.momentum = declaration.capabilities.momentum;
  space.adam = declaration.capabilities.adam;
  space.adagrad = declaration.capabilities.adagrad;
  space.shapes = options.shapes;
  space.recipe = declaration.recipe;
  // Drawn within the declared most shards: an implementation of S ranks can pass every
  // property, placement included (protocol 1.9).
  if (const int most = declaration.capabilities.max_shards; most > 0)
    space.max_shards = std::min(space.max_shards, most);
  space.num_shards = options.num_shards;
  return space;
}

rc::Shrinkable<reference::Case> draw(const Property& property, const CaseSpace& space,
                                     std::uint64_t seed, int index) {
  rc::Random random(seed);
  rc::Random mine = random;
  for (int i = 0; i <= index; ++i) mine = random.split();
  return property.generator(space)(mine, std::min(index, 100));
}

PropertyReport run_property(const Property& property, Implementation& impl,
                            const RunOptions& options, const std::function<void(int)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  PropertyReport report;
  report.property = property.name;
  report.applicable = property.applies(impl.declaration());
  if (!report.applicable) return report;

  const CaseSpace space = case_space(impl.declaration(), options);
  const int first = options.only_case.value_or(0);
  const int wanted = options.only_case ? 1 : options.cases;
  // A property that discards (e.g. indistinguishable losses) may draw up to 10x.
  const int last = options.only_case ? first : first + 10 * wanted;
  // Evaluated side by side (side_by_side), batches grow (see cases_per_thread). What is
  // judged and reported never depends on the batch: it is folded below in index order,
  // up to the first failure.
  const int threads = impl.concurrent_steps() ? reference::oracle_threads() : 1;
  int batch = std::max({1, options.batch, threads > 1 ? cases_per_thread * threads : 1});
  const int most_batch = threads > 1 ? std::max(batch, most_side_by_side) : batch;
  int index = first;
  while (index <= last && report.cases < wanted && report.passed && !report.fault) {
    // The next cases, no more than the run still needs: each is stepped in one batch.
    const int count = std::min({batch, wanted - report.cases, last - index + 1});
    batch = std::min(2 * batch, most_batch);
    Batch b;
    try {
      b = threads > 1 ? side_by_side(property, impl, space, options, index, count)
                      : together(property, impl, space, options, index, count);
    } catch (const ImplementationFault& f) {
      report.passed = false;
      report.broke = true;
      report.fault =
          f.position()
              ? fault_at("case " + std::to_string(index + static_cast<int>(*f.position())),
                         f.what())
              : fault_at("cases " + std::to_string(index) + "-" + std::to_string(index + count - 1),
                         f.what());
      break;
    }
    // In index order, up to the first failure: as if each had run alone.
    for (int i = 0; i < count; ++i, ++index) {
      const Judgement& j = b.judgements[i];
      if (j.kind == Judgement::Kind::discard) {
        ++report.discarded;
        auto& reasons = report.discard_reasons;
        auto known = std::find_if(reasons.begin(), reasons.end(),
                                  [&](const auto& r) { return r.first == j.message; });
        if (known == reasons.end())
          reasons.emplace_back(j.message, 1);
        else
          ++known->second;
        continue;
      }
      report.observations.merge(b.obs[i]);
      report.exercised.add(b.cases[i]);
      ++report.cases;
      if (progress) progress(report.cases);
      if (is_expected_failure(options, j)) {
        ++report.expected_failures;
        if (!report.first_expected) {
          // One line: the message's first, and the first failing element.
          std::string line = j.message.substr(0, j.message.find('\n'));
          if (!j.elements.empty()) line += " " + j.elements.front();
          report.first_expected.emplace(index, std::move(line));
        }
      } else if (j.kind == Judgement::Kind::fail) {
        report.passed = false;
        report.counterexample =
            shrink(property, impl, options, b.drawn[i], j, b.obs[i], index, options.shrink_budget);
        if (report.counterexample->fault_while_shrinking) {
          report.fault = "while shrinking: " + *report.counterexample->fault_while_shrinking;
          report.broke = true;
        }
        break;
      }
      if (report.cases == wanted) {
        ++index;
        break;
      }
    }
  }
  if (report.cases == 0 && report.passed && !report.fault) {
    report.passed = false;
    report.fault = "no case could be used: every generated case was discarded";
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace sgdc::properties
