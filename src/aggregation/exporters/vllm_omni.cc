// vLLM-Omni's pipeline metrics (pipeline-metrics design): one Pod serves one multi-stage pipeline
// (for example thinker -> talker -> code2wav) and exports the `vllm_omni:*` catalog plus the
// upstream `vllm:*` engine families relabelled by stage and replica. The deployment view reads
// the pipeline's request gauges and end-to-end latency, and per stage, stage replica, transfer
// edge and reason what the pipeline splits by label (the scopes of exporter_profile.h's Split).
//
// Almost every family here is created at its first observation (an image pipeline never exports
// audio families), so their absence is reported, but not as a fault; a family or group that appears
// between two reads is windowed from zero. The two ratios are the design's: the Speech API stream
// interruption ratio (aborted over aborted + completed, all reasons) and the continuity-ok ratio
// (requests whose worst underrun stayed below the threshold, over the requests that reported an
// underrun sample, per code2wav replica).
#include "exporters/builtin.h"
#include "kube/objects.h"
#include "reasons.h"

namespace modelmetrics::deployment {
namespace {

constexpr std::string_view kUnitRatio = "ratio";
constexpr std::string_view kUnitBytes = "bytes";

// A lazily created histogram of per-group latency.
constexpr WindowRow Latency(std::string_view key, std::string_view family, Split split,
                            std::string_view unit = kUnitSeconds) {
  return {.key = key,
          .family = family,
          .kind = WindowKind::kHistogram,
          .area = Area::kLatency,
          .unit = unit,
          .split = split,
          .lazy = true};
}

// A lazily created counter reported as a rate.
constexpr WindowRow Rate(std::string_view key, std::string_view family, std::string_view unit,
                         Split split = Split::kNone, std::string_view label = "") {
  return {.key = key,
          .family = family,
          .kind = WindowKind::kCounter,
          .area = Area::kTraffic,
          .unit = unit,
          .split = split,
          .split_label = label,
          .lazy = true};
}

// A transfer edge's histogram.
constexpr WindowRow Transfer(std::string_view key, std::string_view family,
                             std::string_view unit = kUnitSeconds) {
  return {.key = key,
          .family = family,
          .kind = WindowKind::kHistogram,
          .area = Area::kTransfer,
          .unit = unit,
          .split = Split::kEdge,
          .lazy = true};
}

}  // namespace

const ExporterProfile exporters::kVllmOmni{
    .name = kEngineVllmOmni,
    .role = PodRole::kEngine,
    .gauges =
        {
            {"running", "vllm_omni:num_requests_running", kUnitRequests},
            {"waiting", "vllm_omni:num_requests_waiting", kUnitRequests, true},
            {.key = "stage-running",
             .family = "vllm:num_requests_running",
             .unit = kUnitRequests,
             .split = Split::kStageReplica,
             .lazy = true},
            {.key = "stage-waiting",
             .family = "vllm_omni:stage_waiting_requests",
             .unit = kUnitRequests,
             .queueing = true,
             .split = Split::kStage,
             .lazy = true},
        },
    .windows =
        {
            {"e2e", "vllm_omni:e2e_request_latency_s", WindowKind::kHistogram, Area::kLatency,
             kUnitSeconds},
            Latency("stage-gen-time", "vllm_omni:stage_gen_time_s", Split::kStage),
            Latency("audio-ttfp", "vllm_omni:audio_ttfp_s", Split::kStageReplica),
            Latency("audio-rtf", "vllm_omni:audio_rtf", Split::kStageReplica, kUnitRatio),
            Latency("audio-underrun", "vllm_omni:audio_underrun_s", Split::kStageReplica),
            Latency("image-ttfp", "vllm_omni:image_ttfp_s", Split::kStageReplica),
            Rate("requests-succeeded", "vllm_omni:requests_success", kUnitRequestsPerSecond,
                 Split::kLabel, "finished_reason"),
            Rate("requests-failed", "vllm_omni:requests_failed", kUnitRequestsPerSecond,
                 Split::kLabel, "reason"),
            Rate("speech-streams-aborted", "vllm_omni:speech_stream_aborted", "streams/second",
                 Split::kLabel, "reason"),
            Rate("speech-streams-completed", "vllm_omni:speech_stream_completed", "streams/second"),
            Rate("audio-continuity-ok", "vllm_omni:audio_continuity_ok", kUnitRequestsPerSecond,
                 Split::kStageReplica),
            Transfer("transfer-size", "vllm_omni:transfer_size_bytes", kUnitBytes),
            Transfer("transfer-tx", "vllm_omni:transfer_tx_s"),
            Transfer("transfer-rx", "vllm_omni:transfer_rx_s"),
            Transfer("transfer-in-flight", "vllm_omni:transfer_in_flight_s"),
        },
    .idle_key = "e2e",
    .idle_reason = reason::kOmniIdleWindow,
    .idle_all_areas = true,
    .ratios =
        {
            {.key = "stream-interruption-ratio",
             .numerator = "speech-streams-aborted",
             .denominator = "speech-streams-completed",
             .add_numerator = true,
             .no_denominator = reason::kNoSpeechStreams},
            {.key = "continuity-ok-ratio",
             .numerator = "audio-continuity-ok",
             .denominator = "audio-underrun",
             .per_scope = true,
             .no_denominator = reason::kNoAudioFinished},
        },
};

}  // namespace modelmetrics::deployment
