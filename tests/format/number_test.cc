// Tests for the locale-free number parsing and formatting in src/format/number.h.
//
// Expected values are written out by hand (or come from an independent oracle: glibc strtod_l in
// the "C" locale), never from the code under test.
#include "format/number.h"

#include <gtest/gtest.h>
#include <locale.h>

#include <bit>
#include <cfloat>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <locale>
#include <random>
#include <string>
#include <vector>

#include "format/test_numbers.h"
#include "modelmetrics/writer.h"

namespace modelmetrics::format {
namespace {

using ::modelmetrics::testing::kInf;

// An independent oracle: glibc's strtod in an explicit "C" locale, whatever the global locale is.
double CStrtod(const std::string& text) {
  static locale_t c_locale = newlocale(LC_ALL_MASK, "C", nullptr);
  char* end = nullptr;
  const double v = strtod_l(text.c_str(), &end, c_locale);
  EXPECT_EQ(end, text.c_str() + text.size()) << "oracle did not consume \"" << text << "\"";
  return v;
}

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

// Parses `text` and expects success with exactly `want` (bit-exact; NaN matches any NaN).
void ExpectValue(const std::string& text, double want) {
  SCOPED_TRACE("input \"" + text + "\"");
  double got = 12345;  // a sentinel the cases never expect
  ASSERT_TRUE(ParseValue(text, &got));
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << got;
  } else {
    EXPECT_EQ(Bits(got), Bits(want)) << "got " << got << ", want " << want;
  }
}

void ExpectRejected(const std::string& text) {
  double got = 12345;
  EXPECT_FALSE(ParseValue(text, &got)) << "input \"" << text << "\" gave " << got;
}

TEST(ParseValueTest, AcceptsGoDecimalSyntax) {
  ExpectValue("1", 1.0);
  ExpectValue("0", 0.0);
  ExpectValue("-1.5", -1.5);
  ExpectValue("+1.5", 1.5);
  ExpectValue(".5", 0.5);
  ExpectValue("-.5", -0.5);
  ExpectValue("5.", 5.0);
  ExpectValue("1e+010", 1e10);
  ExpectValue("1E10", 1e10);
  ExpectValue("1e-3", 0.001);
  ExpectValue("1.9392065536e+010", 19392065536.0);
  ExpectValue("12880.0", 12880.0);
  ExpectValue("0.0001", 0.0001);
  ExpectValue("007", 7.0);
  ExpectValue("123456789012345", 123456789012345.0);          // 15 digits: the fast path
  ExpectValue("1234567890123456789", 1234567890123456768.0);  // rounded to the nearest double
  ExpectValue("1.7976931348623157e+308", DBL_MAX);
  ExpectValue("2.2250738585072014e-308", DBL_MIN);
  ExpectValue("4.9406564584124654e-324", std::numeric_limits<double>::denorm_min());
  ExpectValue("5e-324", std::numeric_limits<double>::denorm_min());
}

TEST(ParseValueTest, NegativeZeroKeepsItsSign) {
  double v = 1;
  ASSERT_TRUE(ParseValue("-0", &v));
  EXPECT_TRUE(v == 0 && std::signbit(v));
  ASSERT_TRUE(ParseValue("-0.0e5", &v));
  EXPECT_TRUE(v == 0 && std::signbit(v));
  ASSERT_TRUE(ParseValue("0", &v));
  EXPECT_TRUE(v == 0 && !std::signbit(v));
}

TEST(ParseValueTest, AcceptsNaNAndInfinitiesInAnyCase) {
  for (const char* nan : {"NaN", "nan", "NAN", "Nan", "nAn"}) ExpectValue(nan, NAN);
  for (const char* inf : {"+Inf", "Inf", "inf", "INF", "Infinity", "+infinity", "INFINITY"}) {
    ExpectValue(inf, kInf);
  }
  for (const char* inf : {"-Inf", "-inf", "-Infinity", "-INFINITY"}) ExpectValue(inf, -kInf);
}

TEST(ParseValueTest, RejectsWhatGoAndPrometheusReject) {
  for (const char* bad :
       {"",      "+",    "-",    ".",   "e5",    ".e5",  "0x1p3",   "0x10",      "1p3",
        "1_000", "1e",   "1e+",  "1e-", "--1",   "+-1",  "-+1",     "+NaN",      "-NaN",
        "NaN1",  "1.5 ", " 1.5", "1,5", "1.5.5", "inf1", "Infinit", "Infinityy", "in",
        "1e1.5", "1ee1", "1 e1", "\t1", "1\n",   "nul",  "true"}) {
    ExpectRejected(bad);
  }
}

TEST(ParseValueTest, OverflowIsAnErrorAndUnderflowIsZero) {
  ExpectRejected("1e999");
  ExpectRejected("-1e999");
  ExpectRejected("1e309");
  ExpectRejected("1.8e308");
  // Overflow whose mantissa starts with zeros or whose exponent is negative is still overflow
  // (Go: ParseFloat returns ErrRange, Prometheus rejects the line).
  ExpectRejected("0.1e400");
  ExpectRejected("0.0001e320");
  ExpectRejected("1" + std::string(400, '0') + "e-1");  // 1e399
  ExpectRejected("-00.5e999");

  ExpectValue("1e-400", 0.0);
  ExpectValue("-1e-400", -0.0);
  ExpectValue("0.0001e-330", 0.0);
  ExpectValue("100000e-400", 0.0);
  ExpectValue("2e-324", 0.0);  // below half of the smallest subnormal: rounds to zero
  ExpectValue("3e-324", std::numeric_limits<double>::denorm_min());
  ExpectValue("0e999", 0.0);  // zero times any power of ten is zero, not an overflow
  ExpectValue("0.000e-999", 0.0);
  // In range, though the exponent alone would not be.
  ExpectValue("0.0001e310", 1e306);
  ExpectValue("10e307", 1e308);
  ExpectValue("1" + std::string(400, '0') + "e-395", 1e5);
}

TEST(ParseValueTest, CorrectlyRoundedHardCases) {
  // 2^53 + 1 lies halfway between two doubles: ties to even.
  ExpectValue("9007199254740993", 9007199254740992.0);
  // Anything above the halfway point rounds up.
  ExpectValue("9007199254740993.00000000000000000000001", 9007199254740994.0);
  // 1 + 2^-53 exactly (halfway between 1 and the next double): ties to even, i.e. 1.
  ExpectValue("1.00000000000000011102230246251565404236316680908203125", 1.0);
  ExpectValue("1.00000000000000011102230246251565404236316680908203125000000001",
              std::nextafter(1.0, 2.0));
  // The exact decimal expansion of the double nearest 0.1.
  ExpectValue("0.1000000000000000055511151231257827021181583404541015625", 0.1);
  // Largest subnormal and the boundary just under DBL_MIN.
  ExpectValue("2.2250738585072009e-308", std::nextafter(DBL_MIN, 0.0));
  ExpectValue("2.2250738585072011e-308", std::nextafter(DBL_MIN, 0.0));
}

TEST(ParseValueTest, HugePrecisionDecimalsMatchStrtodInTheCLocale) {
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<int> digit(0, 9);
  for (int iteration = 0; iteration < 3000; ++iteration) {
    // 1..800 mantissa digits, an optional point anywhere, an optional exponent.
    const int digits = iteration < 1000 ? 1 + static_cast<int>(rng() % 15)  // fast-path sizes
                                        : 16 + static_cast<int>(rng() % 785);
    std::string text;
    if (rng() % 2) text.push_back('-');
    const int point = static_cast<int>(rng() % (digits + 1));
    for (int i = 0; i < digits; ++i) {
      if (i == point && rng() % 2) text.push_back('.');
      text.push_back(static_cast<char>('0' + digit(rng)));
    }
    if (rng() % 3 == 0) {
      text.push_back(rng() % 2 ? 'e' : 'E');
      const int sign = static_cast<int>(rng() % 3);
      if (sign == 1) text.push_back('+');
      if (sign == 2) text.push_back('-');
      text += std::to_string(rng() % 330);
    }
    const double want = CStrtod(text);
    if (std::isinf(want)) {
      ExpectRejected(text);  // overflow
    } else {
      ExpectValue(text, want);
    }
  }
}

// Restores the global C and C++ locales on scope exit.
class LocaleGuard {
 public:
  LocaleGuard() : cpp_(std::locale()), c_(std::setlocale(LC_ALL, nullptr)) {}
  ~LocaleGuard() {
    std::setlocale(LC_ALL, c_.c_str());
    std::locale::global(cpp_);
  }

 private:
  std::locale cpp_;
  std::string c_;
};

struct CommaDecimal : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

void ExpectDotBasedNumbers() {
  ExpectValue("1.5", 1.5);
  ExpectValue("-1234.5678e-2", -12.345678);
  ExpectValue("1.9392065536e+010", 19392065536.0);
  ExpectRejected("1,5");
  std::string out;
  AppendDouble(&out, 1234.5);
  out.push_back(' ');
  AppendDouble(&out, 1.048576e6);
  out.push_back(' ');
  AppendCanonicalDouble(&out, 2.0);
  out.push_back(' ');
  AppendMsAsSeconds(&out, 1700000000123);
  EXPECT_EQ(out, "1234.5 1.048576e+06 2.0 1700000000.123");
  int64_t ms = 0;
  ASSERT_TRUE(ParseSecondsAsMs("1.5", &ms));
  EXPECT_EQ(ms, 1500);
}

TEST(NumberLocaleTest, CppGlobalLocaleWithCommaDecimalPointDoesNotMatter) {
  LocaleGuard guard;
  std::locale::global(std::locale(std::locale::classic(), new CommaDecimal));
  ExpectDotBasedNumbers();
}

TEST(NumberLocaleTest, CLocaleWithCommaDecimalPointDoesNotMatter) {
  LocaleGuard guard;
  const char* chosen = nullptr;
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"}) {
    if (std::setlocale(LC_ALL, name) != nullptr) {
      chosen = name;
      break;
    }
  }
  if (chosen == nullptr) GTEST_SKIP() << "no de_DE/fr_FR locale is installed";
  ASSERT_STREQ(std::localeconv()->decimal_point, ",") << chosen;
  std::locale::global(std::locale(chosen));
  ExpectDotBasedNumbers();
}

TEST(ParseTimestampMsTest, DigitsOnly) {
  int64_t ms = -7;
  ASSERT_TRUE(ParseTimestampMs("0", false, &ms));
  EXPECT_EQ(ms, 0);
  ASSERT_TRUE(ParseTimestampMs("1700000000123", false, &ms));
  EXPECT_EQ(ms, 1700000000123);
  ASSERT_TRUE(ParseTimestampMs("0001", false, &ms));
  EXPECT_EQ(ms, 1);
  ASSERT_TRUE(ParseTimestampMs("9223372036854775807", false, &ms));
  EXPECT_EQ(ms, INT64_MAX);
  for (const char* bad : {"", "-", "+5", "1.5", "1e3", " 1", "1 ", "0x10", "NaN", "١٢"}) {
    EXPECT_FALSE(ParseTimestampMs(bad, true, &ms)) << bad;
  }
}

TEST(ParseTimestampMsTest, NegativeOnlyWhenAllowed) {
  int64_t ms = 0;
  EXPECT_FALSE(ParseTimestampMs("-5", false, &ms));
  ASSERT_TRUE(ParseTimestampMs("-5", true, &ms));
  EXPECT_EQ(ms, -5);
  ASSERT_TRUE(ParseTimestampMs("-9223372036854775807", true, &ms));
  EXPECT_EQ(ms, -INT64_MAX);
  EXPECT_FALSE(ParseTimestampMs("--5", true, &ms));
}

TEST(ParseTimestampMsTest, OverflowIsRejected) {
  int64_t ms = 0;
  EXPECT_FALSE(ParseTimestampMs("9223372036854775808", false, &ms));   // INT64_MAX + 1
  EXPECT_FALSE(ParseTimestampMs("9999999999999999999", false, &ms));   // 19 digits
  EXPECT_FALSE(ParseTimestampMs("18446744073709551617", false, &ms));  // 2^64 + 1
  EXPECT_FALSE(ParseTimestampMs("-9223372036854775809", true, &ms));
  EXPECT_FALSE(ParseTimestampMs(std::string(100, '9'), false, &ms));
}

TEST(ParseSecondsAsMsTest, ExactDecimals) {
  struct Case {
    const char* text;
    int64_t ms;
  };
  for (const Case& c : std::vector<Case>{{"1700000000.123", 1700000000123},
                                         {"1.5", 1500},
                                         {"-0.001", -1},
                                         {"0", 0},
                                         {"-0", 0},
                                         {"+2", 2000},
                                         {"12.", 12000},
                                         {".25", 250},
                                         {"0.1", 100},
                                         {"0.12", 120},
                                         {"1e3", 1000000},
                                         {"1.5e-3", 2},  // 1.5 ms rounds away from zero
                                         {"1700000000.1", 1700000000100},
                                         {"999999999999999.999", 999999999999999999},
                                         {"-999999999999999.999", -999999999999999999},
                                         // 16 whole digits: still exact (int64 ms has 19 digits).
                                         {"1234567890123456.789", 1234567890123456789},
                                         {"9223372036854775.807", INT64_MAX},
                                         {"-9223372036854775.808", INT64_MIN}}) {
    int64_t ms = -7;
    ASSERT_TRUE(ParseSecondsAsMs(c.text, &ms)) << c.text;
    EXPECT_EQ(ms, c.ms) << c.text;
  }
}

TEST(ParseSecondsAsMsTest, MoreThanThreeFractionDigitsRound) {
  struct Case {
    const char* text;
    int64_t ms;
  };
  for (const Case& c : std::vector<Case>{{"1.2346", 1235},
                                         {"1.2344", 1234},
                                         {"-1.2346", -1235},
                                         {"-1.2344", -1234},
                                         {"0.0004", 0},
                                         {"0.0006", 1},
                                         {"1700000000.12349", 1700000000123},
                                         {"1700000000.12351", 1700000000124}}) {
    int64_t ms = -7;
    ASSERT_TRUE(ParseSecondsAsMs(c.text, &ms)) << c.text;
    EXPECT_EQ(ms, c.ms) << c.text;
  }
}

TEST(ParseSecondsAsMsTest, Rejects) {
  int64_t ms = 0;
  for (const char* bad :
       {"", "+", "-", ".", "NaN", "Inf", "+Inf", "-Inf", "1,5", "1.5 ", "0x10", "1e999",
        "9223372036854775.808", "-9223372036854775.809", "99999999999999999", "1e17"}) {
    EXPECT_FALSE(ParseSecondsAsMs(bad, &ms)) << bad;
  }
}

std::string MsAsSeconds(int64_t ms) {
  std::string out = "prefix:";
  AppendMsAsSeconds(&out, ms);
  EXPECT_EQ(out.substr(0, 7), "prefix:");  // appends, never overwrites
  return out.substr(7);
}

TEST(AppendMsAsSecondsTest, ExactDecimalSeconds) {
  EXPECT_EQ(MsAsSeconds(0), "0");
  EXPECT_EQ(MsAsSeconds(1), "0.001");
  EXPECT_EQ(MsAsSeconds(-1), "-0.001");
  EXPECT_EQ(MsAsSeconds(10), "0.01");
  EXPECT_EQ(MsAsSeconds(100), "0.1");
  EXPECT_EQ(MsAsSeconds(-500), "-0.5");
  EXPECT_EQ(MsAsSeconds(1000), "1");
  EXPECT_EQ(MsAsSeconds(-1000), "-1");
  EXPECT_EQ(MsAsSeconds(1230), "1.23");
  EXPECT_EQ(MsAsSeconds(1234567), "1234.567");
  EXPECT_EQ(MsAsSeconds(1700000000123), "1700000000.123");
  EXPECT_EQ(MsAsSeconds(INT64_MAX), "9223372036854775.807");
  EXPECT_EQ(MsAsSeconds(INT64_MIN), "-9223372036854775.808");
}

TEST(AppendMsAsSecondsTest, RoundTripsThroughParseSecondsAsMs) {
  std::vector<int64_t> values = {0,
                                 1,
                                 -1,
                                 999,
                                 1000,
                                 1001,
                                 -999,
                                 1234567,
                                 INT64_MAX,
                                 INT64_MIN,
                                 INT64_MAX - 1,
                                 INT64_MIN + 1,
                                 999999999999999999,
                                 1000000000000000000,
                                 -1000000000000000000};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const int64_t v = std::bit_cast<int64_t>(rng());
    // Full range, and magnitudes spread over every decimal length.
    values.push_back(i % 2 ? v : v >> (rng() % 63));
  }
  for (int64_t ms : values) {
    const std::string text = MsAsSeconds(ms);
    int64_t back = ms == 0 ? 1 : 0;
    ASSERT_TRUE(ParseSecondsAsMs(text, &back)) << ms << " -> \"" << text << "\"";
    EXPECT_EQ(back, ms) << "\"" << text << "\"";
  }
}

}  // namespace
}  // namespace modelmetrics::format
