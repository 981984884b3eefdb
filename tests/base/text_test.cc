// Tests of base/text.h: bad bytes become U+FFFD one for one, valid UTF-8 (every length, the
// edges of the ranges) passes whole, Excerpt cuts on a character boundary and says how much it
// cut, and percent-decoding refuses a malformed escape.
#include "base/text.h"

#include <gtest/gtest.h>

#include <string>

namespace modelmetrics::base {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(ValidUtf8, ValidTextPassesWhole) {
  for (const std::string& text :
       {std::string(""), std::string("plain ascii"), std::string("\xC3\xA9t\xC3\xA9"),
        std::string("\xE2\x82\xAC"), std::string("\xF0\x9F\x98\x80"), std::string("\xED\x9F\xBF"),
        std::string("\xF4\x8F\xBF\xBF")}) {
    EXPECT_EQ(ValidUtf8(text), text);
  }
}

TEST(ValidUtf8, EachBadByteBecomesOneReplacement) {
  EXPECT_EQ(ValidUtf8("1\xE9"), "1" + kFffd);                               // a lone Latin-1 byte
  EXPECT_EQ(ValidUtf8("\xFF\xFE"), kFffd + kFffd);                          // never in UTF-8
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), kFffd + kFffd);                          // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // a surrogate
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  EXPECT_EQ(ValidUtf8("a\xE2\x82"), "a" + kFffd + kFffd);                   // cut short
}

TEST(Excerpt, ShortTextIsWholeAndLongTextIsCutAndMarked) {
  EXPECT_EQ(Excerpt("short", 10), "short");
  EXPECT_EQ(Excerpt("0123456789", 10), "0123456789");
  EXPECT_EQ(Excerpt("0123456789abc", 10), "0123456789... [cut 3 bytes]");
  // Never inside a character: the euro sign (3 bytes) does not fit after 8 bytes of 10.
  EXPECT_EQ(Excerpt("01234567\xE2\x82\xAC", 10), "01234567... [cut 3 bytes]");
  const std::string huge(size_t{2} << 20, 'x');
  const std::string cut = Excerpt(huge, 1024);
  EXPECT_EQ(cut, std::string(1024, 'x') + "... [cut 2096128 bytes]");
  EXPECT_EQ(Excerpt("\xE9\xE9", 3), kFffd + "... [cut 1 bytes]");
}

TEST(PercentDecode, DecodesEscapesAndRefusesMalformedOnes) {
  std::string out;
  ASSERT_TRUE(PercentDecode("chat%20%C3%BCber%2B1%20%25x", &out));
  EXPECT_EQ(out,
            "chat \xC3\xBC"
            "ber+1 %x");
  ASSERT_TRUE(PercentDecode("plain+name", &out));
  EXPECT_EQ(out, "plain+name");
  EXPECT_FALSE(PercentDecode("%E0%A4%A", &out));
  EXPECT_FALSE(PercentDecode("%zz", &out));
  EXPECT_FALSE(PercentDecode("%", &out));
}

}  // namespace
}  // namespace modelmetrics::base
