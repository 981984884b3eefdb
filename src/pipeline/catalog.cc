// The catalog tables. See catalog.h for the contract and sources.
#include "pipeline/catalog.h"

#include <algorithm>

namespace modelmetrics::pipeline {
namespace {

using K = Kind;
constexpr Bind kEager = Bind::kEager;
constexpr Bind kLazy = Bind::kLazy;
constexpr std::span<const double> kNoBuckets;

// ---- vllm_omni:* ----

// A row's name and instrument, from its one definition (MM_VLLM_OMNI_FAMILIES in catalog.h).
#define MM_OMNI(id) OmniFamilyName(OmniFamily::id), OmniFamilyKind(OmniFamily::id)

constexpr FamilySpec kOmniFamilies[] = {
    // Pipeline (§3.1; design "Pipeline" plus the two token counters of the reference).
    {MM_OMNI(kNumRequestsRunning),
     "Number of requests currently running across all pipeline stages.", kPipelineLabels,
     kNoBuckets, kEager, Group::kPipeline},
    {MM_OMNI(kNumRequestsWaiting), "Number of requests waiting to be scheduled.", kPipelineLabels,
     kNoBuckets, kEager, Group::kPipeline},
    {MM_OMNI(kRequestsSuccess),
     "Total requests by completion reason (stop / length / abort / ...). Aborts cover "
     "client-disconnect / cancellation paths in addition to upstream FinishReason.ABORT.",
     kSuccessLabels, kNoBuckets, kLazy, Group::kPipeline},
    {MM_OMNI(kE2eRequestLatencyS),
     "Pipeline-global end-to-end request latency in seconds (user arrival to complete response).",
     kPipelineLabels, kSecondsBuckets, kEager, Group::kPipeline},
    {MM_OMNI(kPromptTokens), "Total prompt (input) tokens processed across all pipeline stages.",
     kPipelineLabels, kNoBuckets, kEager, Group::kPipeline, Guard::kSkipNonPositive},
    {MM_OMNI(kGenerationTokens),
     "Total generation (output) tokens produced across all pipeline stages.", kPipelineLabels,
     kNoBuckets, kEager, Group::kPipeline, Guard::kSkipNonPositive},

    // Image and diffusion service-level families (§3.1).
    {MM_OMNI(kStageGenTimeS), "Per-stage generation time in seconds for diffusion / image stages.",
     kStageGenTimeLabels, kSecondsBuckets, kLazy, Group::kImage, Guard::kClampNegative},
    {MM_OMNI(kRequestQueueWaitS),
     "Per-request queue wait between submit arrival and stage submit, in seconds.", kPipelineLabels,
     kSecondsBuckets, kEager, Group::kImage, Guard::kClampNegative},
    {MM_OMNI(kStageWaitingRequests),
     "Sum of the latest scheduler waiting snapshots across a stage's replicas; diffusion snapshots "
     "update when outputs arrive.",
     kDiffusionLabels, kNoBuckets, kLazy, Group::kImage, Guard::kClampNegative},
    {MM_OMNI(kStageInQueueS),
     "Time in seconds from diffusion scheduler enqueue to initial execution admission. Zero is the "
     "healthy low-load baseline and is counted.",
     kDiffusionLabels, kSecondsFastBuckets, kLazy, Group::kImage, Guard::kClampNegative},
    {MM_OMNI(kNumInferenceSteps), "Diffusion step count distribution per request.", kPipelineLabels,
     kPrometheusDefaultBuckets, kEager, Group::kImage, Guard::kSkipNonPositive},
    {MM_OMNI(kImageCount),
     "Cumulative image count; per-model rate. Throughput recovered via rate().", kPipelineLabels,
     kNoBuckets, kEager, Group::kImage, Guard::kSkipNonPositive},
    {MM_OMNI(kImagePixels), "Image pixel count distribution per request.", kPipelineLabels,
     kPrometheusDefaultBuckets, kEager, Group::kImage, Guard::kSkipNonPositive},
    {MM_OMNI(kPeakMemoryMb), "Peak GPU memory in MB observed during a stage's generation.",
     kDiffusionLabels, kNoBuckets, kLazy, Group::kImage, Guard::kClampNegative},
    {MM_OMNI(kRequestsFailed),
     "Total requests by failure reason. Pairs with requests_success_total (abort bucket) to give "
     "the full failure surface. Reasons are bounded to client_abort, client_disconnect, "
     "stage_error, and unknown.",
     kFailedLabels, kNoBuckets, kLazy, Group::kImage},
    {MM_OMNI(kKvWaitS), "KV cache transfer wait time per request, sliced by connector backend.",
     kKvWaitLabels, kSecondsBuckets, kLazy, Group::kImage, Guard::kSkipNegative},

    // Diffusion execution breakdown (§3.3), per replica.
    {MM_OMNI(kDiffusionExecS), "DiT forward pass execution time per request in seconds.",
     kStageLabels, kSecondsBuckets, kLazy, Group::kDiffusion},
    {MM_OMNI(kDiffusionExecPerStepS),
     "DiT forward pass execution time per denoising step in seconds.", kStageLabels,
     kSecondsFastBuckets, kLazy, Group::kDiffusion},
    {MM_OMNI(kDiffusionPreprocessS), "Diffusion input preprocessing time per request in seconds.",
     kStageLabels, kSecondsFastBuckets, kLazy, Group::kDiffusion},
    {MM_OMNI(kDiffusionPostprocessS),
     "Diffusion output postprocessing (VAE decode) time per request in seconds.", kStageLabels,
     kSecondsFastBuckets, kLazy, Group::kDiffusion},
    {MM_OMNI(kVaeDecodeS), "VAE decode latency in seconds (latents -> pixels/audio/video).",
     kStageLabels, kSecondsBuckets, kLazy, Group::kDiffusion, Guard::kSkipNegative},
    {MM_OMNI(kDiffusionForwardS),
     "Diffusion forward-only latency in seconds (denoise loop; excludes preprocess / postprocess / "
     "VAE decode / KV load). Absent when the pipeline profiler is off.",
     kStageLabels, kSecondsBuckets, kLazy, Group::kDiffusion, Guard::kSkipNegative},
    {MM_OMNI(kDiffusionKvLoadS),
     "Diffusion KV-recv latency in seconds (AR→diffusion KV fetch; absent when the stage has no "
     "upstream KV to receive).",
     kStageLabels, kSecondsFastBuckets, kLazy, Group::kDiffusion, Guard::kSkipNegative},
    {MM_OMNI(kImageTtfpS),
     "Image time-to-first-output in seconds (stage submit → first image materialized; "
     "non-streaming single-image). Stage-level, not e2e — excludes API queue and inter-stage "
     "transfer before the image stage.",
     kStageLabels, kSecondsBuckets, kLazy, Group::kDiffusion, Guard::kSkipNegative},
    {MM_OMNI(kDenoiseStepLatencyS),
     "Mean per-step denoise forward latency in seconds (forward_time / num_inference_steps).",
     kStageLabels, kSecondsFastBuckets, kLazy, Group::kDiffusion, Guard::kSkipNonPositive},

    // Audio (§3.2), per replica.
    {MM_OMNI(kAudioTtfpS), "Time from request arrival to first audio packet/frame, in seconds.",
     kStageLabels, kSecondsBuckets, kLazy, Group::kAudio},
    {MM_OMNI(kAudioDurationS),
     "Generated audio content duration in seconds (audio_frames / sample_rate).", kStageLabels,
     kSecondsBuckets, kLazy, Group::kAudio},
    {MM_OMNI(kAudioRtf),
     "Audio real-time factor (stage_gen_time_s / audio_duration_s); streaming TTS requires < 1.",
     kStageLabels, kRtfBuckets, kLazy, Group::kAudio},
    {MM_OMNI(kAudioFrames),
     "Cumulative audio frame count; per-model rate (not summable across models). Throughput "
     "recovered via rate().",
     kStageLabels, kNoBuckets, kLazy, Group::kAudio, Guard::kSkipNonPositive},
    {MM_OMNI(kAudioUnderrunS),
     "Per-request worst-case player-deficit in seconds (max time the player ran out of buffered "
     "audio). > 0 indicates listener experienced silent gaps.",
     kStageLabels, kSecondsFastBuckets, kLazy, Group::kAudio, Guard::kClampNegative},
    {MM_OMNI(kAudioContinuityOk),
     "Incremented when the request's worst underrun stayed below threshold_ms. Pair with "
     "requests_success_total to compute streaming-continuity health rate.",
     kAudioContinuityLabels, kNoBuckets, kLazy, Group::kAudio},
    {MM_OMNI(kAudioSkippedRequests),
     "Silent-loss counter — code2wav rejected malformed codec input and returned 200 OK with empty "
     "audio.",
     kAudioSkippedLabels, kNoBuckets, kLazy, Group::kAudio},

    // Speech streaming (§3.7, names from the design doc).
    {MM_OMNI(kSpeechStreamAborted),
     "Interrupted Speech audio generators, including before the first PCM payload, by reason "
     "(cancelled, closed, engine_dead, error).",
     kSpeechAbortedLabels, kNoBuckets, kLazy, Group::kSpeech},
    {MM_OMNI(kSpeechStreamCompleted),
     "Normally completed Speech audio generators; does not confirm client receipt.",
     kPipelineLabels, kNoBuckets, kLazy, Group::kSpeech},

    // Cross-stage transfer (§3.4), per replica edge; one observation per physical hop.
    {MM_OMNI(kTransferSizeBytes),
     "Per-transfer payload size in bytes (one observation per physical hop).", kTransferLabels,
     kBytesBuckets, kLazy, Group::kTransfer},
    {MM_OMNI(kTransferTxS), "Sender-side time in seconds (serialize + submit to connector).",
     kTransferLabels, kSecondsFastBuckets, kLazy, Group::kTransfer},
    {MM_OMNI(kTransferRxS), "Receiver-side time in seconds (recv + deserialize).", kTransferLabels,
     kSecondsFastBuckets, kLazy, Group::kTransfer},
    {MM_OMNI(kTransferInFlightS), "Network in-flight time in seconds (TX done -> RX recv start).",
     kTransferLabels, kSecondsFastBuckets, kLazy, Group::kTransfer},

    // Realtime server-side VAD (§3.5, RealtimeVADMetrics): values arrive in ms, recorded in s.
    {MM_OMNI(kRealtimeVadActiveSessions),
     "Number of active Realtime sessions using server-side VAD.", kPipelineLabels, kNoBuckets,
     kEager, Group::kRealtime},
    {MM_OMNI(kRealtimeVadInferenceLatencyS),
     "Server VAD inference time for one appended audio batch, in seconds.", kPipelineLabels,
     kSecondsFastBuckets, kEager, Group::kRealtime},
    {MM_OMNI(kRealtimeVadEndpointDelayS),
     "Detected silence between the last speech frame and the committed endpoint, in seconds.",
     kPipelineLabels, kSecondsFastBuckets, kEager, Group::kRealtime},
    {MM_OMNI(kRealtimeVadErrors), "Server VAD errors and input-overflow rejections by reason.",
     kRealtimeVadErrorLabels, kNoBuckets, kLazy, Group::kRealtime},
};
#undef MM_OMNI

// The rows are in the list's order, one per family: a family's row is table[id].
template <typename Id, size_t N>
constexpr bool RowsFollowTheList(const FamilySpec (&table)[N]) {
  if (N != FamilyCount(Id{})) return false;
  for (size_t i = 0; i < N; ++i) {
    const auto id = static_cast<Id>(i);
    if (table[i].name != FamilyName(id) || table[i].kind != FamilyKind(id)) return false;
  }
  return true;
}
static_assert(RowsFollowTheList<OmniFamily>(kOmniFamilies),
              "kOmniFamilies must hold one row per MM_VLLM_OMNI_FAMILIES entry, in order");

// ---- vllm:* (generated from the V1 fixture; see catalog.h) ----

constexpr std::string_view kRequestSuccessLabels[] = {"model_name", "stage", "replica",
                                                      "finished_reason"};
constexpr std::string_view kSleepStateLabels[] = {"model_name", "stage", "replica", "sleep_state"};
constexpr std::string_view kPromptSourceLabels[] = {"model_name", "stage", "replica", "source"};
// Upstream builds these from CacheConfig.metrics_info() plus `engine` (last); the key set is the
// fixture's vLLM version's (alphabetical, as exposed).
// clang-format off
constexpr std::string_view kCacheConfigInfoLabels[] = {
    "_block_size_resolved", "block_size", "cache_dtype", "calculate_kv_scales",
    "cpu_kvcache_space_bytes", "enable_prefix_caching", "gpu_memory_utilization",
    "is_attention_free", "kv_cache_memory_bytes", "kv_offloading_backend", "kv_offloading_size",
    "kv_sharing_fast_prefill", "mamba_block_size", "mamba_cache_dtype", "mamba_cache_mode",
    "mamba_page_size_padded", "mamba_ssm_cache_dtype", "num_cpu_blocks", "num_gpu_blocks",
    "num_gpu_blocks_override", "prefix_caching_hash_algo", "sliding_window",
    "user_specified_block_size", "stage", "replica"};
// clang-format on

// Upstream derives the token-count lists from max_model_len (1-2-5 series up to it; 2048 for
// the fixture's TinyLlama) and the others are fixed.
constexpr double kNixlXferTimeBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                           0.2,   0.3,  0.5,   0.75, 1,     5};
constexpr double kNixlPostTimeBuckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                           0.2,   0.3,   0.5,  0.75,  1,    5};
constexpr double kNixlBytesBuckets[] = {2048,      8192,      32768,      131072,
                                        524288,    2097152,   8388608,    33554432,
                                        134217728, 536870912, 2147483648, 8589934592};
constexpr double kNixlDescriptorsBuckets[] = {10,  20,   30,   50,   75,    100,   200,
                                              400, 1000, 2000, 4000, 10000, 20000, 50000};
constexpr double kTokenCountBuckets[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};
constexpr double kIterationTokensBuckets[] = {1,   8,    16,   32,   64,   128,  256,
                                              512, 1024, 2048, 4096, 8192, 16384};
constexpr double kRequestParamsNBuckets[] = {1, 2, 5, 10, 20};
constexpr double kTtftBuckets[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                   0.25,  0.5,   0.75, 1,    2.5,  5,    7.5,  10,
                                   20,    40,    80,   160,  640,  2560};
constexpr double kTokenLatencyBuckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                           0.75, 1,     2.5,  5,     7.5, 10,   20,  40,  80};
constexpr double kRequestPhaseBuckets[] = {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,  20,
                                           30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680};

// A row's name and instrument, from its one definition (MM_VLLM_ENGINE_FAMILIES in catalog.h).
#define MM_ENGINE(id) EngineFamilyName(EngineFamily::id), EngineFamilyKind(EngineFamily::id)

constexpr FamilySpec kVllmEngineFamilies[] = {
    {MM_ENGINE(kNixlXferTimeSeconds), "Histogram of transfer duration for NIXL KV Cache transfers.",
     kEngineLabels, kNixlXferTimeBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNixlPostTimeSeconds),
     "Histogram of transfer post time for NIXL KV Cache transfers.", kEngineLabels,
     kNixlPostTimeBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNixlBytesTransferred),
     "Histogram of bytes transferred per NIXL KV Cache transfers.", kEngineLabels,
     kNixlBytesBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNixlNumDescriptors),
     "Histogram of number of descriptors per NIXL  KV Cache transfers.", kEngineLabels,
     kNixlDescriptorsBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNixlNumFailedTransfers), "Number of failed NIXL KV Cache transfers.", kEngineLabels,
     kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNixlNumFailedNotifications), "Number of failed NIXL KV Cache notifications.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNixlNumKvExpiredReqs),
     "Number of requests that had their KV expire. NOTE: This metric is tracked on the P instance.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kEstimatedFlopsPerGpu),
     "Estimated number of floating point operations per GPU (for Model Flops Utilization "
     "calculations).",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kEstimatedReadBytesPerGpu),
     "Estimated number of bytes read from memory per GPU (for Model Flops Utilization "
     "calculations).",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kEstimatedWriteBytesPerGpu),
     "Estimated number of bytes written to memory per GPU (for Model Flops Utilization "
     "calculations).",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNumRequestsRunning), "Number of requests in model execution batches.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNumRequestsWaiting), "Number of requests waiting to be processed.", kEngineLabels,
     kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNumRequestsWaitingByReason),
     "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling "
     "capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked "
     "status). Sum of all reasons equals vllm:num_requests_waiting.",
     kEngineWaitingReasonLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kEngineSleepState),
     "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "
     "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
     kSleepStateLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kKvCacheUsagePerc), "KV-cache usage. 1 means 100 percent usage.", kEngineLabels,
     kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kPrefixCacheQueries), "Prefix cache queries, in terms of number of queried tokens.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kPrefixCacheHits), "Prefix cache hits, in terms of number of cached tokens.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kExternalPrefixCacheQueries),
     "External prefix cache queries from KV connector cross-instance cache sharing, in terms "
     "of number of queried tokens.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kExternalPrefixCacheHits),
     "External prefix cache hits from KV connector cross-instance cache sharing, in terms of "
     "number of cached tokens.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kMmCacheQueries), "Multi-modal cache queries, in terms of number of queried items.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kMmCacheHits), "Multi-modal cache hits, in terms of number of cached items.",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kNumPreemptions), "Cumulative number of preemption from the engine.", kEngineLabels,
     kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kPromptTokens), "Number of prefill tokens processed.", kEngineLabels, kNoBuckets,
     kEager, Group::kEngine},
    {MM_ENGINE(kPromptTokensBySource), "Number of prompt tokens by source.", kPromptSourceLabels,
     kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kPromptTokensCached), "Number of cached prompt tokens (local + external).",
     kEngineLabels, kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kGenerationTokens), "Number of generation tokens processed.", kEngineLabels,
     kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestSuccess), "Count of successfully processed requests.", kRequestSuccessLabels,
     kNoBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestPromptTokens), "Number of prefill tokens processed.", kEngineLabels,
     kTokenCountBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestGenerationTokens), "Number of generation tokens processed.", kEngineLabels,
     kTokenCountBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kIterationTokensTotal), "Histogram of number of tokens per engine_step.",
     kEngineLabels, kIterationTokensBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestMaxNumGenerationTokens),
     "Histogram of maximum number of requested generation tokens.", kEngineLabels,
     kTokenCountBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestParamsN), "Histogram of the n request parameter.", kEngineLabels,
     kRequestParamsNBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestParamsMaxTokens), "Histogram of the max_tokens request parameter.",
     kEngineLabels, kTokenCountBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kTimeToFirstTokenSeconds), "Histogram of time to first token in seconds.",
     kEngineLabels, kTtftBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kInterTokenLatencySeconds), "Histogram of inter-token latency in seconds.",
     kEngineLabels, kTokenLatencyBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestTimePerOutputTokenSeconds),
     "Histogram of time_per_output_token_seconds per request.", kEngineLabels, kTokenLatencyBuckets,
     kEager, Group::kEngine},
    {MM_ENGINE(kE2eRequestLatencySeconds), "Histogram of e2e request latency in seconds.",
     kEngineLabels, kRequestPhaseBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestQueueTimeSeconds), "Histogram of time spent in WAITING phase for request.",
     kEngineLabels, kRequestPhaseBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestInferenceTimeSeconds),
     "Histogram of time spent in RUNNING phase for request.", kEngineLabels, kRequestPhaseBuckets,
     kEager, Group::kEngine},
    {MM_ENGINE(kRequestPrefillTimeSeconds), "Histogram of time spent in PREFILL phase for request.",
     kEngineLabels, kRequestPhaseBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestDecodeTimeSeconds), "Histogram of time spent in DECODE phase for request.",
     kEngineLabels, kRequestPhaseBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kRequestPrefillKvComputedTokens),
     "Histogram of new KV tokens computed during prefill (excluding cached tokens).", kEngineLabels,
     kTokenCountBuckets, kEager, Group::kEngine},
    {MM_ENGINE(kCacheConfigInfo), "Information of the LLMEngine CacheConfig",
     kCacheConfigInfoLabels, kNoBuckets, kEager, Group::kEngine},
};
#undef MM_ENGINE

static_assert(RowsFollowTheList<EngineFamily>(kVllmEngineFamilies),
              "kVllmEngineFamilies must hold one row per MM_VLLM_ENGINE_FAMILIES entry, in order");

const FamilySpec* Find(std::span<const FamilySpec> table, std::string_view name) {
  auto it = std::find_if(table.begin(), table.end(),
                         [name](const FamilySpec& f) { return f.name == name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

std::string_view KindName(Kind kind) { return MetricTypeName(ToMetricType(kind), Format::kText); }

AnyFamily RegisterFamily(Registry& registry, const FamilySpec& spec, std::string* error) {
  const auto made = [](auto* family) -> AnyFamily {
    if (family == nullptr) return std::monostate{};
    return family;
  };
  switch (spec.kind) {
    case Kind::kCounter:
      return made(registry.AddCounter(OptionsOf(spec), error));
    case Kind::kGauge:
      return made(registry.AddGauge(OptionsOf(spec), error));
    case Kind::kHistogram:
      return made(registry.AddHistogram(OptionsOf(spec), error));
  }
  return std::monostate{};
}

std::string_view BindName(Bind bind) { return bind == Bind::kEager ? "eager" : "lazy"; }

std::string_view GroupName(Group group) {
  switch (group) {
    case Group::kPipeline:
      return "pipeline";
    case Group::kImage:
      return "image";
    case Group::kDiffusion:
      return "diffusion";
    case Group::kAudio:
      return "audio";
    case Group::kSpeech:
      return "speech";
    case Group::kTransfer:
      return "transfer";
    case Group::kRealtime:
      return "realtime";
    case Group::kEngine:
      return "engine";
  }
  return "";
}

std::string_view GuardName(Guard guard) {
  switch (guard) {
    case Guard::kNone:
      return "none";
    case Guard::kSkipNonPositive:
      return "skip <= 0";
    case Guard::kSkipNegative:
      return "skip < 0";
    case Guard::kClampNegative:
      return "clamp to >= 0";
  }
  return "";
}

std::span<const FamilySpec> OmniFamilies() { return kOmniFamilies; }

const FamilySpec& OmniSpec(OmniFamily family) { return kOmniFamilies[static_cast<size_t>(family)]; }

const FamilySpec& EngineSpec(EngineFamily family) {
  return kVllmEngineFamilies[static_cast<size_t>(family)];
}

std::span<const FamilySpec> VllmEngineFamilies() { return kVllmEngineFamilies; }

const FamilySpec* FindOmniFamily(std::string_view name) { return Find(kOmniFamilies, name); }

const FamilySpec* FindVllmEngineFamily(std::string_view name) {
  return Find(kVllmEngineFamilies, name);
}

}  // namespace modelmetrics::pipeline
