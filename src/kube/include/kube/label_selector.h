// A Kubernetes label selector in its string form, as a `labelSelector` query parameter or a scale
// target's `status.selector` spells it: comma-separated requirements, each `k=v`, `k==v`, `k!=v`
// (absent or different), `k` (present), `!k` (absent), `k in (a,b)` or `k notin (a,b)` (absent
// or none of them). Whitespace around keys, operators and values is ignored; an empty selector
// matches everything.
//
// Parse() refuses (InvalidArgument, naming the requirement) what kube-apiserver refuses as
// malformed: an empty key, an empty or unclosed value set, a stray operator. It does not check
// the key and value name rules. Bounded: it reads the text once.
//
// Thread-safety: a parsed selector is immutable; Matches() may be called from any thread.
#ifndef MODELMETRICS_KUBE_LABEL_SELECTOR_H_
#define MODELMETRICS_KUBE_LABEL_SELECTOR_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {

class LabelSelector {
 public:
  static Status Parse(std::string_view text, LabelSelector* out);

  bool Matches(const ObjectMeta& meta) const;

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;  // one for (not) equals; the set for (not) in
  };
  static Status ParseRequirement(std::string_view term, Requirement* out);

  std::vector<Requirement> requirements_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_LABEL_SELECTOR_H_
