// See number_spelling.h.
#include "number_spelling.h"

#include <charconv>
#include <cmath>
#include <string_view>

namespace modelmetrics::sim {
namespace {

// The shortest round-trip digits of a finite value > 0 and its decimal exponent:
// value = 0.d1d2d3... * 10^(exponent + 1), i.e. d1.d2d3... * 10^exponent.
struct Digits {
  std::string digits;
  int exponent = 0;
};

Digits ShortestDigits(double value) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view text(buf, static_cast<size_t>(result.ptr - buf));  // "1.2345e+06"
  size_t e = text.find('e');
  Digits out;
  for (char c : text.substr(0, e)) {
    if (c != '.') out.digits += c;
  }
  std::from_chars(text.data() + e + (text[e + 1] == '+' ? 2 : 1), text.data() + text.size(),
                  out.exponent);
  while (out.digits.size() > 1 && out.digits.back() == '0') out.digits.pop_back();
  return out;
}

// Plain positional notation of the digits (no exponent), "" fraction when integral.
std::string Positional(const Digits& d, bool force_fraction) {
  std::string out;
  if (d.exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-d.exponent - 1), '0') + d.digits;
    return out;
  }
  size_t int_digits = static_cast<size_t>(d.exponent) + 1;
  if (d.digits.size() <= int_digits) {
    out = d.digits + std::string(int_digits - d.digits.size(), '0');
    if (force_fraction) out += ".0";
  } else {
    out = d.digits.substr(0, int_digits) + "." + d.digits.substr(int_digits);
  }
  return out;
}

// "d.ddde+XX" with at least `min_exp_digits` exponent digits.
std::string Scientific(const Digits& d, int min_exp_digits) {
  std::string out = d.digits.substr(0, 1);
  if (d.digits.size() > 1) out += "." + d.digits.substr(1);
  int exponent = d.exponent;
  out += exponent < 0 ? "e-" : "e+";
  std::string exp_text = std::to_string(exponent < 0 ? -exponent : exponent);
  while (static_cast<int>(exp_text.size()) < min_exp_digits) exp_text = "0" + exp_text;
  return out + exp_text;
}

template <typename Finite>
std::string Special(double value, Finite finite) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value < 0) return "-" + finite(-value);
  return finite(value);
}

}  // namespace

std::string PythonFloat(double value) {
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  return Special(value, [](double v) {
    Digits d = ShortestDigits(v);
    // Python's repr: positional for 1e-4 <= v < 1e16, else scientific with 2+ exponent digits.
    if (d.exponent < -4 || d.exponent >= 16) return Scientific(d, 2);
    // floatToGoString: Go switches to exponents sooner (7+ integer digits): `e+0<exp>`.
    if (d.exponent >= 6) {
      std::string mantissa = d.digits.substr(0, 1);
      if (d.digits.size() > 1) mantissa += "." + d.digits.substr(1);
      return mantissa + "e+0" + std::to_string(d.exponent);
    }
    return Positional(d, /*force_fraction=*/true);
  });
}

std::string GoFloat(double value) {
  if (value == 0) return "0";
  return Special(value, [](double v) {
    Digits d = ShortestDigits(v);
    // %g with the shortest precision switches to an exponent below 1e-4 and from 1e+06 on.
    if (d.exponent < -4 || d.exponent >= 6) return Scientific(d, 2);
    return Positional(d, /*force_fraction=*/false);
  });
}

std::string RustFloat(double value) {
  if (value == 0) return "0";
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return Special(value, [](double v) { return Positional(ShortestDigits(v), false); });
}

}  // namespace modelmetrics::sim
