#pragma once
/// \file
/// What a property's judged cases exercised: how many ran each optimizer and option, and
/// the range of each drawn hyperparameter, so that a report says what a pass covers.

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sgdc/reference/case.hpp"
#include "sgdc/reference/hyperparameters.hpp"

namespace sgdc::properties {

struct Declaration;

/// What a case is counted by: the case, and what costs a pass over it, measured once.
struct CaseFacts {
  const reference::Case& c;
  /// With clipping, whether the clip factor is below 1 (from the gradients' norm in
  /// double: a report, not a verdict; a case at the boundary may be counted either way).
  std::optional<bool> clip_active;
  explicit CaseFacts(const reference::Case& c);
};

/// One option a case may exercise, in report order (the table in exercised.cpp).
struct ExercisedOption {
  const char* name;  ///< e.g. "nesterov", "decay decoupled", "carried state"
  bool (*in)(const CaseFacts&);
};

/// The options counted, in report order.
const std::vector<ExercisedOption>& exercised_options();

/// Counts over the judged cases of one property.
struct Exercised {
  int cases = 0;
  std::vector<int> counts = std::vector<int>(exercised_options().size(), 0);
  /// Smallest and largest finite value drawn of each hyperparameter (indexed as
  /// reference::hyperparameters) over the cases whose optimizer takes it.
  std::array<std::optional<std::pair<float, float>>, reference::hyperparameters.size()> ranges{};
  /// The same for the bias group's lr and weight decay, where a case has them, and for
  /// the clipping's max_norm.
  std::array<std::optional<std::pair<float, float>>, 3> bias_group_ranges{};

  /// Every drawn range by the name reports give it, in report order: the
  /// hyperparameters', then "bias_group.lr", "bias_group.weight_decay" and
  /// "clipping.max_norm".
  std::vector<std::pair<std::string, std::pair<float, float>>> drawn() const;

  void add(const reference::Case& c);
  void merge(const Exercised& other);
  /// "sgd 34, momentum 33, nesterov 8, ...; lr [1e-09, 95.3], ..." (options never seen left
  /// out).
  std::string summary() const;
};

/// What `d` declares that `e` never exercised, one warning each ("no case ran Nesterov
/// momentum, which the implementation declares").
std::vector<std::string> unexercised(const Exercised& e, const Declaration& d);

}  // namespace sgdc::properties
