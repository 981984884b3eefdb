// RealtimeVADMetrics (§3.5): eager children, ms -> s, per-instance gating, reasons as given.
#include "pipeline/realtime_vad_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace modelmetrics::pipeline {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(RealtimeVadMetricsTest, EagerChildrenRenderZerosBeforeAnyObservation) {
  Registry registry;
  RealtimeVadMetrics vad(registry, "m");
  ASSERT_TRUE(vad.ok());
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_active_sessions{model_name="m"} 0.0)"));
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_inference_latency_s_count{model_name="m"} 0.0)"));
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_endpoint_delay_s_count{model_name="m"} 0.0)"));
  EXPECT_TRUE(Has(text, "# TYPE vllm_omni:realtime_vad_errors_total counter"));
  EXPECT_EQ(text.find("vllm_omni:realtime_vad_errors_total{"), std::string::npos);  // lazy
}

TEST(RealtimeVadMetricsTest, SessionsLatenciesAndErrors) {
  Registry registry;
  RealtimeVadMetrics vad(registry, "m");
  vad.SessionStarted();
  vad.SessionStarted();
  vad.SessionFinished();
  vad.ObserveInference(4.0);           // 0.004 s -> le=0.005
  vad.ObserveEndpointDelay(500);       // 0.5 s
  vad.ObserveInference(std::nan(""));  // dropped
  vad.Error("input_overflow");
  vad.Error("input_overflow");
  vad.Error("");  // passed through as given
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_active_sessions{model_name="m"} 1.0)"));
  EXPECT_TRUE(Has(
      text, R"(vllm_omni:realtime_vad_inference_latency_s_bucket{le="0.001",model_name="m"} 0.0)"));
  EXPECT_TRUE(Has(
      text, R"(vllm_omni:realtime_vad_inference_latency_s_bucket{le="0.005",model_name="m"} 1.0)"));
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_inference_latency_s_count{model_name="m"} 1.0)"));
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_inference_latency_s_sum{model_name="m"} 0.004)"));
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_endpoint_delay_s_sum{model_name="m"} 0.5)"));
  EXPECT_TRUE(Has(
      text, R"(vllm_omni:realtime_vad_errors_total{model_name="m",reason="input_overflow"} 2.0)"));
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_errors_total{model_name="m",reason=""} 1.0)"));
}

TEST(RealtimeVadMetricsTest, LogStatsOffKeepsEagerZerosAndRecordsNothing) {
  Registry
      registry;  // enabled registry, but this instance has stats off (Python's per-object gate)
  RealtimeVadMetrics off(registry, "off", /*log_stats=*/false);
  RealtimeVadMetrics on(registry, "on");
  off.SessionStarted();
  off.ObserveInference(3);
  off.Error("x");
  on.SessionStarted();
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_active_sessions{model_name="off"} 0.0)"));
  EXPECT_TRUE(Has(text, R"(vllm_omni:realtime_vad_active_sessions{model_name="on"} 1.0)"));
  EXPECT_TRUE(
      Has(text, R"(vllm_omni:realtime_vad_inference_latency_s_count{model_name="off"} 0.0)"));
  EXPECT_EQ(text.find(R"(reason="x")"), std::string::npos);
}

TEST(RealtimeVadMetricsTest, ConcurrentErrorsAndSessionsLoseNothing) {
  Registry registry;
  RealtimeVadMetrics vad(registry, "m");
  constexpr int kThreads = 4, kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        vad.Error(t % 2 == 0 ? "a" : "b");
        vad.ObserveInference(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(
      Has(text, R"(vllm_omni:realtime_vad_errors_total{model_name="m",reason="a"} 40000.0)"));
  EXPECT_TRUE(
      Has(text, R"(vllm_omni:realtime_vad_errors_total{model_name="m",reason="b"} 40000.0)"));
  EXPECT_TRUE(
      Has(text, R"(vllm_omni:realtime_vad_inference_latency_s_count{model_name="m"} 80000.0)"));
}

}  // namespace
}  // namespace modelmetrics::pipeline
