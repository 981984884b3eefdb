// See duration.h.
#include "base/duration.h"

#include <string>

namespace modelmetrics::base {

bool ParseDuration(const std::string& text, std::chrono::milliseconds* out) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    return false;
  }
  const std::string unit = text.substr(used);
  double ms;
  if (unit.empty() || unit == "s") {
    ms = value * 1000;
  } else if (unit == "ms") {
    ms = value;
  } else if (unit == "m") {
    ms = value * 60'000;
  } else if (unit == "h") {
    ms = value * 3'600'000;
  } else {
    return false;
  }
  if (!(ms >= 0) || ms > 1e12) return false;
  *out = std::chrono::milliseconds(static_cast<int64_t>(ms));
  return true;
}

std::string CheckDuration(const std::string& text) {
  std::chrono::milliseconds ignored;
  return ParseDuration(text, &ignored) ? "" : "not a duration (e.g. 90s, 2m, 500ms): " + text;
}

}  // namespace modelmetrics::base
