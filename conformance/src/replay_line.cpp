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
  return line + fmt::format(" --property {} --case {}", property, case_index);
}

}  // namespace sgdc::conformance
