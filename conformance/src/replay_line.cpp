#include "sgdc/conformance/replay_line.hpp"

#include <fmt/format.h>

namespace sgdc::conformance {

std::string shell_quote(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-+=.,:/@%") == std::string::npos;
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string replay_line(const std::string& prefix, const properties::RunOptions& options,
                        const std::string& property, int case_index) {
  std::string line = fmt::format("{} --seed {}", prefix, options.seed);
  if (options.num_shards) line += fmt::format(" --shards {}", *options.num_shards);
  // The options that decide the shapes, where they differ from the defaults.
  const properties::ShapeOptions& s = options.shapes;
  const properties::ShapeOptions defaults;
  for (const properties::Shape& shape : s.exact) line += " --shape " + to_string(shape);
  if (s.exact.empty()) {
    if (s.pool != defaults.pool) line += fmt::format(" --shape-pool {}", s.pool);
    if (s.max_rows != defaults.max_rows) line += fmt::format(" --max-rows {}", s.max_rows);
    if (s.max_features != defaults.max_features)
      line += fmt::format(" --max-features {}", s.max_features);
    if (s.budget != defaults.budget) line += fmt::format(" --shape-budget {}", s.budget);
  }
  return line + fmt::format(" --property {} --case {}", property, case_index);
}

}  // namespace sgdc::conformance
