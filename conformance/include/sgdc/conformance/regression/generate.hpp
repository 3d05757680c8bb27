#pragma once
/// \file
/// `fixtures generate`: random fixtures from a seed, the same bytes for the same
/// arguments (own draws from std::mt19937_64, whose sequence the C++ standard fixes).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sgdc/conformance/regression/fixture.hpp"
#include "sgdc/properties/declared_recipe.hpp"
#include "sgdc/reference/error_model.hpp"

namespace sgdc::conformance::regression {

/// How input magnitudes are distributed.
enum class Magnitudes {
  unit,          ///< approximately standard normal
  wide,          ///< log-uniform in [1e-3, 1e3], random signs
  extreme,       ///< log-uniform in [2^-60, 2^60], random signs
  cancellation,  ///< unit inputs, targets within a few ULPs of x W + b
  mixed,         ///< one of the above per case
};

/// Parses "unit", "wide", "extreme", "cancellation" or "mixed"; throws
/// std::invalid_argument otherwise.
Magnitudes parse_magnitudes(const std::string& text);
const char* to_string(Magnitudes m);

/// What to generate.
struct GenerateOptions {
  std::uint64_t seed = 1;
  int count = 10;
  Magnitudes magnitudes = Magnitudes::mixed;
  int max_dim = 6;  ///< n, d, k drawn from 1..max_dim unless fixed below
  std::optional<int> n, d, k;
  int max_shards = 4;  ///< num_shards drawn from 1..max_shards
  /// The optimizers drawn, one per case in turn of the draw; empty: the recipe's, or
  /// plain SGD alone (the files of earlier versions, byte for byte).
  std::vector<reference::Optimizer::Kind> optimizers;
  /// Hyperparameters drawn inside its ranges, its bias group, its even batches; every
  /// option of every optimizer is drawn (the suite's own builtins take them all).
  properties::DeclaredRecipe recipe;
  /// The arithmetic the fixtures' bounds assume: float32, or declared precision stages.
  reference::ErrorModel arithmetic{};
};

/// Fixtures number 0 .. count-1, named "seed-S-NNNN". Fixture i depends only on the
/// options and i.
std::vector<Fixture> generate_fixtures(const GenerateOptions& options);

}  // namespace sgdc::conformance::regression