// Reason: the text of a missing[] entry or a failed Pod read, of bounded length and valid UTF-8
// (base::Excerpt), made once and shared, never copied.
//
// A reason can quote what a Pod or a store sent (a parse error's bytes, a store's "error"
// string); a hostile one can be megabytes and not UTF-8. Bounding it where it is made keeps a
// 1,000-Pod snapshot whose store answers every query with a 2 MiB error at one KiB per entry, and
// the chunk's Pods share the one text their query failed with.
//
// Thread-safety: immutable after construction; copies may be used from any thread.
#ifndef MODELMETRICS_AGGREGATION_REASON_H_
#define MODELMETRICS_AGGREGATION_REASON_H_

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace modelmetrics::deployment {

class Reason {
 public:
  // The longest text kept, in bytes (before the cut marker).
  static constexpr size_t kMaxBytes = 1024;

  Reason() = default;
  Reason(std::string_view text);  // NOLINT: a reason is written as its text
  Reason(const char* text) : Reason(std::string_view(text)) {}         // NOLINT
  Reason(const std::string& text) : Reason(std::string_view(text)) {}  // NOLINT

  const std::string& str() const;
  operator const std::string&() const { return str(); }  // NOLINT
  operator std::string_view() const { return str(); }    // NOLINT
  bool empty() const { return str().empty(); }

  friend bool operator==(const Reason& a, const Reason& b) { return a.str() == b.str(); }
  friend bool operator==(const Reason& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const Reason& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const Reason& a, const char* b) { return a.str() == b; }
  friend std::ostream& operator<<(std::ostream& os, const Reason& r) { return os << r.str(); }

 private:
  std::shared_ptr<const std::string> text_;  // null: the empty reason
};

}  // namespace modelmetrics::deployment

template <>
struct fmt::formatter<modelmetrics::deployment::Reason> : fmt::formatter<std::string_view> {
  auto format(const modelmetrics::deployment::Reason& r, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(r.str(), ctx);
  }
};

#endif  // MODELMETRICS_AGGREGATION_REASON_H_
