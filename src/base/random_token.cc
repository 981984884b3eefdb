// See random_token.h.
#include "base/random_token.h"

#include <random>

namespace modelmetrics::base {

std::string RandomToken(size_t hex_digits) {
  std::random_device random;
  std::uniform_int_distribution<int> hex(0, 15);
  std::string token;
  token.reserve(hex_digits);
  for (size_t i = 0; i < hex_digits; ++i) token += "0123456789abcdef"[hex(random)];
  return token;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

}  // namespace modelmetrics::base
