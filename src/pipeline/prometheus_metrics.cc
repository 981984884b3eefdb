// The pipeline and image observe methods. See prometheus_metrics.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/prometheus_metrics.h"

#include <utility>

namespace modelmetrics::pipeline {
namespace {

constexpr Group kGroups[] = {Group::kPipeline, Group::kImage};

}  // namespace

PrometheusMetrics::PrometheusMetrics(Registry& registry, std::string model_name)
    : families_(registry, kGroups),
      recorder_(families_.table(), std::move(model_name), registry.enabled()) {}

void PrometheusMetrics::SetRunning(double n) const { recorder_.Call<observe::kSetRunning>(n); }

void PrometheusMetrics::SetWaiting(double n) const { recorder_.Call<observe::kSetWaiting>(n); }

void PrometheusMetrics::RequestSucceeded(double e2e_s, std::string_view finished_reason) const {
  recorder_.Call<observe::kRequestSucceeded>(e2e_s, finished_reason);
}

void PrometheusMetrics::RequestFailed() const { recorder_.Call<observe::kRequestFailed>(); }

void PrometheusMetrics::IncRequestsFailed(std::optional<std::string_view> reason) const {
  recorder_.Call<observe::kIncRequestsFailed>(reason);
}

void PrometheusMetrics::ObserveTokens(int64_t prompt_tokens, int64_t generation_tokens) const {
  recorder_.Call<observe::kObserveTokens>(prompt_tokens, generation_tokens);
}

void PrometheusMetrics::ObserveStageGenTime(int stage, std::string_view stage_type,
                                            double seconds) const {
  recorder_.Call<observe::kObserveStageGenTime>(stage, stage_type, seconds);
}

void PrometheusMetrics::ObserveQueueWait(double seconds) const {
  recorder_.Call<observe::kObserveQueueWait>(seconds);
}

void PrometheusMetrics::SetStageWaitingRequests(int stage, double n) const {
  recorder_.Call<observe::kSetStageWaitingRequests>(stage, n);
}

void PrometheusMetrics::ObserveStageInQueue(int stage, double seconds) const {
  recorder_.Call<observe::kObserveStageInQueue>(stage, seconds);
}

void PrometheusMetrics::ObserveNumInferenceSteps(double steps) const {
  recorder_.Call<observe::kObserveNumInferenceSteps>(steps);
}

void PrometheusMetrics::IncImageCount(int64_t count) const {
  recorder_.Call<observe::kIncImageCount>(count);
}

void PrometheusMetrics::ObserveImagePixels(double pixels) const {
  recorder_.Call<observe::kObserveImagePixels>(pixels);
}

void PrometheusMetrics::SetPeakMemory(int stage, double mb) const {
  recorder_.Call<observe::kSetPeakMemory>(stage, mb);
}

void PrometheusMetrics::ObserveKvWait(std::optional<std::string_view> connector_type,
                                      double seconds) const {
  recorder_.Call<observe::kObserveKvWait>(connector_type, seconds);
}

}  // namespace modelmetrics::pipeline
