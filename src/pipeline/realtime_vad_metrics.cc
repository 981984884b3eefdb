// The realtime VAD observe layer. See realtime_vad_metrics.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/realtime_vad_metrics.h"

namespace modelmetrics::pipeline {
namespace {

constexpr Group kGroups[] = {Group::kRealtime};

}  // namespace

// The eager children (§4.11) are bound by the recorder; with a disabled registry Bind gives
// inert handles, and with an enabled registry but log_stats off the methods return first.
RealtimeVadMetrics::RealtimeVadMetrics(Registry& registry, std::string model_name,
                                       std::optional<bool> log_stats)
    : families_(registry, kGroups),
      ok_(families_.Complete()),
      log_stats_(ok_ && log_stats.value_or(registry.enabled())),
      recorder_(families_.table(), std::move(model_name), log_stats_) {}

void RealtimeVadMetrics::SessionStarted() const { recorder_.Call<observe::kSessionStarted>(); }

void RealtimeVadMetrics::SessionFinished() const { recorder_.Call<observe::kSessionFinished>(); }

void RealtimeVadMetrics::ObserveInference(double latency_ms) const {
  recorder_.Call<observe::kObserveInference>(latency_ms);
}

void RealtimeVadMetrics::ObserveEndpointDelay(double delay_ms) const {
  recorder_.Call<observe::kObserveEndpointDelay>(delay_ms);
}

void RealtimeVadMetrics::Error(std::string_view reason) const {
  recorder_.Call<observe::kError>(reason);
}

}  // namespace modelmetrics::pipeline
