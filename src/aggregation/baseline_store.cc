// See baseline_store.h.
#include "aggregation/baseline_store.h"
#include "base/mutex.h"

namespace modelmetrics::deployment {

BaselineStore* BaselineStore::Global() {
  static BaselineStore* store = new BaselineStore();  // never destroyed: used until exit
  return store;
}

std::optional<BaselineStore::Sample> BaselineStore::ReplaceWindow(const std::string& key,
                                                                  const Sample& current) {
  return Replace(&windows_, key, current);
}

std::optional<BaselineStore::Sample> BaselineStore::ReplaceCounter(const std::string& key,
                                                                   const Sample& current) {
  return Replace(&counters_, key, current);
}

size_t BaselineStore::size() const {
  base::MutexLock lock(&mu_);
  return windows_.size() + counters_.size();
}

std::optional<BaselineStore::Sample> BaselineStore::Replace(Map* map, const std::string& key,
                                                            const Sample& current) {
  base::MutexLock lock(&mu_);
  const SteadyTime now = current.at.steady;
  // Reads of one snapshot arrive out of order (each timed at its own parse): an earlier time
  // than the last purge is not a reason to sweep again.
  if (now - last_purge_ >= std::chrono::seconds(1)) PurgeLocked(now);
  auto [it, inserted] = map->try_emplace(key, current);
  if (inserted) return std::nullopt;
  const Sample previous = it->second;
  it->second = current;
  const auto age = now - previous.at.steady;
  if (age <= SteadyClock::duration::zero() || age > kMaxAge) return std::nullopt;
  return previous;
}

void BaselineStore::PurgeLocked(SteadyTime now) {
  last_purge_ = now;
  for (Map* map : {&windows_, &counters_}) {
    std::erase_if(*map,
                  [now](const auto& entry) { return now - entry.second.at.steady > kPurgeAge; });
  }
}

}  // namespace modelmetrics::deployment
