// Merging Pod reads into one Snapshot (reference §2.3-§2.4 and steps 6, 9, 11, 12 of §2.2):
// gauges summed per (name, source, scope), windows and cache hits against the Pod's baselines,
// the idle-window, labeled-counter and labeled-histogram pairing rules, the P/D skips, the error
// ratio, the final sorts and `partial`. What each exporter carries, and its own checks (SGLang
// tiers, vLLM's KV connector), come from its profile (exporter_profile.h); this is one loop.
//
// Every missing[] reason is one of the constants below or a scrape error's text; `partial` is set
// by any reason not in kNotPartialReasons, or by ForcePartial() (the Pod limit).
//
// Thread-safety: a SnapshotBuilder is used by one thread; the store it writes is shared.
#ifndef MODELMETRICS_DEPLOYMENT_MERGE_H_
#define MODELMETRICS_DEPLOYMENT_MERGE_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "deployment/baseline_store.h"
#include "deployment/exporter_profile.h"
#include "deployment/objects.h"
#include "deployment/pod_metrics.h"
#include "deployment/snapshot.h"

namespace modelmetrics::deployment {

namespace reason {
inline constexpr std::string_view kNoOwnedPod = "no owned metrics Pod";
inline constexpr std::string_view kPodLimit = "Pod count exceeds the bounded scrape limit";
inline constexpr std::string_view kAbsent = "metric is absent";
inline constexpr std::string_view kAwaiting = "awaiting a second counter sample";
inline constexpr std::string_view kCounterReset = "counter reset";
inline constexpr std::string_view kCacheReset = "counter reset or incompatible denominator";
inline constexpr std::string_view kNoObservations = "no observations in the sampling window";
inline constexpr std::string_view kNoQueries = "no queries in the sampling window";
inline constexpr std::string_view kDifferentWindows =
    "request and error counters have different sampling windows";
inline constexpr std::string_view kNoRequests = "no requests in the sampling window";
inline constexpr std::string_view kErrorsExceedRequests = "error counter exceeds request counter";
// Not upstream's: Go cannot encode such a value at all. A hostile Pod's huge values can overflow
// a sum or a mean; the entry is reported missing rather than sent as a false zero.
inline constexpr std::string_view kNotFinite = "value is not a finite number";
// Not upstream's either (upstream says kAbsent): the family is there, but no series holds a value
// the spec reads (NaN, infinite and negative values are skipped). A format string: the value.
inline constexpr std::string_view kInvalidValue =
    "metric has no valid value: it reads {} (NaN, infinite and negative values are skipped)";
// Scrape errors (source "scrape").
inline constexpr std::string_view kNoEndpoint = "pod has no ready advertised metrics endpoint";
inline constexpr std::string_view kInvalidPort = "pod advertises an invalid metrics port";
inline constexpr std::string_view kUndeclaredPort =
    "pod advertises a metrics port absent from its containers";
inline constexpr std::string_view kInvalidScheme = "pod advertises an invalid metrics scheme";
inline constexpr std::string_view kTooLarge = "metrics response exceeds 1048576 bytes";

// The reasons that leave `partial` unset (modelDeploymentNotPartialReasons).
inline constexpr std::string_view kLabeledCounterUnexported =
    "labeled failure or error counter is not exported before its first increment; its paired "
    "counter was read in the same scrape";
inline constexpr std::string_view kLabeledHistogramUnexported =
    "labeled histogram is not exported before its first observation; its paired histogram "
    "recorded no new observation in the same window";
inline constexpr std::string_view kVllmRouterPdNoProcessing =
    "unsupported source: the vLLM router exports no router processing gauge for a "
    "prefill/decode deployment";
inline constexpr std::string_view kVllmNoKvConnector =
    "unsupported source: the Pod renders no KV connector, so vLLM queries no external prefix "
    "cache";
inline constexpr std::string_view kVllmExternalNotStore =
    "unsupported source: vLLM counts every token any KV connector loads as an external prefix "
    "cache hit, and this Pod's are not the shared store's alone: it attaches no KV cache pool, "
    "or it is the decode half of a pair, whose store hits cannot be told from the blocks the "
    "prefill half sends";
inline constexpr std::string_view kSglangNoHostTier =
    "unsupported source: the Pod renders no SGLang argument that selects a tree cache with a "
    "host tier, so SGLang counts no host hit";
inline constexpr std::string_view kSglangNoStorageTier =
    "unsupported source: the Pod renders no SGLang storage backend, so SGLang counts no storage "
    "hit";
inline constexpr std::string_view kIdleWindow =
    "idle sampling window: the Pod's TTFT histogram recorded no new request, so this source has "
    "no new sample";

// Not upstream's: the vLLM-Omni profile (exporters/vllm_omni.cc).
inline constexpr std::string_view kNotYetObserved =
    "not exported before its first observation: vLLM-Omni creates the family when a stage first "
    "records it";
inline constexpr std::string_view kOmniIdleWindow =
    "idle sampling window: the pipeline's end-to-end latency histogram recorded no finished "
    "request, so this source has no new sample";
inline constexpr std::string_view kRatioIncomplete =
    "a part of the ratio has no value in this sampling window (see its own entry)";
inline constexpr std::string_view kNoSpeechStreams =
    "no Speech API stream ended in the sampling window";
inline constexpr std::string_view kNoAudioFinished =
    "no streamed audio request finished in the sampling window";

inline constexpr std::string_view kNotPartialReasons[] = {
    kLabeledCounterUnexported, kLabeledHistogramUnexported,
    kVllmRouterPdNoProcessing, kVllmNoKvConnector,
    kVllmExternalNotStore,     kSglangNoHostTier,
    kSglangNoStorageTier,      kIdleWindow,
    kNotYetObserved,           kOmniIdleWindow,
    kRatioIncomplete,          kNoSpeechStreams,
    kNoAudioFinished};
}  // namespace reason

bool IsNotPartialReason(std::string_view reason);

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
  void ForcePartial() { forced_partial_ = true; }

  // Merges one successful read of `pod`, taken at `at` (after its body was read and parsed),
  // against the builder's store, or against `baselines` when given.
  void MergePod(const Pod& pod, const PodMetrics& read, ReadTime at,
                Baselines* baselines = nullptr);

  // Sorts every list, sets `partial` and `timestamp` and returns the snapshot.
  Snapshot Finish(WallTime timestamp);

 private:
  struct PodContext;
  struct Delta;
  // (window key, scope; "" for a row that is not split) -> the window's delta.
  using Deltas = std::map<std::pair<std::string, std::string>, Delta>;
  void MergeGauges(const PodContext& pod, const PodMetrics& read);
  void AddGauge(const PodContext& pod, const GaugeRow& row, const std::string& scope, double value);
  bool MergeWindows(const PodContext& pod, const PodMetrics& read);  // returns idle
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
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_DEPLOYMENT_MERGE_H_
