// The grammar of metric and label names (the text exposition's), shared by the registry, which
// refuses a family that breaks it, and the shared segment's reader, which skips a record another
// process wrote that breaks it. Private to src/metrics.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_METRICS_NAMES_H_
#define MODELMETRICS_METRICS_NAMES_H_

#include <string_view>

namespace modelmetrics::metrics_internal {

// [a-zA-Z_:][a-zA-Z0-9_:]*
inline bool ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// [a-zA-Z_][a-zA-Z0-9_]*, not starting with `__` (reserved).
inline bool ValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace modelmetrics::metrics_internal

#endif  // MODELMETRICS_METRICS_NAMES_H_
