#pragma once
/// \file
/// A property: a generator of cases and a check of one implementation on one case.

#include <rapidcheck.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sgdc/properties/implementation.hpp"
#include "sgdc/properties/observations.hpp"

namespace sgdc {

/// What one evaluation of a property found.
struct Verdict {
  enum class Kind { pass, fail, discard };
  Kind kind = Kind::pass;
  std::string message;  ///< for fail: everything needed to understand it; for discard: why

  static Verdict pass() { return {}; }
  static Verdict fail(std::string why) { return {Kind::fail, std::move(why)}; }
  static Verdict discard(std::string why) { return {Kind::discard, std::move(why)}; }
};

/// One property of a correct step, checkable against any Implementation.
struct Property {
  std::string name;         ///< e.g. "accuracy"
  std::string description;  ///< one sentence: what a pass means
  /// Whether the property applies to an implementation declaring this (e.g. the step
  /// counter property needs `step_counter`); when not, it is reported as not applicable.
  std::function<bool(const Declaration&)> applies;
  rc::Gen<Case> generator;
  /// Checks one case; throws ImplementationFault when the implementation breaks.
  std::function<Verdict(Implementation&, const Case&, Observations&)> check;
  /// The case check() steps first for a drawn case, when it always steps one before
  /// anything else (the runner hints these to Implementation::prefetch); empty when not.
  std::function<Case(const Case&)> first_step = {};
};

/// Every property, in report order.
const std::vector<Property>& properties();

/// The property named `name`; throws std::invalid_argument listing the names otherwise.
const Property& find_property(std::string_view name);

}  // namespace sgdc
