#include "format/number.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace modelmetrics::format {
namespace {

constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }

constexpr char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool EqualsLower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (Lower(text[i]) != lower[i]) return false;
  }
  return true;
}

// Exactly representable powers of ten for the fast path.
constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

// Decimal syntax: digits [ '.' digits ] [ (e|E) [+|-] digits ], at least one mantissa digit.
// Returns false on anything else (hex, `_`, `p`, stray bytes). `*below_one` tells whether a nonzero
// value's magnitude is below 1 (decimal exponent of its first significant digit < 0), which is how
// a range error is told apart: underflow when below one, overflow otherwise.
bool IsDecimalSyntax(std::string_view s, bool* below_one) {
  size_t i = 0, n = s.size();
  size_t mantissa_digits = 0;
  int64_t point_exponent = 0;  // decimal exponent of the first nonzero digit, before `e`
  bool nonzero_seen = false;
  while (i < n && IsDigit(s[i])) {
    if (nonzero_seen) ++point_exponent;
    nonzero_seen |= s[i] != '0';
    ++i, ++mantissa_digits;
  }
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && IsDigit(s[i])) {
      if (!nonzero_seen) {
        --point_exponent;
        nonzero_seen = s[i] != '0';
      }
      ++i, ++mantissa_digits;
    }
  }
  if (mantissa_digits == 0) return false;
  int64_t exponent = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative_exponent = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) negative_exponent = s[i++] == '-';
    size_t exponent_digits = 0;
    while (i < n && IsDigit(s[i])) {
      if (exponent < 1'000'000'000) exponent = exponent * 10 + (s[i] - '0');  // saturates
      ++i, ++exponent_digits;
    }
    if (exponent_digits == 0) return false;
    if (negative_exponent) exponent = -exponent;
  }
  *below_one = point_exponent + exponent < 0;
  return i == n;
}

}  // namespace

bool ParseValue(std::string_view text, double* value) {
  if (text.empty()) return false;
  bool negative = false;
  std::string_view s = text;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
    if (s.empty()) return false;
  }
  const char first = s[0];
  if (!IsDigit(first) && first != '.') {
    if (EqualsLower(s, "inf") || EqualsLower(s, "infinity")) {
      *value = negative ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
      return true;
    }
    if (s.size() == text.size() && EqualsLower(s, "nan")) {
      *value = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    return false;
  }

  // Fast path: up to 15 digits, optionally `.` and more digits, total <= 15 significant digits.
  // Both the integer mantissa and the power of ten are exact, so one division rounds correctly.
  {
    uint64_t mantissa = 0;
    size_t i = 0, digits = 0, fraction_digits = 0;
    const size_t n = s.size();
    while (i < n && IsDigit(s[i]) && digits < 16) {
      mantissa = mantissa * 10 + static_cast<uint64_t>(s[i] - '0');
      ++i, ++digits;
    }
    if (i < n && s[i] == '.' && digits > 0) {
      ++i;
      // Trailing fraction zeros (`15413.0`, the Python client's habit) need no division.
      uint64_t significant = mantissa;
      size_t significant_fraction_digits = 0;
      while (i < n && IsDigit(s[i]) && digits < 16) {
        mantissa = mantissa * 10 + static_cast<uint64_t>(s[i] - '0');
        ++i, ++digits, ++fraction_digits;
        if (s[i - 1] != '0') {
          significant = mantissa;
          significant_fraction_digits = fraction_digits;
        }
      }
      mantissa = significant;
      fraction_digits = significant_fraction_digits;
    }
    if (i == n && digits > 0 && digits <= 15) {
      double v = static_cast<double>(mantissa);
      if (fraction_digits > 0) v /= kPow10[fraction_digits];
      *value = negative ? -v : v;
      return true;
    }
  }

  bool below_one = false;
  if (!IsDecimalSyntax(s, &below_one)) return false;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ptr != s.data() + s.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves `v` unset on range errors: underflow becomes zero as in Go, overflow fails.
    if (!below_one) return false;
    v = 0;
  } else if (ec != std::errc()) {
    return false;
  }
  *value = negative ? -v : v;
  return true;
}

bool ParseTimestampMs(std::string_view text, bool allow_negative, int64_t* ms) {
  bool negative = false;
  if (!text.empty() && text[0] == '-') {
    if (!allow_negative) return false;
    negative = true;
    text.remove_prefix(1);
  }
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (!IsDigit(c)) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  *ms = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

bool ParseSecondsAsMs(std::string_view text, int64_t* ms) {
  // Exact path: [-|+] up to 16 digits [ '.' up to 3 digits ] (every int64 of ms has at most 16
  // whole-second digits; 16 digits times 1000 still fits uint64).
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  size_t i = 0;
  uint64_t whole = 0;
  while (i < s.size() && IsDigit(s[i]) && i < 17) whole = whole * 10 + (s[i++] - '0');
  const size_t whole_digits = i;
  if (whole_digits > 0 && whole_digits <= 16) {
    uint64_t fraction = 0;
    size_t fraction_digits = 0;
    bool exact = true;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && IsDigit(s[i])) {
        if (fraction_digits == 3) {
          exact = false;
          break;
        }
        fraction = fraction * 10 + (s[i++] - '0');
        ++fraction_digits;
      }
    }
    if (exact && i == s.size()) {
      for (size_t k = fraction_digits; k < 3; ++k) fraction *= 10;
      const uint64_t magnitude = whole * 1000 + fraction;
      const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + negative;
      if (magnitude > limit) return false;
      *ms = static_cast<int64_t>(negative ? 0 - magnitude : magnitude);
      return true;
    }
  }
  double seconds = 0;
  if (!ParseValue(text, &seconds) || !std::isfinite(seconds)) return false;
  const double v = std::round(seconds * 1000.0);
  if (!(v >= -9.2e18 && v <= 9.2e18)) return false;
  *ms = static_cast<int64_t>(v);
  return true;
}

void AppendMsAsSeconds(std::string* out, int64_t ms) {
  // |ms| as unsigned so INT64_MIN is safe.
  uint64_t magnitude = ms < 0 ? 0 - static_cast<uint64_t>(ms) : static_cast<uint64_t>(ms);
  if (ms < 0) out->push_back('-');
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, magnitude / 1000);
  out->append(buf, end);
  unsigned fraction = static_cast<unsigned>(magnitude % 1000);
  if (fraction != 0) {
    char digits[4] = {'.', static_cast<char>('0' + fraction / 100),
                      static_cast<char>('0' + fraction / 10 % 10),
                      static_cast<char>('0' + fraction % 10)};
    size_t len = 4;
    while (digits[len - 1] == '0') --len;
    out->append(digits, len);
  }
}

}  // namespace modelmetrics::format
