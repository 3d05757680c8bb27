#pragma once
/// \file
/// A property: a generator of cases, a plan of the steps a drawn case needs, and a judge of
/// their outcomes. Properties never step an implementation themselves: the runner owns all
/// stepping and hands the planned steps of many cases to Implementation::step_batch.

#include <rapidcheck.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sgdc/properties/generators.hpp"
#include "sgdc/properties/implementation.hpp"
#include "sgdc/properties/observations.hpp"
#include "sgdc/reference/expectation.hpp"

namespace sgdc::properties {

/// The steps a property needs for one drawn case, or why it cannot use the case.
struct Plan {
  std::vector<reference::Case> steps;  ///< to be stepped, in this order
  std::string discard;                 ///< not empty: the case is not usable, and why

  static Plan step(std::vector<reference::Case> steps) { return {std::move(steps), {}}; }
  static Plan skip(std::string why) { return {{}, std::move(why)}; }
};

/// A property's finding on one drawn case.
struct Judgement {
  enum class Kind {
    pass,
    fail,
    discard,  ///< the case could not be used (e.g. indistinguishable outcomes)
    more,     ///< step `more` too, then judge again with every outcome so far
  };
  Kind kind = Kind::pass;
  std::string message;  ///< for fail: everything needed to understand it; for discard: why
  std::vector<reference::Case> more;
  /// For fail: the bug classes the numbers point to (diagnosis.hpp), as the message names
  /// them. Shrinking keeps a case that tells them apart (runner.hpp).
  std::vector<std::string> suspects;
  /// For a fail about output elements: each failing element on its own line, every one
  /// (the message lists only the first few). An expected failure is matched element by
  /// element (RunOptions::expected).
  std::vector<std::string> elements;

  static Judgement pass() { return {}; }
  static Judgement fail(std::string why, std::vector<std::string> suspects = {},
                        std::vector<std::string> elements = {}) {
    return {Kind::fail, std::move(why), {}, std::move(suspects), std::move(elements)};
  }
  static Judgement discard(std::string why) { return {Kind::discard, std::move(why), {}, {}, {}}; }
  static Judgement then(std::vector<reference::Case> steps) {
    return {Kind::more, {}, std::move(steps), {}, {}};
  }
};

/// What a property may consult while it plans and judges one drawn case: the declaration,
/// and the oracle, whose expectations are kept for the case's whole evaluation.
class Context {
 public:
  explicit Context(const Declaration& declaration) : declaration_(declaration) {}
  const Declaration& declaration() const { return declaration_; }
  /// reference::expect(c) under the declared arithmetic, computed once per distinct case
  /// (once in the process while a SharedExpectations lives).
  const reference::Expectation& expect(const reference::Case& c);

 private:
  const Declaration& declaration_;
  // Shared: a live SharedExpectations may hold the same result for other contexts.
  std::vector<std::pair<reference::Case, std::shared_ptr<const reference::Expectation>>>
      expectations_;
};

/// One property of a correct step, checkable against any Implementation.
struct Property {
  std::string name;         ///< e.g. "accuracy"
  std::string description;  ///< one sentence: what a pass means
  /// Whether the property applies to an implementation declaring this (e.g. the step
  /// counter property needs `step_counter`); when not, it is reported as not applicable.
  std::function<bool(const Declaration&)> applies;
  /// The cases it draws, within `space`.
  std::function<rc::Gen<reference::Case>(const CaseSpace& space)> generator;
  /// The steps the drawn case needs.
  std::function<Plan(Context&, const reference::Case& drawn)> plan;
  /// The finding, given the outcomes of every step planned so far (the plan's, then those
  /// asked for by earlier `more` judgements), in order. Records what it measured in `obs`.
  std::function<Judgement(Context&, const reference::Case& drawn,
                          std::span<const StepOutcome> outcomes, Observations& obs)>
      judge;
};

/// Every property, in report order.
const std::vector<Property>& all_properties();

/// The property named `name`; throws std::invalid_argument listing the names otherwise.
const Property& find_property(std::string_view name);

/// Plans, steps and judges one case alone (the runner evaluates many together; shrinking
/// and replays use this). Throws ImplementationFault when the implementation breaks.
Judgement evaluate(const Property& property, Implementation& impl, const reference::Case& drawn,
                   Observations& obs);

/// Plans, steps and judges several drawn cases together: each round's steps of every case
/// go to one step_batch call. Returns one judgement per case (none of kind `more`), and
/// records each case's observations in `obs[i]`. Throws ImplementationFault when the
/// implementation breaks, with `position` the index of the drawn case it broke on, when
/// known.
std::vector<Judgement> evaluate_together(const Property& property, Implementation& impl,
                                         std::span<const reference::Case> drawn,
                                         std::span<Observations> obs);

}  // namespace sgdc::properties
