#pragma once
/// \file
/// A declared recipe (sgdc/properties/declared_recipe.hpp) as JSON: the hello reply's
/// "recipe" field and the file of `run --recipe FILE` are the same object
/// (docs/spec/protocol.md, "The declared recipe"):
///
///     {"optimizers": ["adam"],
///      "hyperparameters": {"lr": 0.0003, "b1": 0.9, "weight_decay": [0, 0.1]},
///      "even_batches": true}
///
/// Every key is optional; a hyperparameter is one number (fixed) or [lo, hi].

#include <nlohmann/json.hpp>
#include <string>

#include "sgdc/properties/declared_recipe.hpp"

namespace sgdc::conformance::protocol {

/// Decodes `j` strictly. Throws std::invalid_argument naming the field ("recipe.lr: ...")
/// for anything else: an unknown key, optimizer or hyperparameter, a value that is not a
/// number or a pair of numbers, or one that is not a finite float32. Numbers are read as
/// the float32 nearest to them.
properties::DeclaredRecipe decode_recipe(const nlohmann::json& j);

/// The recipe as decode_recipe reads it (only what is declared).
nlohmann::ordered_json encode_recipe(const properties::DeclaredRecipe& r);

/// Reads and decodes a recipe file. Throws std::invalid_argument naming the file and the
/// problem.
properties::DeclaredRecipe read_recipe_file(const std::string& path);

}  // namespace sgdc::conformance::protocol
