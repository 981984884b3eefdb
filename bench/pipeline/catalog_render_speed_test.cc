// Render cost of the whole pipeline catalog on 3 stages x 2 replicas: every vllm_omni:* family
// with its per-(stage, replica) and per-edge children populated, plus every vllm:* engine family
// for the 6 engines. Also the C++ observe path (observe_table.h rows through ObserveRecorder): a
// model-only gauge, and a (stage, replica) histogram over six cached children, per call.
//
//   build/bench/catalog_render_speed_test --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string>

#include "modelmetrics/metrics.h"
#include "pipeline/audio_metrics.h"
#include "pipeline/diffusion_metrics.h"
#include "pipeline/engine_stats.h"
#include "pipeline/omni_metrics.h"
#include "pipeline/prometheus_metrics.h"

namespace modelmetrics::pipeline {
namespace {

void BM_RenderWholeCatalog3x2(benchmark::State& state) {
  Registry registry;
  OmniMetrics omni(registry,
                   {.model_name = "Qwen/Qwen2.5-Omni-7B", .replicas_per_stage = {2, 2, 2}});
  AudioMetrics audio(registry, "Qwen/Qwen2.5-Omni-7B",
                     AudioMetricsOptions{.replicas_per_stage = {2, 2, 2}});
  std::unique_ptr<EngineStatsLogger> engines;
  if (!EngineStatsLogger::Create(
           registry, {.model_name = "Qwen/Qwen2.5-Omni-7B", .engines = EngineMap{2, 2, 2}},
           &engines)
           .ok()) {
    state.SkipWithError("the engine families do not register");
    return;
  }
  SchedulerStats sched;
  sched.num_running_reqs = 3;
  sched.prefix_cache_stats = {.queries = 100, .hits = 40};
  IterationStats iter;
  iter.num_prompt_tokens = 100;
  iter.num_generation_tokens = 20;
  iter.time_to_first_tokens_iter = {0.05, 0.2};
  iter.inter_token_latencies_iter = {0.01, 0.02};
  iter.finished_requests.push_back(FinishedRequestStats{
      .e2e_latency = 1.5, .num_prompt_tokens = 100, .num_generation_tokens = 20});
  for (size_t e = 0; e < 6; ++e) {
    if (!engines->Record(e, &sched, &iter).ok()) state.SkipWithError("engine record failed");
  }
  for (int stage = 0; stage < 3; ++stage) {
    omni.prometheus().ObserveStageGenTime(stage, "llm", 0.4);
    omni.prometheus().SetStageWaitingRequests(stage, 2);
    omni.prometheus().ObserveStageInQueue(stage, 0.01);
    for (int replica = 0; replica < 2; ++replica) {
      const std::string s = std::to_string(stage), r = std::to_string(replica);
      omni.diffusion().ObserveDiffusionExec(stage, replica, 1.2);
      omni.diffusion().ObserveImageTtfp(stage, replica, 0.8);
      omni.diffusion().ObserveDenoiseStepLatency(stage, replica, 0.05);
      audio.ObserveAudioTtfp(s, r, 0.3);
      audio.ObserveAudioDuration(s, r, 4.0);
      audio.ObserveAudioRtf(s, r, 0.5);
      audio.IncAudioFrames(s, r, 96000);
      audio.ObserveAudioUnderrun(s, r, 0.02);
      if (stage < 2) {
        for (int to_replica = 0; to_replica < 2; ++to_replica) {
          const TransferEdge edge{stage, replica, stage + 1, to_replica};
          omni.transfer().ObserveTransferSize(edge, 65536);
          omni.transfer().ObserveTransferTxTime(edge, 0.002);
          omni.transfer().ObserveTransferRxTime(edge, 0.001);
          omni.transfer().ObserveTransferInFlightTime(edge, 0.003);
        }
      }
    }
  }
  omni.prometheus().RequestSucceeded(2.0);
  size_t bytes = 0, lines = 0;
  std::string text;  // kept between scrapes, as MetricsEndpoint does
  for (auto _ : state) {
    text.clear();
    registry.Render(Format::kText, &text);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  for (char c : text) lines += c == '\n';
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["lines"] = static_cast<double>(lines);
}
BENCHMARK(BM_RenderWholeCatalog3x2)->Unit(benchmark::kMicrosecond);

void BM_ObserveEagerGauge(benchmark::State& state) {
  Registry registry;
  PrometheusMetrics metrics(registry, "m");
  double n = 0;
  for (auto _ : state) metrics.SetRunning(n += 1);
}
BENCHMARK(BM_ObserveEagerGauge);

void BM_ObserveStageReplicaHistogram(benchmark::State& state) {
  Registry registry;
  DiffusionMetrics metrics(registry, "m");
  int i = 0;
  for (auto _ : state) {
    metrics.ObserveDiffusionExec(i % 3, (i / 3) % 2, 0.25);
    ++i;
  }
}
BENCHMARK(BM_ObserveStageReplicaHistogram);

}  // namespace
}  // namespace modelmetrics::pipeline

BENCHMARK_MAIN();
