#pragma once
/// \file
/// Declared precision stages (sgdc/reference/error_model.hpp, `Stages`) as JSON: the
/// hello reply's "precision" field, the JSON report's `implementation.precision` and a
/// fixture's `arithmetic.precision` are the same object, every stage by name:
///
///     {"param_dtype": "bfloat16", "reduce_dtype": "float32", "master_dtype": "float32"}

#include <nlohmann/json.hpp>

#include "sgdc/reference/error_model.hpp"

namespace sgdc::conformance::protocol {

/// Every stage of `s` by name, in reference::stage_fields' order.
nlohmann::ordered_json encode_precision(const reference::Stages& s);

}  // namespace sgdc::conformance::protocol
