#pragma once
/// \file
/// The command that replays one case of a run: the one place that spells it.

#include <string>

#include "sgdc/properties/runner.hpp"

namespace sgdc::conformance {

/// `prefix` (the command that runs the same implementation, e.g. "sgd-conformance run
/// --impl 'builtin:float32'") followed by every option that decides the case (seed, shard
/// count, shapes), the property and the case: running it draws the same case again.
std::string replay_line(const std::string& prefix, const properties::RunOptions& options,
                        const std::string& property, int case_index);

/// `text` quoted for a POSIX shell when it needs it.
std::string shell_quote(const std::string& text);

}  // namespace sgdc::conformance
