// Merging Pod reads into one Snapshot (§2.3-§2.4 and steps 6, 9, 11, 12 of §2.2):
// gauges summed per (name, source, scope), windows and cache hits against the Pod's baselines,
// the idle-window, labeled-counter and labeled-histogram pairing rules, the P/D skips, the error
// ratio, the final sorts and `partial`. What each exporter carries, and its own checks (SGLang
// tiers, vLLM's KV connector), come from its profile (exporter_profile.h); this is one loop.
//
// Every missing[] reason is one of the constants in reasons.h or a scrape error's text; `partial`
// is set by any reason not in reason::kNotPartialReasons, or by ForcePartial() (the Pod limit).
//
// Thread-safety: a SnapshotBuilder is used by one thread; the store it writes is shared.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#ifndef MODELMETRICS_AGGREGATION_MERGE_H_
#define MODELMETRICS_AGGREGATION_MERGE_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "aggregation/baseline_store.h"
#include "aggregation/pod_metrics.h"
#include "aggregation/snapshot.h"
#include "exporter_profile.h"
#include "kube/objects.h"
#include "reasons.h"

namespace modelmetrics::deployment {

// An engine or router name the deployment metrics have no rules for (partial: nothing is read).
//   unsupported source: engine "<name>" is not one the deployment metrics read (vllm, sglang,
//   vllm-omni) unsupported source: router "<name>" is not one ... (llm-d-router, vllm-router,
//   sglang-gateway)
std::string UnsupportedEngineReason(std::string_view engine);
std::string UnsupportedRouterReason(std::string_view router);

// "<found> of <expected> owned metrics Pods present"
std::string CoverageReason(size_t found, size_t expected);

class SnapshotBuilder {
 public:
  // `md` and `store` must outlive the builder.
  SnapshotBuilder(const ModelDeployment& md, Baselines* store);

  void AddMissing(std::string pod, std::string source, Reason reason);
  // A Pod whose read failed: its missing[] entry (source "scrape") and its scope in `pods`.
  void AddFailedPod(const Pod& pod, Reason reason);
  void ForcePartial() { forced_partial_ = true; }

  // Merges one successful read of `pod`, taken at `at` (after its body was read and parsed),
  // against the builder's store, or against `baselines` when given.
  void MergePod(const Pod& pod, const PodMetrics& read, ReadTime at,
                Baselines* baselines = nullptr);

  // Sorts every list, sets `partial` and `timestamp` and returns the snapshot.
  Snapshot Finish(WallTime timestamp);

 private:
  struct PodContext;
  // The Pod's entry in the snapshot's `pods`, added at its first mention.
  PodReport& Report(const Pod& pod);
  struct Delta;
  // (window key, scope; "" for a row that is not split) -> the window's delta.
  using Deltas = std::map<std::pair<std::string, std::string>, Delta>;
  void MergeGauges(const PodContext& pod, const PodMetrics& read);
  void AddGauge(const PodContext& pod, const GaugeRow& row, const std::string& scope, double value);
  void MergeUtilization(const PodContext& pod, const PodMetrics& read);
  bool MergeWindows(const PodContext& pod, const PodMetrics& read);  // returns idle
  static std::optional<SteadyTime> PreviousRead(const Deltas& deltas, std::string_view idle_key);
  // One window of one scope; true (and its delta in `deltas`) when it has one.
  bool MergeWindow(const PodContext& pod, const WindowRow& def, const std::string& scope,
                   const WindowValue& value, Deltas& deltas);
  void MergeRatios(const PodContext& pod, const Deltas& deltas,
                   const std::set<std::string>& failed);
  void MergeCacheHits(const PodContext& pod, const PodMetrics& read, bool idle);

  const ModelDeployment& md_;
  Baselines* store_;
  Snapshot snapshot_;
  bool forced_partial_ = false;
  // (name, source, scope) -> index in processing_ or queueing_.
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<bool, size_t>> gauges_;
  // (name, source, scope) -> index in utilization and the sum of its Pods' values (for the mean).
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<size_t, double>>
      utilization_;
  // (name, scope) that a read Pod of the scope lacks: no entry then, never a mean of fewer Pods.
  std::set<std::pair<std::string, std::string>> utilization_absent_;
  std::map<std::string, size_t> pod_reports_;  // Pod name -> index in pods
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_MERGE_H_
