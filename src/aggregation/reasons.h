// The missing[] reasons the deployment metrics write (and the sources that are not a family), each
// once, with whether it sets `partial`: every reason does except the ones in
// reason::kNotPartialReasons (upstream's modelDeploymentNotPartialReasons, and the vLLM-Omni
// profile's own). The exporter profiles and the merge both name them from here, so the data sits
// below the algorithm.
//
// Thread-safety: constants.
#ifndef MODELMETRICS_AGGREGATION_REASONS_H_
#define MODELMETRICS_AGGREGATION_REASONS_H_

#include <string_view>

namespace modelmetrics::deployment {

namespace reason {
inline constexpr std::string_view kNoOwnedPod = "no owned metrics Pod";
inline constexpr std::string_view kPodLimit = "Pod count exceeds the bounded scrape limit";
inline constexpr std::string_view kAbsent = "metric is absent";
// Ours: kAbsent for a row with older names, naming every family looked for, in order.
inline constexpr std::string_view kAbsentUnderAnyName = "metric is absent: looked for {}";
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
// Ours: a row with known labels whose series another label splits (GaugeRow::known_labels).
inline constexpr std::string_view kUnknownSplit =
    "metric not read: its series are split by `{}`, a label the exporter's profile does not know "
    "(parts, a total beside them or copies: a sum could count twice)";
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

// Not upstream's: the llm-d router's profile (exporters/llmd_router.cc) reads TTFT and TPOT from
// streaming requests only, and a router that has served none exports neither.
inline constexpr std::string_view kLlmdNoStreamingRequest =
    "not exported before the router's first streaming request: a non-streaming request's TTFT is "
    "its whole duration and it records no TPOT, so both are read from streaming requests only";

// Ours: a utilization row's family (UtilizationRow) is not there. The entry is an extension beside
// GPUStack's fields, which do not depend on it, so it leaves `partial` unset.
inline constexpr std::string_view kUtilizationAbsent =
    "utilization metric is absent (a modelmetrics extension: the GPUStack fields do not depend on "
    "it)";

inline constexpr std::string_view kNotPartialReasons[] = {
    kLabeledCounterUnexported, kLabeledHistogramUnexported,
    kVllmRouterPdNoProcessing, kVllmNoKvConnector,
    kVllmExternalNotStore,     kSglangNoHostTier,
    kSglangNoStorageTier,      kIdleWindow,
    kNotYetObserved,           kOmniIdleWindow,
    kRatioIncomplete,          kNoSpeechStreams,
    kNoAudioFinished,          kLlmdNoStreamingRequest,
    kUtilizationAbsent};
}  // namespace reason

// The missing[] sources that are not a family, a ratio's "a+b", a cache tier or a scope.
namespace source {
inline constexpr std::string_view kScrape = "scrape";                     // the Pod's whole read
inline constexpr std::string_view kPodDiscovery = "pod-discovery";        // the Pod limit
inline constexpr std::string_view kCacheCounters = "cache-hit counters";  // no tier at all
}  // namespace source

// False for every reason that sets `partial` (all but kNotPartialReasons).
constexpr bool IsNotPartialReason(std::string_view text) {
  for (std::string_view r : reason::kNotPartialReasons) {
    if (r == text) return true;
  }
  return false;
}

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_REASONS_H_
