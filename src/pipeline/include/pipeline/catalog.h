// The pipeline-metrics catalog: every family the pipeline half exposes, as plain data.
//
// Contract. This file holds data: names, types, HELP texts, label names, bucket bounds, the
// bind rule and the observe guard of each family, plus the constants the observe layer needs
// (sample-rate defaults, bounded reason sets, the continuity threshold), and the helpers every
// observe layer shares: OptionsOf (a row as registry options), RegisterFamily (a row into a
// registry), ApplyGuard (the Guard column as code), and the typed access derived from each list's
// one definition (omni_families.h, engine_families.h): the family enums and
// FamilySet. The observe layers (C++ and the Python extension) register each FamilySpec with the
// metrics Registry (modelmetrics/metrics.h) and implement the rules the tables name.
//
// Sources. The `vllm_omni:*` table follows docs/pipeline-metrics.md (the intent,
// which wins on conflicts) and docs/pipeline-behaviour.md (cited as
// §n). The `vllm:*` table was generated once, by a throw-away script, from the real vLLM V1
// scrape shared/fixtures/real/vllm/kserve-llmisvc-vllm-v1-pd-nixl-tinyllama.txt: every `vllm:*`
// family in it except client_python's `*_created` gauges, with its type, HELP text (byte for
// byte), label names (`engine` replaced in place by `stage`, `replica`, §4.12) and bucket bounds
// (the `le` values without `+Inf`). tests/pipeline/catalog_test.cc re-derives both tables from
// those files at test time. docs/pipeline-metrics.md lists the catalog and every deliberate
// difference from upstream.
//
// Conventions.
// - Counter names carry no `_total`; the registry appends it exactly once when rendering (§1).
// - Labels are in declaration order (the order handles are bound with); the exposition sorts them.
// - Buckets are strictly increasing finite upper bounds; `+Inf` is implicit. Non-histograms have
//   none.
// - Bind::kEager families bind one child per model (per (stage, replica) for `vllm:*`) when
//   their owner is built, so zero-valued samples appear at once, even with stats off (§4.8,
//   §4.11); Bind::kLazy children appear on first observation.
//
// Thread-safety: immutable constant data; safe from any thread. A FamilySet is immutable after
// construction.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_CATALOG_H_
#define MODELMETRICS_PIPELINE_CATALOG_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "base/status.h"
#include "modelmetrics/exposition.h"
#include "modelmetrics/metrics.h"
#include "pipeline/engine_families.h"
#include "pipeline/omni_families.h"

namespace modelmetrics::pipeline {

using base::Status;

enum class Kind : uint8_t { kCounter, kGauge, kHistogram };

enum class Bind : uint8_t {
  kEager,  // bound when the owning object is built (renders zeros before any observation)
  kLazy,   // bound on the first observation that passes the guard
};

// Which part of the catalog a family belongs to.
enum class Group : uint8_t {
  kPipeline,   // pipeline-level request counts, latency, tokens (§3.1, first part)
  kImage,      // image and diffusion service-level families (§3.1, second part)
  kDiffusion,  // per-replica diffusion execution breakdown (§3.3)
  kAudio,      // per-replica audio families (§3.2)
  kSpeech,     // Speech streaming completed/aborted counters (§3.7)
  kTransfer,   // per-edge cross-stage transfer histograms (§3.4)
  kRealtime,   // realtime server-side VAD sessions, latencies and errors (§3.5)
  kDuplex,     // scheduler-native full-duplex sessions (upstream's OmniPrometheusMetrics, 2026-09)
  kEngine,     // upstream per-engine `vllm:*` families, relabelled to stage + replica (§3.6)
};

// The early-return or clamp rule inside a family's observe function (the reference's Guard
// column). Caller-side rules (e.g. "called only when > 0") are not encoded here; see
// docs/pipeline-metrics.md.
enum class Guard : uint8_t {
  kNone,             // the value is recorded as given
  kSkipNonPositive,  // values <= 0 are dropped (a lazy child is then never created)
  kSkipNegative,     // values < 0 are dropped; zero is a valid observation
  kClampNegative,    // max(value, 0) is recorded; zero is a valid observation
};

struct FamilySpec {
  std::string_view name;  // counters without `_total`
  Kind kind;
  std::string_view help;
  std::span<const std::string_view> labels;  // declaration order
  std::span<const double> buckets;           // histograms only; `+Inf` implicit
  Bind bind;
  Group group;
  Guard guard = Guard::kNone;
  // An eager family with a label after model_name binds one child per value listed here, for
  // that label (duplex_sessions{state="active"|"closing"}); empty: the model's one child.
  std::span<const std::string_view> eager_values = {};
};

constexpr MetricType ToMetricType(Kind kind) {
  switch (kind) {
    case Kind::kCounter:
      return MetricType::kCounter;
    case Kind::kGauge:
      return MetricType::kGauge;
    case Kind::kHistogram:
      return MetricType::kHistogram;
  }
  return MetricType::kUntyped;
}

// The registry options of a row (name, HELP, labels, buckets).
inline FamilyOptions OptionsOf(const FamilySpec& spec) {
  return FamilyOptions{.name = std::string(spec.name),
                       .help = std::string(spec.help),
                       .labels = {spec.labels.begin(), spec.labels.end()},
                       .buckets = {spec.buckets.begin(), spec.buckets.end()}};
}

// A registered family of any kind; monostate when none was registered.
using AnyFamily =
    std::variant<std::monostate, Family<Counter>*, Family<Gauge>*, Family<Histogram>*>;

// Registers a row with `registry` as its kind's family, into `*out`; monostate and the registry's
// reason when it refuses it.
base::Status RegisterFamily(Registry& registry, const FamilySpec& spec, AnyFamily* out);

// The Guard column as code: false when `value` is dropped; clamps it in place. NaN is always
// dropped (a deliberate difference: upstream would record it and poison `_sum`).
inline bool ApplyGuard(Guard guard, double& value) {
  if (std::isnan(value)) return false;
  switch (guard) {
    case Guard::kNone:
      return true;
    case Guard::kSkipNonPositive:
      return value > 0;
    case Guard::kSkipNegative:
      return value >= 0;
    case Guard::kClampNegative:
      value = std::max(value, 0.0);
      return true;
  }
  return true;
}

std::string_view KindName(Kind kind);     // "counter", "gauge", "histogram"
std::string_view BindName(Bind bind);     // "eager", "lazy"
std::string_view GroupName(Group group);  // "pipeline", "image", ...
std::string_view GuardName(Guard guard);  // "none", "skip <= 0", "skip < 0", "clamp to >= 0"

// ---- Prefixes (§1) ----

inline constexpr std::string_view kOmniPrefix = "vllm_omni:";
inline constexpr std::string_view kEnginePrefix = "vllm:";

// ---- Bucket lists (§2.1) ----

// e2e / generation / TTFP style values, 0.05 s – 300 s.
inline constexpr std::array<double, 13> kSecondsBuckets = {0.05, 0.1,  0.25, 0.5,  1.0,   2.0,  5.0,
                                                           10.0, 20.0, 30.0, 60.0, 120.0, 300.0};
// Millisecond-resolution values (transfers, underrun, pre/post-processing), 0.001 s – 60 s.
inline constexpr std::array<double, 13> kSecondsFastBuckets = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0};
// Real-time factor (SLO < 1).
inline constexpr std::array<double, 11> kRtfBuckets = {0.1,  0.25, 0.5, 0.75, 0.9, 1.0,
                                                       1.25, 1.5,  2.0, 5.0,  10.0};
// Transfer payload sizes, 1 KiB – 256 MiB in powers of 4.
inline constexpr std::array<double, 10> kBytesBuckets = {
    1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456};
// prometheus_client's default list, which upstream uses for num_inference_steps and image_pixels
// (§2.1). Their values (20–50 steps, ~1e6 pixels) then all land in `+Inf`; the quirk is kept so a
// drop-in prints the same buckets as upstream (dashboards read `_count`/`_sum` for these).
inline constexpr std::array<double, 14> kPrometheusDefaultBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0};
// ---- Other constants (§2.2, §4) ----

inline constexpr double kAudioContinuityDefaultThresholdS = 0.1;  // inclusive: <= is continuous
inline constexpr int kDefaultAudioSampleRate = 24000;
inline constexpr int kDefaultAudioChannels = 1;
inline constexpr int kDefaultAudioSampleWidth = 2;  // bytes per sample (s16le)
inline constexpr std::string_view kBenchAudioSampleRateEnv = "VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE";
inline constexpr std::string_view kBenchAudioChannelsEnv = "VLLM_OMNI_BENCH_AUDIO_CHANNELS";
inline constexpr std::string_view kBenchContinuityThresholdEnv =
    "VLLM_OMNI_BENCH_AUDIO_CONTINUITY_THRESHOLD_S";  // §4.1
inline constexpr std::string_view kDiffusionSchedulerWaitingKey = "scheduler_num_waiting_reqs";
inline constexpr std::string_view kDiffusionMetricsOnlyRequestId =
    "__vllm_omni_diffusion_metrics__";
// Keys tried, in order, to resolve an audio sample rate (§4.4).
inline constexpr std::array<std::string_view, 5> kSampleRateKeys = {
    "output_sample_rate", "audio_sample_rate", "sample_rate", "sampling_rate", "sr"};

// Bounded label values.
// requests_failed{reason}: anything else normalises to "unknown" (§4.6).
inline constexpr std::array<std::string_view, 4> kFailureReasons = {
    "client_abort", "client_disconnect", "stage_error", "unknown"};
inline constexpr std::string_view kUnknownReason = "unknown";
// requests_success{finished_reason}: the default when an output has none, and the value a
// failure records (§4.6, §4.7).
inline constexpr std::string_view kDefaultFinishedReason = "stop";
inline constexpr std::string_view kAbortFinishedReason = "abort";
// audio_skipped_requests{reason} from the finalize path (§4.3).
inline constexpr std::string_view kNoAudioDataReason = "no_audio_data";
// kv_wait_s{connector_type} when the connector names no type (§4.16).
inline constexpr std::string_view kUnknownConnectorType = "unknown";
// stage_gen_time_s{stage_type}: upstream's stage types (a stage's `stage_type` config).
inline constexpr std::string_view kStageTypeLlm = "llm";
inline constexpr std::string_view kStageTypeDiffusion = "diffusion";
inline constexpr std::array<std::string_view, 2> kStageTypes = {kStageTypeLlm, kStageTypeDiffusion};
// speech_stream_aborted{reason} (§3.7).
inline constexpr std::array<std::string_view, 4> kSpeechAbortReasons = {"cancelled", "closed",
                                                                        "engine_dead", "error"};
inline constexpr std::string_view kSpeechAbortFallbackReason = "error";  // one of them

// Duplex label values (upstream's OmniPrometheusMetrics bounds each; anything else becomes the
// fallback named beside the set).
inline constexpr std::array<std::string_view, 2> kDuplexSessionStates = {"active", "closing"};
inline constexpr std::array<std::string_view, 9> kDuplexAppendOutcomes = {"success",
                                                                          "deduplicated",
                                                                          "timeout",
                                                                          "resource_exhausted",
                                                                          "admission_rejected",
                                                                          "cancelled",
                                                                          "replica_lost",
                                                                          "kv_recovery_failed",
                                                                          "error"};
inline constexpr std::string_view kDuplexAppendOutcomeFallback = "error";
inline constexpr std::array<std::string_view, 6> kDuplexControlOperations = {
    "open", "append", "signal", "close", "touch", "resume"};
inline constexpr std::string_view kDuplexControlOperationFallback = "unknown";
inline constexpr std::array<std::string_view, 2> kDuplexKvRebuildReasons = {"replica_loss",
                                                                            "context_rollover"};
inline constexpr std::string_view kDuplexKvRebuildReasonFallback = "other";
inline constexpr std::array<std::string_view, 2> kDuplexKvRebuildOutcomes = {"success", "failure"};
inline constexpr std::string_view kDuplexKvRebuildOutcomeFallback = "failure";
// `value` when it is one of `allowed`, else `fallback`.
constexpr std::string_view Bounded(std::string_view value,
                                   std::span<const std::string_view> allowed,
                                   std::string_view fallback) {
  for (std::string_view a : allowed) {
    if (a == value) return a;
  }
  return fallback;
}

// Extra-label values upstream binds eagerly for every engine (as seen in the V1 fixture).
inline constexpr std::array<std::string_view, 5> kEngineFinishedReasons = {
    "stop", "length", "abort", "error", "repetition"};
inline constexpr std::array<std::string_view, 3> kEngineSleepStates = {"awake", "weights_offloaded",
                                                                       "discard_all"};
inline constexpr std::array<std::string_view, 3> kEnginePromptTokenSources = {
    "local_compute", "local_cache_hit", "external_kv_transfer"};
// num_requests_waiting_by_reason{reason} (vLLM main; newer than the fixture).
inline constexpr std::array<std::string_view, 2> kEngineWaitingReasons = {"capacity", "deferred"};
// The token-count histograms whose buckets vLLM derives from max_model_len (build_1_2_5).
inline constexpr std::array<std::string_view, 5> kEngineTokenCountFamilies = {
    "vllm:request_prompt_tokens", "vllm:request_generation_tokens",
    "vllm:request_max_num_generation_tokens", "vllm:request_params_max_tokens",
    "vllm:request_prefill_kv_computed_tokens"};
// NIXL's connector families: registered only when NIXL is the configured connector.
inline constexpr std::string_view kEngineNixlPrefix = "vllm:nixl_";

// ---- Label sets (§2.3) ----

inline constexpr std::array<std::string_view, 1> kPipelineLabels = {"model_name"};
inline constexpr std::array<std::string_view, 2> kSuccessLabels = {"model_name", "finished_reason"};
inline constexpr std::array<std::string_view, 3> kStageLabels = {"model_name", "stage", "replica"};
inline constexpr std::array<std::string_view, 3> kStageGenTimeLabels = {"model_name", "stage",
                                                                        "stage_type"};
// Per-stage service families (stage_waiting_requests, stage_in_queue_s, peak_memory_mb); the
// diffusion breakdown itself uses kStageLabels.
inline constexpr std::array<std::string_view, 2> kDiffusionLabels = {"model_name", "stage"};
inline constexpr std::array<std::string_view, 2> kFailedLabels = {"model_name", "reason"};
inline constexpr std::array<std::string_view, 2> kKvWaitLabels = {"model_name", "connector_type"};
inline constexpr std::array<std::string_view, 4> kAudioContinuityLabels = {
    "model_name", "stage", "replica", "threshold_ms"};
inline constexpr std::array<std::string_view, 4> kAudioSkippedLabels = {"model_name", "stage",
                                                                        "replica", "reason"};
inline constexpr std::array<std::string_view, 5> kTransferLabels = {
    "model_name", "from_stage", "from_replica", "to_stage", "to_replica"};
// Not §2.3 constants: realtime_vad_errors (§3.5) and speech_stream_aborted (§3.7).
inline constexpr std::array<std::string_view, 2> kRealtimeVadErrorLabels = {"model_name", "reason"};
inline constexpr std::array<std::string_view, 2> kSpeechAbortedLabels = {"model_name", "reason"};
// Duplex families (pipeline-behaviour.md §3.9).
inline constexpr std::array<std::string_view, 2> kDuplexSessionLabels = {"model_name", "state"};
inline constexpr std::array<std::string_view, 2> kDuplexAppendLabels = {"model_name", "outcome"};
inline constexpr std::array<std::string_view, 2> kDuplexControlLabels = {"model_name", "operation"};
inline constexpr std::array<std::string_view, 3> kDuplexKvRebuildLabels = {"model_name", "reason",
                                                                           "outcome"};
// `vllm:*` per-engine families: upstream's (model_name, engine) with engine -> stage, replica.
inline constexpr std::array<std::string_view, 3> kEngineLabels = {"model_name", "stage", "replica"};
inline constexpr std::array<std::string_view, 4> kEngineWaitingReasonLabels = {
    "model_name", "stage", "replica", "reason"};

// ---- The families, each defined once (omni_families.h, engine_families.h) ----

inline constexpr std::span<const double> kNoBuckets;

// A row's guard: its first value (the rest, if any, are the eager values).
template <typename... Rest>
constexpr Guard FirstGuard(Guard guard, const Rest&...) {
  return guard;
}

// MM_DEFINE_FAMILY_LIST(Id, LIST) defines, from one list of rows (omni_families.h): `enum class
// Id`, and the overloads FamilyCount(Id), FamilyName(Id), FamilyKind(Id), FamilyBind(Id) and
// FamilyGuard(Id) the typed helpers and the observe paths use (at compile time: a row's bind and
// guard fold into the code that records it). The list's table, `{LIST(MM_FAMILY_ROW)}`, is the rows
// in id order, so a family's row is table[id] by construction; FamilySpecOf(Id) returns it
// (FamilySet finds it so).
#define MM_FAMILY_ID(id, name, instrument, ...) id,
#define MM_FAMILY_ONE(id, name, instrument, ...) +1
#define MM_FAMILY_NAME(id, name, instrument, ...) name,
#define MM_FAMILY_KIND(id, name, instrument, ...) Kind::k##instrument,
#define MM_FAMILY_BIND(id, name, instrument, help, labels, buckets, bind, ...) bind,
// The guard is optional in a row (Guard::kNone when absent); eager values may follow it.
#define MM_FAMILY_GUARD(id, name, instrument, help, labels, buckets, bind, group, ...) \
  FirstGuard(__VA_ARGS__ __VA_OPT__(, ) Guard::kNone),
// A list's rows as FamilySpec initialisers: `constexpr FamilySpec kRows[] = {LIST(MM_FAMILY_ROW)};`
#define MM_FAMILY_ROW(id, name, instrument, ...) FamilySpec{name, Kind::k##instrument, __VA_ARGS__},
#define MM_DEFINE_FAMILY_LIST(Id, LIST)                              \
  enum class Id : uint8_t { LIST(MM_FAMILY_ID) };                    \
  constexpr size_t FamilyCount(Id) { return 0 LIST(MM_FAMILY_ONE); } \
  constexpr std::string_view FamilyName(Id family) {                 \
    constexpr std::string_view kNames[] = {LIST(MM_FAMILY_NAME)};    \
    return kNames[static_cast<size_t>(family)];                      \
  }                                                                  \
  constexpr Kind FamilyKind(Id family) {                             \
    constexpr Kind kKinds[] = {LIST(MM_FAMILY_KIND)};                \
    return kKinds[static_cast<size_t>(family)];                      \
  }                                                                  \
  constexpr Bind FamilyBind(Id family) {                             \
    constexpr Bind kBinds[] = {LIST(MM_FAMILY_BIND)};                \
    return kBinds[static_cast<size_t>(family)];                      \
  }                                                                  \
  constexpr Guard FamilyGuard(Id family) {                           \
    constexpr Guard kGuards[] = {LIST(MM_FAMILY_GUARD)};             \
    return kGuards[static_cast<size_t>(family)];                     \
  }

// MM_DEFINE_FAMILY_TABLE(Id, LIST) defines a list's rows, `k<Id>Rows`, and FamilySpecOf(Id) (for
// lists whose constants the header sees; the catalog's own tables are in catalog.cc).
#define MM_DEFINE_FAMILY_TABLE(Id, LIST)                             \
  inline constexpr FamilySpec k##Id##Rows[] = {LIST(MM_FAMILY_ROW)}; \
  inline const FamilySpec& FamilySpecOf(Id family) {                 \
    return k##Id##Rows[static_cast<size_t>(family)];                 \
  }

MM_DEFINE_FAMILY_LIST(OmniFamily, MM_VLLM_OMNI_FAMILIES)
MM_DEFINE_FAMILY_LIST(EngineFamily, MM_VLLM_ENGINE_FAMILIES)

inline constexpr size_t kOmniFamilyCount = FamilyCount(OmniFamily{});
inline constexpr size_t kEngineFamilyCount = FamilyCount(EngineFamily{});
constexpr std::string_view OmniFamilyName(OmniFamily family) { return FamilyName(family); }
constexpr Kind OmniFamilyKind(OmniFamily family) { return FamilyKind(family); }
constexpr std::string_view EngineFamilyName(EngineFamily family) { return FamilyName(family); }
constexpr Kind EngineFamilyKind(EngineFamily family) { return FamilyKind(family); }

template <Kind>
struct InstrumentOfKind;
template <>
struct InstrumentOfKind<Kind::kCounter> {
  using type = Counter;
};
template <>
struct InstrumentOfKind<Kind::kGauge> {
  using type = Gauge;
};
template <>
struct InstrumentOfKind<Kind::kHistogram> {
  using type = Histogram;
};
// The instrument of family F (an OmniFamily or EngineFamily): FamilyInstrument<kImageCount> is
// Counter.
template <auto F>
using FamilyInstrument = typename InstrumentOfKind<FamilyKind(F)>::type;
template <OmniFamily F>
using OmniInstrument = FamilyInstrument<F>;

// The typed family behind `any` (registered from F's row); null when none was registered.
template <auto F>
Family<FamilyInstrument<F>>* FamilyOf(const AnyFamily& any) {
  auto* const* typed = std::get_if<Family<FamilyInstrument<F>>*>(&any);
  return typed != nullptr ? *typed : nullptr;
}

// ---- Tables ----

// Every `vllm_omni:*` family: pipeline (6), image/diffusion service (10), diffusion breakdown
// (9), audio (7), speech streaming (2), cross-stage transfer (4), realtime VAD (4), duplex (13);
// grouped, in that order.
std::span<const FamilySpec> OmniFamilies();
// A family's row: OmniFamilies()[family].
const FamilySpec& OmniSpec(OmniFamily family);
// A per-engine family's row: VllmEngineFamilies()[family].
const FamilySpec& EngineSpec(EngineFamily family);

inline const FamilySpec& FamilySpecOf(OmniFamily family) { return OmniSpec(family); }
inline const FamilySpec& FamilySpecOf(EngineFamily family) { return EngineSpec(family); }

// The families of one list (an Id of MM_DEFINE_FAMILY_LIST), registered in a registry, each
// reached by its id with its typed handle: an observe class holds one and its methods ask it for
// family F, so a family needs no member or binding code of its own.
template <typename Id>
class FamilySet {
 public:
  // Registers every family of the list whose row `wanted` accepts (null: every one); the others
  // stay unregistered and Get() returns null for them.
  explicit FamilySet(Registry& registry, bool (*wanted)(const FamilySpec&) = nullptr) {
    Register(registry,
             [wanted](const FamilySpec& spec) { return wanted == nullptr || wanted(spec); });
  }
  // Registers the families of these groups (an observe class's part of the catalog).
  FamilySet(Registry& registry, std::span<const Group> groups) {
    Register(registry, [groups](const FamilySpec& spec) {
      return std::find(groups.begin(), groups.end(), spec.group) != groups.end();
    });
  }

  // True when every wanted family was registered (none refused by the registry).
  bool Complete() const { return complete_; }

  template <Id F>
  Family<FamilyInstrument<F>>* Get() const {
    return FamilyOf<F>(made_[static_cast<size_t>(F)]);
  }
  // Every family of the list by id (monostate: not registered).
  const std::array<AnyFamily, FamilyCount(Id{})>& table() const { return made_; }
  // F's row (held here, so an observe path reads it without a call into the table).
  template <Id F>
  const FamilySpec& Spec() const {
    return *specs_[static_cast<size_t>(F)];
  }

 private:
  template <typename Wanted>
  void Register(Registry& registry, Wanted wanted) {
    for (size_t i = 0; i < made_.size(); ++i) {
      specs_[i] = &FamilySpecOf(static_cast<Id>(i));
      if (!wanted(*specs_[i])) continue;
      complete_ = RegisterFamily(registry, *specs_[i], &made_[i]).ok() && complete_;
    }
  }

  std::array<AnyFamily, FamilyCount(Id{})> made_;
  std::array<const FamilySpec*, FamilyCount(Id{})> specs_{};
  bool complete_ = true;
};

// Every upstream per-engine `vllm:*` family vLLM main has in a plain set-up plus NIXL's (44):
// the V1 fixture's, in fixture order, without prompt_tokens_recomputed (removed upstream in April
// 2026) and with num_requests_waiting_by_reason and request_num_preemptions (added after it).
std::span<const FamilySpec> VllmEngineFamilies();

// Look-ups by exact name (counters without `_total`); nullptr when absent.
const FamilySpec* FindOmniFamily(std::string_view name);
const FamilySpec* FindVllmEngineFamily(std::string_view name);

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_CATALOG_H_
