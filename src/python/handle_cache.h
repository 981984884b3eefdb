// Per-object caches of instrument handles for lazily bound children, keyed by the label values
// after model_name. Private to src/python.
//
// Contract. A lookup costs one hash of the joined label values and one comparison; a miss goes
// to Family::Labels (the registry's mutex) and is remembered. At most kMaxEntries distinct label
// sets are remembered per family and object; beyond that (a caller inventing label values)
// every call goes to Family::Labels, which stays correct, only slower. The cache is touched only
// with the GIL held, which serialises it; the handles themselves are lock-free and used by any
// thread.
#ifndef MODELMETRICS_PYTHON_HANDLE_CACHE_H_
#define MODELMETRICS_PYTHON_HANDLE_CACHE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "modelmetrics/metrics.h"
#include "pipeline/observe_recorder.h"

namespace modelmetrics::python {

using pipeline::AnyHandle;

class HandleCache {
 public:
  static constexpr size_t kMaxEntries = 4096;

  const AnyHandle* Find(std::string_view key) const {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  // Remembers `handle` under `key` unless the cache is full; returns what the caller should use.
  const AnyHandle& Insert(std::string_view key, const AnyHandle& handle) {
    if (map_.size() >= kMaxEntries) {
      overflow_ = handle;
      return overflow_;
    }
    return map_.emplace(std::string(key), handle).first->second;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, AnyHandle, Hash, std::equal_to<>> map_;
  AnyHandle overflow_;
};

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_HANDLE_CACHE_H_
