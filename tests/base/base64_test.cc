// Base64 both ways, as RFC 4648's test vectors have it, and what a kubeconfig may hold.
#include "base/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace modelmetrics::base {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(EncodeBase64(plain), encoded) << plain;
    std::string decoded;
    ASSERT_TRUE(DecodeBase64(encoded, &decoded)) << encoded;
    EXPECT_EQ(decoded, plain);
  }
}

TEST(Base64, EveryByteRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  std::string decoded;
  ASSERT_TRUE(DecodeBase64(EncodeBase64(bytes), &decoded));
  EXPECT_EQ(decoded, bytes);
}

TEST(Base64, DecodingIgnoresWhitespaceAndMissingPaddingAndRefusesTheRest) {
  std::string out;
  EXPECT_TRUE(DecodeBase64("Zm9v\nYmE", &out));
  EXPECT_EQ(out, "fooba");
  EXPECT_FALSE(DecodeBase64("Zm9v!", &out)) << "outside the alphabet";
  EXPECT_FALSE(DecodeBase64("Zg==Zg", &out)) << "data after padding";
  EXPECT_FALSE(DecodeBase64("Z", &out)) << "6 bits are no byte";
  EXPECT_FALSE(DecodeBase64("Zg===", &out)) << "three pads";
}

}  // namespace
}  // namespace modelmetrics::base
