// The observe methods of vLLM-Omni's metrics classes, one row each: which families a method
// records into, its label values, its value and the argument each comes from. The one place this
// mapping is written: the C++ observe classes carry a row out with ObserveRecorder
// (observe_recorder.h), and the Python types (src/python/observe_types.cc) make each row of a
// class table a method of that class.
//
// Contract.
// - A row names upstream's method and parameters (Python calls it by these names, positionally or
//   by keyword); the last `optional` parameters may be left out. Counts are derived from the
//   designated initialisers (param_count(), label_count(), effect_count()), never typed.
// - Each effect is one instrument operation on one family: its labels after model_name in the
//   family's declaration order, its value taken from argument `value` divided by `divisor` (a
//   left-out value argument is `value_default`). The family's catalog Guard (catalog.h) is applied
//   to the value before a lazy child is made, so a dropped value leaves no series.
// - A call reads every argument before it records anything: an argument that cannot be read
//   records nothing.
// - Label sources follow prometheus_client and upstream: str(arg); `arg or "unknown"`;
//   str(int(arg)); a bounded set with its fallback (upstream's duplex and Speech reasons); a
//   constant.
//
// Thread-safety: constant data.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_OBSERVE_TABLE_H_
#define MODELMETRICS_PIPELINE_OBSERVE_TABLE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "pipeline/catalog.h"

namespace modelmetrics::pipeline {

inline constexpr size_t kMaxObserveParams = 6;
inline constexpr size_t kMaxObserveLabels = 4;  // after model_name
inline constexpr size_t kMaxObserveEffects = 4;

enum class ObserveOp : uint8_t { kNone, kObserve, kSet, kAdd, kInc, kDec };

enum class LabelFrom : uint8_t {
  kNone,          // no label in this slot
  kArg,           // str(arg); `text` when the argument is left out
  kArgOrUnknown,  // arg or "unknown" (a falsy argument gives "unknown")
  kArgIntText,    // str(int(arg))
  kAbortReason,   // str(arg), bounded to kSpeechAbortReasons ("error" otherwise)
  kConstant,      // `text`
  kBounded,       // arg when it is a str in `allowed`, else `text`
};

struct ObserveLabel {
  LabelFrom from = LabelFrom::kNone;
  uint8_t arg = 0;
  std::string_view text = {};
  std::span<const std::string_view> allowed = {};
};

constexpr ObserveLabel Arg(uint8_t i, std::string_view if_left_out = {}) {
  return {LabelFrom::kArg, i, if_left_out};
}
constexpr ObserveLabel ArgOrUnknown(uint8_t i) { return {LabelFrom::kArgOrUnknown, i}; }
constexpr ObserveLabel ArgIntText(uint8_t i) { return {LabelFrom::kArgIntText, i}; }
constexpr ObserveLabel AbortReason(uint8_t i) { return {LabelFrom::kAbortReason, i}; }
constexpr ObserveLabel Constant(std::string_view text) { return {LabelFrom::kConstant, 0, text}; }
constexpr ObserveLabel BoundedArg(uint8_t i, std::span<const std::string_view> allowed,
                                  std::string_view fallback) {
  return {LabelFrom::kBounded, i, fallback, allowed};
}

struct ObserveEffect {
  ObserveOp op = ObserveOp::kNone;
  OmniFamily family = {};
  std::array<ObserveLabel, kMaxObserveLabels> labels = {};
  int8_t value = -1;     // argument index; -1 for kInc and kDec
  double divisor = 1.0;  // the value is arg / divisor (upstream's ms / 1000)

  constexpr size_t label_count() const {
    size_t n = 0;
    while (n < labels.size() && labels[n].from != LabelFrom::kNone) ++n;
    return n;
  }
};

struct ObserveMethod {
  const char* name = nullptr;
  const char* doc = nullptr;
  std::array<const char*, kMaxObserveParams> params = {};
  uint8_t optional = 0;        // trailing parameters that may be left out
  double value_default = 1.0;  // a left-out value argument
  std::array<ObserveEffect, kMaxObserveEffects> effects = {};

  constexpr size_t param_count() const {
    size_t n = 0;
    while (n < params.size() && params[n] != nullptr) ++n;
    return n;
  }
  constexpr size_t required() const { return param_count() - optional; }
  constexpr size_t effect_count() const {
    size_t n = 0;
    while (n < effects.size() && effects[n].op != ObserveOp::kNone) ++n;
    return n;
  }
};

// True when every index a row reads is one of its parameters (checked for every row below; that
// each effect's labels fit its family is a test's, as the catalog's rows are not constexpr here).
constexpr bool WellFormed(const ObserveMethod& m) {
  if (m.name == nullptr || m.doc == nullptr || m.effect_count() == 0) return false;
  if (m.optional > m.param_count()) return false;
  for (size_t e = 0; e < m.effect_count(); ++e) {
    const ObserveEffect& effect = m.effects[e];
    if (effect.value >= static_cast<int>(m.param_count())) return false;
    const bool has_value = effect.op != ObserveOp::kInc && effect.op != ObserveOp::kDec;
    if (has_value != (effect.value >= 0)) return false;
    for (size_t l = 0; l < effect.label_count(); ++l) {
      const ObserveLabel& label = effect.labels[l];
      if (label.from != LabelFrom::kConstant && label.arg >= m.param_count()) return false;
    }
  }
  return true;
}

namespace observe {

using OF = OmniFamily;
using Op = ObserveOp;

// The (stage, replica) histograms of OmniModalityMetrics: stage and replica as given.
constexpr ObserveMethod StageReplicaHistogram(const char* name, const char* value_name,
                                              OmniFamily family, const char* doc) {
  return {.name = name,
          .doc = doc,
          .params = {"stage", "replica", value_name},
          .effects = {
              {{.op = Op::kObserve, .family = family, .labels = {Arg(0), Arg(1)}, .value = 2}}}};
}

// The per-edge histograms of OmniTransferMetrics.
constexpr ObserveMethod EdgeHistogram(const char* name, const char* value_name, OmniFamily family,
                                      const char* doc) {
  return {.name = name,
          .doc = doc,
          .params = {"from_stage", "from_replica", "to_stage", "to_replica", value_name},
          .effects = {{{.op = Op::kObserve,
                        .family = family,
                        .labels = {Arg(0), Arg(1), Arg(2), Arg(3)},
                        .value = 4}}}};
}

// A model-only gauge set from one argument (the family's guard applies).
constexpr ObserveEffect SetFrom(OmniFamily family, int8_t arg) {
  return {.op = Op::kSet, .family = family, .value = arg};
}

// ---- OmniPrometheusMetrics (prometheus.py; §3.1, §3.9) ----

inline constexpr ObserveMethod kSetRunning{.name = "set_running",
                                           .doc = "num_requests_running.set(n)",
                                           .params = {"n"},
                                           .effects = {{SetFrom(OF::kNumRequestsRunning, 0)}}};
inline constexpr ObserveMethod kSetWaiting{.name = "set_waiting",
                                           .doc = "num_requests_waiting.set(n)",
                                           .params = {"n"},
                                           .effects = {{SetFrom(OF::kNumRequestsWaiting, 0)}}};
inline constexpr ObserveMethod kRequestSucceeded{
    .name = "request_succeeded",
    .doc =
        "requests_success_total{finished_reason} += 1 and "
        "e2e_request_latency_s.observe(e2e_seconds)",
    .params = {"e2e_seconds", "finished_reason"},
    .optional = 1,
    .effects = {{{.op = Op::kInc,
                  .family = OF::kRequestsSuccess,
                  .labels = {Arg(1, kDefaultFinishedReason)}},
                 {.op = Op::kObserve, .family = OF::kE2eRequestLatencyS, .value = 0}}}};
inline constexpr ObserveMethod kRequestFailed{
    .name = "request_failed",
    .doc = "requests_success_total{finished_reason=\"abort\"} += 1",
    .effects = {{{.op = Op::kInc,
                  .family = OF::kRequestsSuccess,
                  .labels = {Constant(kAbortFinishedReason)}}}}};
inline constexpr ObserveMethod kIncRequestsFailed{
    .name = "inc_requests_failed",
    .doc = "requests_failed_total{reason=reason or \"unknown\"} += 1",
    .params = {"reason"},
    .effects = {{{.op = Op::kInc, .family = OF::kRequestsFailed, .labels = {ArgOrUnknown(0)}}}}};
inline constexpr ObserveMethod kObserveTokens{
    .name = "observe_tokens",
    .doc =
        "prompt_tokens_total += prompt_tokens and generation_tokens_total += "
        "generation_tokens, each only if > 0",
    .params = {"prompt_tokens", "generation_tokens"},
    .effects = {{{.op = Op::kAdd, .family = OF::kPromptTokens, .value = 0},
                 {.op = Op::kAdd, .family = OF::kGenerationTokens, .value = 1}}}};
inline constexpr ObserveMethod kObserveStageGenTime{
    .name = "observe_stage_gen_time",
    .doc = "stage_gen_time_s{stage, stage_type}.observe(max(gen_time_s, 0))",
    .params = {"stage", "stage_type", "gen_time_s"},
    .effects = {{{.op = Op::kObserve,
                  .family = OF::kStageGenTimeS,
                  .labels = {Arg(0), Arg(1)},
                  .value = 2}}}};
inline constexpr ObserveMethod kObserveStageInQueue{
    .name = "observe_stage_in_queue",
    .doc = "stage_in_queue_s{stage}.observe(max(in_queue_s, 0))",
    .params = {"stage", "in_queue_s"},
    .effects = {
        {{.op = Op::kObserve, .family = OF::kStageInQueueS, .labels = {Arg(0)}, .value = 1}}}};
inline constexpr ObserveMethod kObserveQueueWait{
    .name = "observe_queue_wait",
    .doc = "request_queue_wait_s.observe(max(queue_wait_s, 0))",
    .params = {"queue_wait_s"},
    .effects = {{{.op = Op::kObserve, .family = OF::kRequestQueueWaitS, .value = 0}}}};
inline constexpr ObserveMethod kSetStageWaitingRequests{
    .name = "set_stage_waiting_requests",
    .doc = "stage_waiting_requests{stage}.set(max(n_waiting, 0))",
    .params = {"stage", "n_waiting"},
    .effects = {
        {{.op = Op::kSet, .family = OF::kStageWaitingRequests, .labels = {Arg(0)}, .value = 1}}}};
inline constexpr ObserveMethod kObserveNumInferenceSteps{
    .name = "observe_num_inference_steps",
    .doc = "num_inference_steps.observe(n_steps) when n_steps > 0",
    .params = {"n_steps"},
    .effects = {{{.op = Op::kObserve, .family = OF::kNumInferenceSteps, .value = 0}}}};
inline constexpr ObserveMethod kIncImageCount{
    .name = "inc_image_count",
    .doc = "image_count_total += n_images when n_images > 0",
    .params = {"n_images"},
    .optional = 1,
    .effects = {{{.op = Op::kAdd, .family = OF::kImageCount, .value = 0}}}};
inline constexpr ObserveMethod kObserveImagePixels{
    .name = "observe_image_pixels",
    .doc = "image_pixels.observe(n_pixels) when n_pixels > 0",
    .params = {"n_pixels"},
    .effects = {{{.op = Op::kObserve, .family = OF::kImagePixels, .value = 0}}}};
inline constexpr ObserveMethod kSetPeakMemory{
    .name = "set_peak_memory",
    .doc = "peak_memory_mb{stage}.set(max(peak_memory_mb, 0))",
    .params = {"stage", "peak_memory_mb"},
    .effects = {{{.op = Op::kSet, .family = OF::kPeakMemoryMb, .labels = {Arg(0)}, .value = 1}}}};
inline constexpr ObserveMethod kObserveKvWait{
    .name = "observe_kv_wait",
    .doc = "kv_wait_s{connector_type or \"unknown\"}.observe(kv_wait_s) when >= 0",
    .params = {"connector_type", "kv_wait_s"},
    .effects = {
        {{.op = Op::kObserve, .family = OF::kKvWaitS, .labels = {ArgOrUnknown(0)}, .value = 1}}}};

// Duplex (§3.9).
inline constexpr ObserveMethod kSetDuplexSessions{
    .name = "set_duplex_sessions",
    .doc = "duplex_sessions{state=\"active\"|\"closing\"}.set(max(n, 0))",
    .params = {"active", "closing"},
    .effects = {{{.op = Op::kSet,
                  .family = OF::kDuplexSessions,
                  .labels = {Constant(kDuplexSessionStates[0])},
                  .value = 0},
                 {.op = Op::kSet,
                  .family = OF::kDuplexSessions,
                  .labels = {Constant(kDuplexSessionStates[1])},
                  .value = 1}}}};
inline constexpr ObserveMethod kObserveDuplexAppend{
    .name = "observe_duplex_append",
    .doc =
        "duplex_append_requests_total{outcome (bounded, else \"error\")} += 1 and "
        "duplex_append_latency_s{outcome}.observe(max(latency_s, 0))",
    .params = {"outcome", "latency_s"},
    .effects = {{{.op = Op::kInc,
                  .family = OF::kDuplexAppendRequests,
                  .labels = {BoundedArg(0, kDuplexAppendOutcomes, kDuplexAppendOutcomeFallback)}},
                 {.op = Op::kObserve,
                  .family = OF::kDuplexAppendLatencyS,
                  .labels = {BoundedArg(0, kDuplexAppendOutcomes, kDuplexAppendOutcomeFallback)},
                  .value = 1}}}};
inline constexpr ObserveMethod kObserveDuplexControlQueueWait{
    .name = "observe_duplex_control_queue_wait",
    .doc =
        "duplex_control_queue_wait_s{operation (bounded, else \"unknown\")}"
        ".observe(max(queue_wait_s, 0))",
    .params = {"operation", "queue_wait_s"},
    .effects = {
        {{.op = Op::kObserve,
          .family = OF::kDuplexControlQueueWaitS,
          .labels = {BoundedArg(0, kDuplexControlOperations, kDuplexControlOperationFallback)},
          .value = 1}}}};
inline constexpr ObserveMethod kSetDuplexContext{
    .name = "set_duplex_context",
    .doc =
        "duplex_context_tokens, duplex_context_limit_tokens, duplex_context_utilization and "
        "duplex_append_receipts .set(max(x, 0))",
    .params = {"max_tokens", "max_limit_tokens", "max_utilization", "max_receipts"},
    .effects = {{SetFrom(OF::kDuplexContextTokens, 0), SetFrom(OF::kDuplexContextLimitTokens, 1),
                 SetFrom(OF::kDuplexContextUtilization, 2),
                 SetFrom(OF::kDuplexAppendReceipts, 3)}}};
inline constexpr ObserveMethod kIncDuplexReplicaAffinityLoss{
    .name = "inc_duplex_replica_affinity_loss",
    .doc = "duplex_replica_affinity_loss_total += count when count > 0",
    .params = {"count"},
    .optional = 1,
    .effects = {{{.op = Op::kAdd, .family = OF::kDuplexReplicaAffinityLoss, .value = 0}}}};
inline constexpr ObserveMethod kSetDuplexRecoveryState{
    .name = "set_duplex_recovery_state",
    .doc =
        "duplex_replay_journal_tokens, duplex_replay_journal_bytes and "
        "duplex_resource_generation .set(max(x, 0))",
    .params = {"max_journal_tokens", "max_journal_bytes", "max_resource_generation"},
    .effects = {{SetFrom(OF::kDuplexReplayJournalTokens, 0),
                 SetFrom(OF::kDuplexReplayJournalBytes, 1),
                 SetFrom(OF::kDuplexResourceGeneration, 2)}}};
inline constexpr ObserveMethod kIncDuplexKvRecovery{
    .name = "inc_duplex_kv_recovery",
    .doc =
        "duplex_kv_rebuilds_total{reason (else \"other\"), outcome (else \"failure\")} += "
        "count when count > 0",
    .params = {"reason", "outcome", "count"},
    .optional = 1,
    .effects = {
        {{.op = Op::kAdd,
          .family = OF::kDuplexKvRebuilds,
          .labels = {BoundedArg(0, kDuplexKvRebuildReasons, kDuplexKvRebuildReasonFallback),
                     BoundedArg(1, kDuplexKvRebuildOutcomes, kDuplexKvRebuildOutcomeFallback)},
          .value = 2}}}};

// ---- OmniModalityMetrics (modality.py; §3.2, §3.3, §3.7) ----

inline constexpr ObserveMethod kObserveAudioTtfp =
    StageReplicaHistogram("observe_audio_ttfp", "ttfp_seconds", OF::kAudioTtfpS,
                          "audio_ttfp_s{stage, replica}.observe(ttfp_seconds)");
inline constexpr ObserveMethod kObserveAudioDuration =
    StageReplicaHistogram("observe_audio_duration", "duration_seconds", OF::kAudioDurationS,
                          "audio_duration_s{stage, replica}.observe(duration_seconds)");
inline constexpr ObserveMethod kObserveAudioRtf = StageReplicaHistogram(
    "observe_audio_rtf", "rtf", OF::kAudioRtf, "audio_rtf{stage, replica}.observe(rtf)");
inline constexpr ObserveMethod kIncAudioFrames{
    .name = "inc_audio_frames",
    .doc = "audio_frames_total{stage, replica} += n_frames when n_frames > 0",
    .params = {"stage", "replica", "n_frames"},
    .effects = {
        {{.op = Op::kAdd, .family = OF::kAudioFrames, .labels = {Arg(0), Arg(1)}, .value = 2}}}};
inline constexpr ObserveMethod kObserveAudioUnderrun =
    StageReplicaHistogram("observe_audio_underrun", "underrun_s", OF::kAudioUnderrunS,
                          "audio_underrun_s{stage, replica}.observe(max(underrun_s, 0))");
inline constexpr ObserveMethod kIncAudioContinuityOk{
    .name = "inc_audio_continuity_ok",
    .doc = "audio_continuity_ok_total{stage, replica, threshold_ms=str(int(threshold_ms))} += 1",
    .params = {"stage", "replica", "threshold_ms"},
    .effects = {{{.op = Op::kInc,
                  .family = OF::kAudioContinuityOk,
                  .labels = {Arg(0), Arg(1), ArgIntText(2)}}}}};
inline constexpr ObserveMethod kIncAudioSkipped{
    .name = "inc_audio_skipped",
    .doc = "audio_skipped_requests_total{stage, replica, reason=reason or \"unknown\"} += 1",
    .params = {"stage", "replica", "reason"},
    .effects = {{{.op = Op::kInc,
                  .family = OF::kAudioSkippedRequests,
                  .labels = {Arg(0), Arg(1), ArgOrUnknown(2)}}}}};
inline constexpr ObserveMethod kObserveDiffusionExec =
    StageReplicaHistogram("observe_diffusion_exec", "seconds", OF::kDiffusionExecS,
                          "diffusion_exec_s{stage, replica}.observe(seconds)");
inline constexpr ObserveMethod kObserveDiffusionExecPerStep =
    StageReplicaHistogram("observe_diffusion_exec_per_step", "seconds", OF::kDiffusionExecPerStepS,
                          "diffusion_exec_per_step_s{stage, replica}.observe(seconds)");
inline constexpr ObserveMethod kObserveDiffusionPreprocess =
    StageReplicaHistogram("observe_diffusion_preprocess", "seconds", OF::kDiffusionPreprocessS,
                          "diffusion_preprocess_s{stage, replica}.observe(seconds)");
inline constexpr ObserveMethod kObserveDiffusionPostprocess =
    StageReplicaHistogram("observe_diffusion_postprocess", "seconds", OF::kDiffusionPostprocessS,
                          "diffusion_postprocess_s{stage, replica}.observe(seconds)");
inline constexpr ObserveMethod kObserveVaeDecode =
    StageReplicaHistogram("observe_vae_decode", "seconds", OF::kVaeDecodeS,
                          "vae_decode_s{stage, replica}.observe(seconds) when >= 0");
inline constexpr ObserveMethod kObserveDiffusionForward =
    StageReplicaHistogram("observe_diffusion_forward", "seconds", OF::kDiffusionForwardS,
                          "diffusion_forward_s{stage, replica}.observe(seconds) when >= 0");
inline constexpr ObserveMethod kObserveDiffusionKvLoad =
    StageReplicaHistogram("observe_diffusion_kv_load", "seconds", OF::kDiffusionKvLoadS,
                          "diffusion_kv_load_s{stage, replica}.observe(seconds) when >= 0");
inline constexpr ObserveMethod kObserveImageTtfp =
    StageReplicaHistogram("observe_image_ttfp", "seconds", OF::kImageTtfpS,
                          "image_ttfp_s{stage, replica}.observe(seconds) when >= 0");
inline constexpr ObserveMethod kObserveDenoiseStepLatency =
    StageReplicaHistogram("observe_denoise_step_latency", "seconds", OF::kDenoiseStepLatencyS,
                          "denoise_step_latency_s{stage, replica}.observe(seconds) when > 0");
inline constexpr ObserveMethod kIncSpeechStreamCompleted{
    .name = "inc_speech_stream_completed",
    .doc = "speech_stream_completed_total += 1",
    .effects = {{{.op = Op::kInc, .family = OF::kSpeechStreamCompleted}}}};
inline constexpr ObserveMethod kIncSpeechStreamAborted{
    .name = "inc_speech_stream_aborted",
    .doc = "speech_stream_aborted_total{reason} += 1 (cancelled, closed, engine_dead; else error)",
    .params = {"reason"},
    .effects = {
        {{.op = Op::kInc, .family = OF::kSpeechStreamAborted, .labels = {AbortReason(0)}}}}};

// ---- OmniTransferMetrics (transfer.py; §3.4), one observation per physical hop ----

inline constexpr ObserveMethod kObserveTransferSize =
    EdgeHistogram("observe_size", "size_bytes", OF::kTransferSizeBytes,
                  "transfer_size_bytes{edge}.observe(size_bytes)");
inline constexpr ObserveMethod kObserveTransferTxTime = EdgeHistogram(
    "observe_tx_time", "tx_time_s", OF::kTransferTxS, "transfer_tx_s{edge}.observe(tx_time_s)");
inline constexpr ObserveMethod kObserveTransferRxTime = EdgeHistogram(
    "observe_rx_time", "rx_time_s", OF::kTransferRxS, "transfer_rx_s{edge}.observe(rx_time_s)");
inline constexpr ObserveMethod kObserveTransferInFlightTime =
    EdgeHistogram("observe_in_flight_time", "in_flight_time_s", OF::kTransferInFlightS,
                  "transfer_in_flight_s{edge}.observe(in_flight_time_s)");

// ---- RealtimeVADMetrics (realtime.py; §3.5) ----

inline constexpr ObserveMethod kSessionStarted{
    .name = "session_started",
    .doc = "realtime_vad_active_sessions.inc()",
    .effects = {{{.op = Op::kInc, .family = OF::kRealtimeVadActiveSessions}}}};
inline constexpr ObserveMethod kSessionFinished{
    .name = "session_finished",
    .doc = "realtime_vad_active_sessions.dec()",
    .effects = {{{.op = Op::kDec, .family = OF::kRealtimeVadActiveSessions}}}};
inline constexpr ObserveMethod kObserveInference{
    .name = "observe_inference",
    .doc = "realtime_vad_inference_latency_s.observe(latency_ms / 1000)",
    .params = {"latency_ms"},
    .effects = {{{.op = Op::kObserve,
                  .family = OF::kRealtimeVadInferenceLatencyS,
                  .value = 0,
                  .divisor = 1000}}}};
inline constexpr ObserveMethod kObserveEndpointDelay{
    .name = "observe_endpoint_delay",
    .doc = "realtime_vad_endpoint_delay_s.observe(delay_ms / 1000)",
    .params = {"delay_ms"},
    .effects = {{{.op = Op::kObserve,
                  .family = OF::kRealtimeVadEndpointDelayS,
                  .value = 0,
                  .divisor = 1000}}}};
inline constexpr ObserveMethod kError{
    .name = "error",
    .doc = "realtime_vad_errors_total{reason} += 1 (reason as given)",
    .params = {"reason"},
    .effects = {{{.op = Op::kInc, .family = OF::kRealtimeVadErrors, .labels = {Arg(0)}}}}};

}  // namespace observe

// ---- The classes' method tables, in upstream's order ----

inline constexpr ObserveMethod kPrometheusMethods[] = {
    observe::kSetRunning,
    observe::kSetWaiting,
    observe::kRequestSucceeded,
    observe::kRequestFailed,
    observe::kObserveTokens,
    observe::kObserveStageGenTime,
    observe::kObserveStageInQueue,
    observe::kObserveQueueWait,
    observe::kSetStageWaitingRequests,
    observe::kObserveNumInferenceSteps,
    observe::kIncImageCount,
    observe::kObserveImagePixels,
    observe::kSetPeakMemory,
    observe::kIncRequestsFailed,
    observe::kObserveKvWait,
    observe::kSetDuplexSessions,
    observe::kObserveDuplexAppend,
    observe::kObserveDuplexControlQueueWait,
    observe::kSetDuplexContext,
    observe::kIncDuplexReplicaAffinityLoss,
    observe::kSetDuplexRecoveryState,
    observe::kIncDuplexKvRecovery,
};
inline constexpr ObserveMethod kModalityMethods[] = {
    observe::kObserveAudioTtfp,
    observe::kObserveAudioDuration,
    observe::kObserveAudioRtf,
    observe::kIncAudioFrames,
    observe::kObserveAudioUnderrun,
    observe::kIncAudioContinuityOk,
    observe::kIncAudioSkipped,
    observe::kObserveDiffusionExec,
    observe::kObserveDiffusionExecPerStep,
    observe::kObserveDiffusionPreprocess,
    observe::kObserveDiffusionPostprocess,
    observe::kObserveVaeDecode,
    observe::kObserveDiffusionForward,
    observe::kObserveDiffusionKvLoad,
    observe::kObserveImageTtfp,
    observe::kObserveDenoiseStepLatency,
    observe::kIncSpeechStreamCompleted,
    observe::kIncSpeechStreamAborted,
};
inline constexpr ObserveMethod kTransferMethods[] = {
    observe::kObserveTransferSize,
    observe::kObserveTransferTxTime,
    observe::kObserveTransferRxTime,
    observe::kObserveTransferInFlightTime,
};
inline constexpr ObserveMethod kRealtimeMethods[] = {
    observe::kSessionStarted,       observe::kSessionFinished, observe::kObserveInference,
    observe::kObserveEndpointDelay, observe::kError,
};

static_assert(std::ranges::all_of(kPrometheusMethods, WellFormed));
static_assert(std::ranges::all_of(kModalityMethods, WellFormed));
static_assert(std::ranges::all_of(kTransferMethods, WellFormed));
static_assert(std::ranges::all_of(kRealtimeMethods, WellFormed));

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_OBSERVE_TABLE_H_
