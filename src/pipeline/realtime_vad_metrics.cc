// The realtime VAD observe layer. See realtime_vad_metrics.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/realtime_vad_metrics.h"

#include <cmath>

#include "base/mutex.h"
#include "pipeline/catalog.h"

namespace modelmetrics::pipeline {
RealtimeVadMetrics::RealtimeVadMetrics(Registry& registry, std::string model_name,
                                       std::optional<bool> log_stats)
    : log_stats_(log_stats.value_or(registry.enabled())), model_name_(std::move(model_name)) {
  Family<Gauge>* active = RegisterOmni<OmniFamily::kRealtimeVadActiveSessions>(registry);
  Family<Histogram>* inference = RegisterOmni<OmniFamily::kRealtimeVadInferenceLatencyS>(registry);
  Family<Histogram>* delay = RegisterOmni<OmniFamily::kRealtimeVadEndpointDelayS>(registry);
  errors_ = RegisterOmni<OmniFamily::kRealtimeVadErrors>(registry);
  ok_ = active != nullptr && inference != nullptr && delay != nullptr && errors_ != nullptr;
  if (!ok_) {
    log_stats_ = false;
    return;
  }
  // Eager (§4.11): the children exist from the start. With a disabled registry Bind gives
  // inert handles; with an enabled registry but log_stats off the methods return first.
  active_ = active->Bind({model_name_});
  inference_ = inference->Bind({model_name_});
  endpoint_delay_ = delay->Bind({model_name_});
}

void RealtimeVadMetrics::SessionStarted() const {
  if (log_stats_) active_.Inc();
}

void RealtimeVadMetrics::SessionFinished() const {
  if (log_stats_) active_.Dec();
}

void RealtimeVadMetrics::ObserveInference(double latency_ms) const {
  if (log_stats_ && !std::isnan(latency_ms)) inference_.Observe(latency_ms / 1000.0);
}

void RealtimeVadMetrics::ObserveEndpointDelay(double delay_ms) const {
  if (log_stats_ && !std::isnan(delay_ms)) endpoint_delay_.Observe(delay_ms / 1000.0);
}

void RealtimeVadMetrics::Error(std::string_view reason) {
  if (!log_stats_) return;
  Counter counter;
  {
    base::MutexLock lock(&mu_);
    auto it = by_reason_.find(reason);
    if (it == by_reason_.end()) {
      it = by_reason_.emplace(std::string(reason), errors_->Labels({model_name_, reason})).first;
    }
    counter = it->second;
  }
  counter.Inc();
}

}  // namespace modelmetrics::pipeline
