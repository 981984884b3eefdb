// The diffusion breakdown. See diffusion_metrics.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/diffusion_metrics.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace modelmetrics::pipeline {
namespace {

constexpr Group kGroups[] = {Group::kDiffusion};

}  // namespace

DiffusionMetrics::DiffusionMetrics(Registry& registry, std::string model_name)
    : families_(registry, kGroups),
      recorder_(families_.table(), std::move(model_name), registry.enabled()) {}

void DiffusionMetrics::ObserveDiffusionExec(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveDiffusionExec>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveDiffusionExecPerStep(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveDiffusionExecPerStep>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveDiffusionPreprocess(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveDiffusionPreprocess>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveDiffusionPostprocess(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveDiffusionPostprocess>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveVaeDecode(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveVaeDecode>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveDiffusionForward(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveDiffusionForward>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveDiffusionKvLoad(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveDiffusionKvLoad>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveImageTtfp(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveImageTtfp>(stage, replica, seconds);
}
void DiffusionMetrics::ObserveDenoiseStepLatency(int stage, int replica, double seconds) const {
  recorder_.Call<observe::kObserveDenoiseStepLatency>(stage, replica, seconds);
}

void DiffusionMetrics::ObserveFinalize(const StageRequestStats& stats) const {
  if (!stats.replica_id.has_value() || !stats.diffusion_metrics.has_value() ||
      stats.diffusion_metrics->empty()) {
    return;
  }
  const Timings& dm = *stats.diffusion_metrics;
  const int stage = stats.stage_id;
  const int replica = *stats.replica_id;
  auto get = [&dm](std::string_view key) -> std::optional<double> {
    auto it = dm.find(key);
    return it == dm.end() ? std::nullopt : std::optional<double>(it->second);
  };
  int64_t steps = stats.num_inference_steps;
  if (steps == 0) steps = static_cast<int64_t>(get("num_inference_steps").value_or(0));
  if (auto exec = get("diffusion_engine_exec_time_s")) {
    ObserveDiffusionExec(stage, replica, *exec);
    if (steps > 0) ObserveDiffusionExecPerStep(stage, replica, *exec / steps);
  }
  if (auto pre = get("preprocess_time_s")) ObserveDiffusionPreprocess(stage, replica, *pre);
  if (auto post = get("postprocess_time_s")) ObserveDiffusionPostprocess(stage, replica, *post);
  if (auto vae = get("vae_decode_time_s")) ObserveVaeDecode(stage, replica, *vae);
  if (auto forward = get("forward_time_s")) {
    ObserveDiffusionForward(stage, replica, *forward);
    if (steps > 0 && stats.output_unit_type == "image") {
      ObserveDenoiseStepLatency(stage, replica, *forward / steps);
    }
  }
  if (auto kv = get("kv_recv_time_s")) ObserveDiffusionKvLoad(stage, replica, *kv);
}

}  // namespace modelmetrics::pipeline
