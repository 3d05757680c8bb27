#include "sgdc/conformance/protocol/recipe_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "text.hpp"

namespace sgdc::conformance::protocol {

namespace {

using json = nlohmann::json;
using detail::show_json;

[[noreturn]] void bad_field(const std::string& field, const std::string& why) {
  throw std::invalid_argument(fmt::format("recipe.{}: {}", field, why));
}

// A number, read as the float32 nearest to it, as a framework reads a Python float into
// a float32 step (0.0003 is the float32 0.000300000014).
float nearest_float(const json& v, const std::string& field) {
  if (!v.is_number()) bad_field(field, fmt::format("is not a number: {}", show_json(v)));
  const double d = v.get<double>();
  const auto f = static_cast<float>(d);
  if (!std::isfinite(d) || !std::isfinite(f))
    bad_field(field, fmt::format("{} is not a finite float32", show_json(v)));
  return f;
}

// A fixed value or [lo, hi].
properties::ValueRange value_range(const json& v, const std::string& field) {
  if (v.is_array()) {
    if (v.size() != 2) bad_field(field, fmt::format("is not [lo, hi]: {}", show_json(v)));
    return {nearest_float(v[0], field), nearest_float(v[1], field)};
  }
  const float f = nearest_float(v, field);
  return {f, f};
}

}  // namespace

properties::DeclaredRecipe decode_recipe(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("recipe is not an object: " + show_json(j));
  properties::DeclaredRecipe r;
  for (const auto& [key, value] : j.items()) {
    if (key == "optimizers") {
      if (!value.is_array() || value.empty())
        bad_field(key, fmt::format("is not a non-empty list of names: {}", show_json(value)));
      for (const json& name : value) {
        const auto kind = name.is_string()
                              ? reference::parse_optimizer_kind(name.get_ref<const std::string&>())
                              : std::nullopt;
        if (!kind)
          bad_field(key,
                    fmt::format("lists {}, expected \"sgd\", \"momentum\" or \"adam\" (AdamW is "
                                "\"adam\" with adam.weight_decay [\"decoupled\"])",
                                show_json(name)));
        r.optimizers.push_back(*kind);
      }
    } else if (key == "hyperparameters") {
      if (!value.is_object()) bad_field(key, fmt::format("is not an object: {}", show_json(value)));
      for (const auto& [name, v] : value.items()) {
        std::size_t i = 0;
        while (i < reference::hyperparameters.size() && name != reference::hyperparameters[i].name)
          ++i;
        if (i == reference::hyperparameters.size()) {
          std::string known;
          for (const auto& h : reference::hyperparameters)
            known += (known.empty() ? "" : ", ") + std::string(h.name);
          bad_field(name, "is not a hyperparameter; known: " + known);
        }
        r.ranges[i] = value_range(v, name);
      }
    } else if (key == "bias_group") {
      if (!value.is_object()) bad_field(key, fmt::format("is not an object: {}", show_json(value)));
      properties::DeclaredGroup g;
      for (const auto& [name, v] : value.items()) {
        const std::string field = "bias_group." + name;
        if (name == "lr")
          g.lr = value_range(v, field);
        else if (name == "weight_decay")
          g.weight_decay = value_range(v, field);
        else
          bad_field(field, "is not a parameter group's hyperparameter; known: lr, weight_decay");
      }
      r.bias_group = g;
    } else if (key == "clipping") {
      if (!value.is_object()) bad_field(key, fmt::format("is not an object: {}", show_json(value)));
      if (!value.contains("max_norm"))
        bad_field("clipping.max_norm", "is missing (a value, or [lo, hi])");
      if (!value.contains("eps"))
        bad_field("clipping.eps", "is missing (torch's clip_grad_norm_ adds 1e-6, optax's 0)");
      properties::DeclaredClipping clip;
      for (const auto& [name, v] : value.items()) {
        const std::string field = "clipping." + name;
        if (name == "max_norm")
          clip.max_norm = value_range(v, field);
        else if (name == "eps")
          clip.eps = nearest_float(v, field);
        else
          bad_field(field, "is not a clipping field; known: max_norm, eps");
      }
      r.clipping = clip;
    } else if (key == "even_batches") {
      if (!value.is_boolean())
        bad_field(key, fmt::format("is not true or false: {}", show_json(value)));
      r.even_batches = value.get<bool>();
    } else {
      bad_field(
          key,
          "is not a recipe field; known: optimizers, hyperparameters, even_batches, bias_group, "
          "clipping");
    }
  }
  return r;
}

// The float32 as its shortest decimal that reads back as it ("0.0003", not the double's
// 17 digits).
nlohmann::ordered_json shortest(float f) {
  return nlohmann::ordered_json::parse(fmt::format("{}", f));
}

nlohmann::ordered_json encode_recipe(const properties::DeclaredRecipe& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!r.optimizers.empty()) {
    j["optimizers"] = nlohmann::ordered_json::array();
    for (auto k : r.optimizers) j["optimizers"].push_back(reference::to_string(k));
  }
  auto range_json = [](const properties::ValueRange& range) {
    return range.fixed() ? shortest(range.lo)
                         : nlohmann::ordered_json{shortest(range.lo), shortest(range.hi)};
  };
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < r.ranges.size(); ++i)
    if (const auto& range = r.ranges[i]) h[reference::hyperparameters[i].name] = range_json(*range);
  if (!h.empty()) j["hyperparameters"] = std::move(h);
  if (r.even_batches) j["even_batches"] = true;
  if (r.bias_group) {
    nlohmann::ordered_json g = nlohmann::ordered_json::object();
    if (r.bias_group->lr) g["lr"] = range_json(*r.bias_group->lr);
    if (r.bias_group->weight_decay) g["weight_decay"] = range_json(*r.bias_group->weight_decay);
    j["bias_group"] = std::move(g);
  }
  if (r.clipping) {
    nlohmann::ordered_json clip = nlohmann::ordered_json::object();
    clip["max_norm"] = range_json(r.clipping->max_norm);
    clip["eps"] = shortest(r.clipping->eps);
    j["clipping"] = std::move(clip);
  }
  return j;
}

properties::DeclaredRecipe read_recipe_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("cannot read the recipe file {}", path));
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(fmt::format("recipe file {} is not JSON: {}", path, e.what()));
  }
  try {
    return decode_recipe(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("recipe file {}: {}", path, e.what()));
  }
}

}  // namespace sgdc::conformance::protocol
