// Upstream's OmniPrometheusMetrics, pipeline and image/diffusion-service part (§3.1 of
// docs/pipeline-behaviour.md): the request gauges, success and failure counters, e2e latency,
// tokens, stage generation time, queue waits, inference steps, image counts and pixels, peak
// memory and kv-wait. Its duplex methods are DuplexMetrics (duplex_metrics.h), which a duplex
// host builds beside it.
//
// Contract.
// - The constructor registers the kPipeline and kImage catalog families (catalog.h) and binds
//   the eager children for its model (§4.11: zeros from the start, also with stats off). A
//   registry takes each family once: one PrometheusMetrics per registry (a second gets inert
//   handles; ok() says so).
// - Each method is its row of observe_table.h (kPrometheusMethods), carried out by an
//   ObserveRecorder: the labels, the catalog Guard and the value as the row says. Gating (§4.8):
//   with the registry disabled every method records nothing.
//
// Thread-safety: every method may be called from any thread at once (ObserveRecorder).
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_PROMETHEUS_METRICS_H_
#define MODELMETRICS_PIPELINE_PROMETHEUS_METRICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/observe_recorder.h"

namespace modelmetrics::pipeline {

class PrometheusMetrics {
 public:
  PrometheusMetrics(Registry& registry, std::string model_name);
  PrometheusMetrics(const PrometheusMetrics&) = delete;
  PrometheusMetrics& operator=(const PrometheusMetrics&) = delete;

  bool ok() const { return families_.Complete(); }
  const std::string& model_name() const { return recorder_.model_name(); }

  void SetRunning(double n) const;
  void SetWaiting(double n) const;
  // requests_success_total{finished_reason} and e2e latency.
  void RequestSucceeded(double e2e_s, std::string_view finished_reason = "stop") const;
  // requests_success_total{finished_reason="abort"}; no e2e observation.
  void RequestFailed() const;
  // requests_failed_total{reason or "unknown"}; the lifecycle normalises reasons first (§4.6).
  void IncRequestsFailed(std::optional<std::string_view> reason) const;
  void ObserveTokens(int64_t prompt_tokens, int64_t generation_tokens) const;
  void ObserveStageGenTime(int stage, std::string_view stage_type, double seconds) const;
  void ObserveQueueWait(double seconds) const;
  void SetStageWaitingRequests(int stage, double n) const;
  void ObserveStageInQueue(int stage, double seconds) const;
  void ObserveNumInferenceSteps(double steps) const;
  void IncImageCount(int64_t count) const;
  void ObserveImagePixels(double pixels) const;
  void SetPeakMemory(int stage, double mb) const;
  void ObserveKvWait(std::optional<std::string_view> connector_type, double seconds) const;

 private:
  FamilySet<OmniFamily> families_;
  ObserveRecorder recorder_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_PROMETHEUS_METRICS_H_
