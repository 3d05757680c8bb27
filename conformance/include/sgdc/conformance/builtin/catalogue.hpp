#pragma once
/// \file
/// The built-in implementations, selected by name: the embedded default `float32`,
/// correct variants the suite must accept, and mutants it must reject.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sgdc/conformance/builtin/recipe.hpp"
#include "sgdc/properties/implementation.hpp"

namespace sgdc::conformance::builtin {

/// Whether the suite must accept or reject a built-in.
enum class Kind { reference, variant, mutant };

/// One entry of the catalogue.
struct Entry {
  std::string name;  ///< selected as `builtin:NAME`
  Kind kind;
  std::string description;  ///< what it computes; for mutants, the real-world mistake
  Recipe recipe;
  bool sharded = false;  ///< declares itself sharded (results may depend on num_shards)
  reference::ErrorModel arithmetic{};  ///< what it declares of its arithmetic
  /// For mutants: words of the sentence that names the bug's class in a report (a
  /// `suspected:` line, or the failing property's own verdict); empty where no report
  /// names a class (`sgd-conformance mutants --suspects` tabulates both).
  std::string named_by;
  /// The recipe it declares (properties::DeclaredRecipe): a variant correct only inside one.
  properties::DeclaredRecipe declared{};
  /// Adagrad, where it declares it (the recipe then runs Adagrad alone).
  std::optional<properties::AdagradSupport> adagrad{};
};

/// Every built-in, reference first, then variants, then mutants.
const std::vector<Entry>& catalogue();

/// Finds an entry by name (without the `builtin:` prefix); throws std::invalid_argument
/// listing the known names when there is none.
const Entry& find(std::string_view name);

/// An in-process implementation running `entry`'s recipe.
std::unique_ptr<properties::Implementation> make(const Entry& entry);

const char* to_string(Kind kind);

}  // namespace sgdc::conformance::builtin