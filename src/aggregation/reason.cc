// See reason.h.
#include "aggregation/reason.h"

#include "base/text.h"

namespace modelmetrics::deployment {

Reason::Reason(std::string_view text) {
  if (!text.empty()) text_ = std::make_shared<const std::string>(base::Excerpt(text, kMaxBytes));
}

const std::string& Reason::str() const {
  static const std::string kEmpty;
  return text_ ? *text_ : kEmpty;
}

}  // namespace modelmetrics::deployment
