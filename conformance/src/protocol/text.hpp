#pragma once
// Internal: quoting untrusted bytes (adapter output) inside error messages.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sgdc::conformance::protocol::detail {

// How many bytes of an adapter's text (a line, a command) a fault message quotes.
inline constexpr std::size_t quote_limit = 200;

// `text` as valid UTF-8 with control characters other than '\n' and '\t' escaped
// (\xNN) and invalid bytes replaced by U+FFFD, so fault messages stay printable and
// can be written into JSON reports. Beyond `max_bytes` of input, keeps the first
// (or with `keep_tail`, the last) `max_bytes` and says how much was left out.
std::string printable(std::string_view text, std::size_t max_bytes, bool keep_tail = false);

// A JSON value (a field of a message or of a recipe) as compact text for an error
// message: dumped with invalid UTF-8 replaced, then `printable` within `quote_limit`.
std::string show_json(const nlohmann::json& value);

}  // namespace sgdc::conformance::protocol::detail