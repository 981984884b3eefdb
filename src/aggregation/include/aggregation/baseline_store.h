// The process-wide memory of each Pod's previous counter read (§2.5), so one GET can
// report what happened since the last one.
//
// BaselineStore is the direct-scrape Baselines (the interface the merge windows against; the
// Prometheus source has its own, from the store's samples).
//
// Two maps, windows keyed `mdUID/podUID/<series>` and cache counters keyed `mdUID/podUID/<scope>`,
// each entry holding two values (sum and count, or hits and queries) and the read time.
// Replace() always stores the new sample ("replace, then validate") and returns the previous one
// only when 0 < at - previous.at <= 5 min on the monotonic clock; so a reset shows once, a Pod UID
// change starts fresh, and the first read after more than 5 min of silence awaits a second sample.
// Entries older than 10 min relative to the newest read are purged; the sweep runs at most once per
// second of read time, which keeps Replace() O(1) amortised without changing what any read can see
// (a purgeable entry is already too old to be valid).
//
// Thread-safety: all methods are safe to call concurrently (one mutex).
// Section numbers (§n) cite docs/deployment-behaviour.md.
#ifndef MODELMETRICS_AGGREGATION_BASELINE_STORE_H_
#define MODELMETRICS_AGGREGATION_BASELINE_STORE_H_

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "aggregation/snapshot.h"
#include "base/mutex.h"

namespace modelmetrics::deployment {

struct BaselineSample {
  double first = 0;   // sum, or hits
  double second = 0;  // count, or queries
  ReadTime at;        // ages and windows use at.steady
};

// Where the merge finds the read a Pod's current one is windowed against. `pod_prefix` is
// `mdUID/podUID/`; `id` is a window's source family or a cache scope.
class Baselines {
 public:
  struct Previous {
    std::optional<BaselineSample> sample;  // none: awaiting a second sample
    bool reset = false;                    // a decrease was seen inside the window
  };
  virtual ~Baselines() = default;
  virtual Previous Window(std::string_view pod_prefix, std::string_view id,
                          const BaselineSample& current) = 0;
  virtual Previous Counter(std::string_view pod_prefix, std::string_view id,
                           const BaselineSample& current) = 0;
};

// The direct-scrape Baselines: the previous GET's read, kept in process.
class BaselineStore : public Baselines {
 public:
  static constexpr std::chrono::minutes kMaxAge{5};
  static constexpr std::chrono::minutes kPurgeAge{10};

  using Sample = BaselineSample;

  // The store every Aggregator shares unless given its own.
  static BaselineStore* Global();

  std::optional<Sample> ReplaceWindow(const std::string& key, const Sample& current);
  std::optional<Sample> ReplaceCounter(const std::string& key, const Sample& current);

  size_t size() const;

  Previous Window(std::string_view pod_prefix, std::string_view id,
                  const BaselineSample& current) override {
    return {ReplaceWindow(std::string(pod_prefix).append(id), current)};
  }
  Previous Counter(std::string_view pod_prefix, std::string_view id,
                   const BaselineSample& current) override {
    return {ReplaceCounter(std::string(pod_prefix).append(id), current)};
  }

 private:
  using Map = std::unordered_map<std::string, Sample>;
  std::optional<Sample> Replace(Map* map, const std::string& key, const Sample& current);
  void PurgeLocked(SteadyTime now) REQUIRES(mu_);

  mutable base::Mutex mu_;
  Map windows_ GUARDED_BY(mu_);
  Map counters_ GUARDED_BY(mu_);
  SteadyTime last_purge_ GUARDED_BY(mu_){};
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_BASELINE_STORE_H_
