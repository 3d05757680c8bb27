#include "protocol/base64.hpp"

#include "support/float_bits.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace sgdc::conformance::protocol {
namespace {

std::vector<std::uint32_t> bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> out;
  for (const float f : v) out.push_back(test_support::float_bits(f));
  return out;
}

float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

// Decoding `text` fails, and the message contains `needle`.
void expect_rejected(const std::string& text, const std::string& needle) {
  try {
    decode_floats(text);
    ADD_FAILURE() << "'" << text << "' was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "'" << text << "': " << e.what();
  }
}

TEST(Base64, SpecExampleLearningRate) {
  EXPECT_EQ(encode_floats(std::vector<float>{0.1f}), "zczMPQ==");
  EXPECT_EQ(bits(decode_floats("zczMPQ==")), bits({0.1f}));
}

TEST(Base64, Rfc4648TestVectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    EXPECT_EQ(base64_encode(plain), coded);
    EXPECT_EQ(base64_decode(coded), plain);
  }
}

TEST(Base64, LittleEndianByteOrder) {
  EXPECT_EQ(base64_decode(encode_floats(std::vector<float>{1.0f})), std::string("\0\0\x80\x3f", 4));
}

TEST(Base64, EveryBitPatternClassRoundTrips) {
  const std::vector<float> values = {
      0.0f,
      -0.0f,
      1.0f,
      -2.5f,
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      from_bits(0x7FC00000u),  // quiet NaN
      from_bits(0xFFC00001u),  // negative quiet NaN with a payload
      from_bits(0x7F800001u),  // signalling NaN
      from_bits(0x7FBFFFFFu),  // signalling NaN, all payload bits
      from_bits(0x00000001u),  // smallest subnormal
      from_bits(0x807FFFFFu),  // largest negative subnormal
      std::numeric_limits<float>::min(),
      std::numeric_limits<float>::max(),
      -std::numeric_limits<float>::lowest(),
      std::numeric_limits<float>::epsilon(),
  };
  for (std::size_t count = 0; count <= values.size(); ++count) {
    const std::vector<float> v(values.begin(), values.begin() + static_cast<long>(count));
    const std::string text = encode_floats(v);
    EXPECT_EQ(text.size(), (4 * count + 2) / 3 * 4) << count;
    EXPECT_EQ(bits(decode_floats(text)), bits(v)) << text;
  }
}

RC_GTEST_PROP(Base64, AnyBitsRoundTrip, (const std::vector<std::uint32_t>& raw)) {
  std::vector<float> v;
  for (const std::uint32_t u : raw) v.push_back(std::bit_cast<float>(u));
  RC_ASSERT(bits(decode_floats(encode_floats(v))) == raw);
}

RC_GTEST_PROP(Base64, AnyBytesRoundTrip, (const std::string& bytes)) {
  RC_ASSERT(base64_decode(base64_encode(bytes)) == bytes);
}

TEST(Base64, StrictDecodingRejectsBadLength) {
  expect_rejected("zczMPQ=", "not a multiple of 4");
  expect_rejected("zczMP", "not a multiple of 4");
  expect_rejected("zczMPQ", "not a multiple of 4");
}

TEST(Base64, StrictDecodingRejectsBadCharacters) {
  expect_rejected("zczM!Q==", "invalid character '!' at offset 4");
  expect_rejected("zczM PQ=", "invalid character ' '");
  expect_rejected("zczMPQ==\n", "not a multiple of 4");
  expect_rejected("zczMPQ\n=", "invalid character '\\x0a'");
  expect_rejected("zc-M_Q==", "invalid character '-'");  // base64url is not the protocol's
  expect_rejected(std::string("zczM\0Q==", 8), "invalid character '\\x00'");
  expect_rejected("zczM\xC3\xA9Q=", "invalid character");
}

TEST(Base64, StrictDecodingRejectsBadPadding) {
  expect_rejected("zc=MPQ==", "padding '=' inside the data at offset 2");
  expect_rejected("AAA===A=", "padding '=' inside the data");
  expect_rejected("A===", "padding '=' inside the data at offset 1");
  expect_rejected("====", "padding '=' inside the data at offset 0");
  expect_rejected("zczMPQ==AAAA", "padding '=' inside the data at offset 6");
}

TEST(Base64, StrictDecodingRejectsNonCanonicalTrailingBits) {
  // "zczMPR==" differs from "zczMPQ==" only in bits after the last byte.
  expect_rejected("zczMPR==", "non-zero bits after the last byte");
  expect_rejected("AAB=", "non-zero bits after the last byte");
}

TEST(Base64, RejectsPartialFloats) {
  expect_rejected("AAAA", "3 bytes is not a whole number of float32 values");
  expect_rejected("Zg==", "1 bytes is not a whole number");
  EXPECT_TRUE(decode_floats("").empty());
}

}  // namespace
}  // namespace sgdc::conformance::protocol