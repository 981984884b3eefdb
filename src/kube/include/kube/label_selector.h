// A Kubernetes label selector in its string form, as a `labelSelector` query parameter or a scale
// target's `status.selector` spells it: comma-separated requirements, each `k=v`, `k==v`, `k!=v`
// (absent or different), `k` (present), `!k` (absent), `k in (a,b)`, `k notin (a,b)` (absent or
// none of them), `k > 3` or `k < 3` (present, an integer, beyond the bound). Whitespace around
// keys, operators and values is ignored; an empty entry of a value set is the empty value; an
// empty selector matches everything.
//
// Parse() refuses (InvalidArgument, naming the requirement) what kube-apiserver refuses as
// malformed: an empty key, a value set that does not close, a stray operator, a bound that is not
// an integer. It does not apply the key and value name rules (objects files do not always follow
// them). Bounded: it reads the text a few times.
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
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists, kGreaterThan, kLessThan };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;  // one for (not) equals and the bounds; the set for (not) in
  };
  static Status ParseRequirement(std::string_view term, Requirement* out);

  std::vector<Requirement> requirements_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_LABEL_SELECTOR_H_
