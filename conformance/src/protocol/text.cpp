#include "text.hpp"

#include <fmt/format.h>

namespace sgdc::conformance::protocol::detail {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t j) { return static_cast<unsigned char>(s[j]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  // Sequence length and smallest code point it may encode, from the lead byte.
  std::size_t len = 0;
  unsigned min = 0;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  unsigned cp = c & (0x7F >> len);
  for (std::size_t j = 1; j < len; ++j) {
    if ((b(i + j) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + j) & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes, bool keep_tail) {
  std::string out;
  std::size_t dropped = 0;
  if (text.size() > max_bytes) {
    dropped = text.size() - max_bytes;
    text = keep_tail ? text.substr(dropped) : text.substr(0, max_bytes);
  }
  if (dropped > 0 && keep_tail) out += fmt::format("[{} earlier bytes left out] ", dropped);
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      if (c == '\n' || c == '\t') {
        out += static_cast<char>(c);
      } else {
        out += fmt::format("\\x{:02x}", c);
      }
      ++i;
      continue;
    }
    const std::size_t len = utf8_length(text, i);
    if (len == 0) {
      // A sequence cut by truncation at either end lands here too; that is fine.
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  if (dropped > 0 && !keep_tail) out += fmt::format(" [{} more bytes left out]", dropped);
  return out;
}

std::string show_json(const nlohmann::json& value) {
  return printable(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                   quote_limit);
}

}  // namespace sgdc::conformance::protocol::detail