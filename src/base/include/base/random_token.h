// Random access tokens: `hex_digits` lowercase hex digits from std::random_device (the kernel's
// random source on Linux), for bearer tokens made up at start (the demo's API, the web page).
//
// Thread-safety: safe to call concurrently.
#ifndef MODELMETRICS_BASE_RANDOM_TOKEN_H_
#define MODELMETRICS_BASE_RANDOM_TOKEN_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace modelmetrics::base {

std::string RandomToken(size_t hex_digits = 32);

// Equal contents, in time that depends only on the lengths (token checks).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_RANDOM_TOKEN_H_
