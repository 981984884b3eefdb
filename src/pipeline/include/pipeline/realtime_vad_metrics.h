// The observe layer of the realtime server-side VAD families (§3.5 of
// docs/pipeline-behaviour.md; upstream `RealtimeVADMetrics`).
//
// Contract.
// - The constructor registers the four kRealtime catalog families (catalog.h) with the registry
//   (a second instance on the same registry shares them) and binds the eager children for its
//   model: active sessions and the two latency histograms render zeros from the start, even with
//   stats off. errors_total{reason} children are bound on first use; the reason is passed
//   through as given (upstream does not normalise it).
// - Gating: `log_stats` (default: the registry's) false makes every method a no-op.
// - Latencies arrive in milliseconds and are recorded in seconds (÷1000). Negative values are
//   recorded as given (upstream has no guard); NaN is dropped.
//
// - Each method is its row of observe_table.h (kRealtimeMethods), carried out by an
//   ObserveRecorder.
//
// Thread-safety: every method may be called from any thread at once (ObserveRecorder).
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_REALTIME_VAD_METRICS_H_
#define MODELMETRICS_PIPELINE_REALTIME_VAD_METRICS_H_

#include <optional>
#include <string>
#include <string_view>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/observe_recorder.h"

namespace modelmetrics::pipeline {

class RealtimeVadMetrics {
 public:
  RealtimeVadMetrics(Registry& registry, std::string model_name,
                     std::optional<bool> log_stats = std::nullopt);
  RealtimeVadMetrics(const RealtimeVadMetrics&) = delete;
  RealtimeVadMetrics& operator=(const RealtimeVadMetrics&) = delete;

  bool ok() const { return ok_; }  // false when a family name was taken by another definition
  bool log_stats() const { return log_stats_; }
  const std::string& model_name() const { return recorder_.model_name(); }

  void SessionStarted() const;   // active_sessions += 1
  void SessionFinished() const;  // active_sessions -= 1 (not clamped, as upstream's dec())
  void ObserveInference(double latency_ms) const;
  void ObserveEndpointDelay(double delay_ms) const;
  void Error(std::string_view reason) const;

 private:
  FamilySet<OmniFamily> families_;
  bool ok_ = false;
  bool log_stats_ = false;
  ObserveRecorder recorder_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_REALTIME_VAD_METRICS_H_
