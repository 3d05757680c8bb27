#pragma once
/// \file
/// Splitting a fuzzer's input into a few small parameters and the text under test.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sgdc::fuzz {

/// Reads parameter bytes from the front of the input; what remains is the text.
class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size)
      : text_(reinterpret_cast<const char*>(data), size) {}

  /// The next byte (0 once the input is used up), consumed.
  std::uint8_t byte() {
    if (text_.empty()) return 0;
    const auto b = static_cast<std::uint8_t>(text_.front());
    text_.remove_prefix(1);
    return b;
  }

  /// Everything not consumed yet.
  std::string_view rest() const { return text_; }

 private:
  std::string_view text_;
};

}  // namespace sgdc::fuzz
