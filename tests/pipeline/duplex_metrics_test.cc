// DuplexMetrics (upstream-changes-2026-09 §1.1): eager children, bounded label values, guards,
// per-instance gating, concurrent callers.
#include "pipeline/duplex_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace modelmetrics::pipeline {
namespace {

bool InText(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(DuplexMetricsTest, EagerChildrenRenderZerosBeforeAnyObservation) {
  Registry registry;
  DuplexMetrics duplex(registry, "m");
  ASSERT_TRUE(duplex.ok());
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_sessions{model_name="m",state="active"} 0.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_sessions{model_name="m",state="closing"} 0.0)"));
  for (const char* gauge :
       {"context_tokens", "context_limit_tokens", "context_utilization", "append_receipts",
        "replay_journal_tokens", "replay_journal_bytes", "resource_generation"}) {
    EXPECT_TRUE(InText(text, "vllm_omni:duplex_" + std::string(gauge) + R"({model_name="m"} 0.0)"))
        << gauge;
  }
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_replica_affinity_loss_total{model_name="m"} 0.0)"));
  // Lazy: declared, no child yet.
  for (const char* lazy : {"duplex_append_requests_total", "duplex_append_latency_s_count",
                           "duplex_control_queue_wait_s_count", "duplex_kv_rebuilds_total"}) {
    EXPECT_EQ(text.find("vllm_omni:" + std::string(lazy) + "{"), std::string::npos) << lazy;
  }
  EXPECT_TRUE(InText(text, "# TYPE vllm_omni:duplex_kv_rebuilds_total counter"));
}

TEST(DuplexMetricsTest, GaugesAreClampedAndSet) {
  Registry registry;
  DuplexMetrics duplex(registry, "m");
  duplex.SetSessions(3, -2);
  duplex.SetContext(4096, 8192, 0.5, -1);
  duplex.SetRecoveryState(100, 2048, 7);
  duplex.SetRecoveryState(std::nan(""), 4096, 8);  // NaN dropped, the others set
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_sessions{model_name="m",state="active"} 3.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_sessions{model_name="m",state="closing"} 0.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_context_tokens{model_name="m"} 4096.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_context_limit_tokens{model_name="m"} 8192.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_context_utilization{model_name="m"} 0.5)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_append_receipts{model_name="m"} 0.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_replay_journal_tokens{model_name="m"} 100.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_replay_journal_bytes{model_name="m"} 4096.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_resource_generation{model_name="m"} 8.0)"));
}

TEST(DuplexMetricsTest, LabelValuesAreBoundedAsUpstreamBoundsThem) {
  Registry registry;
  DuplexMetrics duplex(registry, "m");
  duplex.ObserveAppend("success", 0.004);
  duplex.ObserveAppend("no-such-outcome", 0.02);  // -> error
  duplex.ObserveAppend("error", -1);              // latency clamped to 0, still counted
  duplex.ObserveControlQueueWait("append", 0.002);
  duplex.ObserveControlQueueWait("rewind", 0.002);  // -> unknown
  duplex.IncKvRecovery("replica_loss", "success");
  duplex.IncKvRecovery("gpu_fell_off", "maybe", 2);        // -> other, failure
  duplex.IncKvRecovery("context_rollover", "success", 0);  // count <= 0: dropped
  duplex.IncReplicaAffinityLoss();
  duplex.IncReplicaAffinityLoss(-3);  // dropped
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(InText(
      text, R"(vllm_omni:duplex_append_requests_total{model_name="m",outcome="success"} 1.0)"));
  EXPECT_TRUE(InText(
      text, R"(vllm_omni:duplex_append_requests_total{model_name="m",outcome="error"} 2.0)"));
  EXPECT_TRUE(InText(
      text,
      R"(vllm_omni:duplex_append_latency_s_bucket{le="0.001",model_name="m",outcome="error"} 1.0)"));
  EXPECT_TRUE(InText(
      text, R"(vllm_omni:duplex_append_latency_s_sum{model_name="m",outcome="error"} 0.02)"));
  EXPECT_TRUE(InText(
      text,
      R"(vllm_omni:duplex_control_queue_wait_s_count{model_name="m",operation="unknown"} 1.0)"));
  EXPECT_TRUE(InText(
      text,
      R"(vllm_omni:duplex_control_queue_wait_s_count{model_name="m",operation="append"} 1.0)"));
  EXPECT_TRUE(InText(
      text,
      R"(vllm_omni:duplex_kv_rebuilds_total{model_name="m",outcome="success",reason="replica_loss"} 1.0)"));
  EXPECT_TRUE(InText(
      text,
      R"(vllm_omni:duplex_kv_rebuilds_total{model_name="m",outcome="failure",reason="other"} 2.0)"));
  EXPECT_EQ(text.find(R"(reason="context_rollover")"), std::string::npos);
  EXPECT_EQ(text.find("no-such-outcome"), std::string::npos);
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_replica_affinity_loss_total{model_name="m"} 1.0)"));
}

TEST(DuplexMetricsTest, LogStatsOffKeepsEagerZerosAndRecordsNothing) {
  Registry registry;
  DuplexMetrics off(registry, "off", /*log_stats=*/false);
  DuplexMetrics on(registry, "on");
  off.SetSessions(5, 5);
  off.ObserveAppend("success", 1);
  off.IncKvRecovery("replica_loss", "success");
  on.SetSessions(1, 0);
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_sessions{model_name="off",state="active"} 0.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_sessions{model_name="on",state="active"} 1.0)"));
  EXPECT_EQ(text.find(R"(model_name="off",outcome)"), std::string::npos);
  EXPECT_EQ(text.find(R"(vllm_omni:duplex_kv_rebuilds_total{model_name="off")"), std::string::npos);
}

TEST(DuplexMetricsTest, ConcurrentAppendsAreExact) {
  Registry registry;
  DuplexMetrics duplex(registry, "m");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&duplex, t] {
      const char* outcome = t % 2 == 0 ? "success" : "timeout";
      for (int i = 0; i < kPerThread; ++i) {
        duplex.ObserveAppend(outcome, 0.001);
        duplex.IncKvRecovery("replica_loss", "success");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(InText(
      text, R"(vllm_omni:duplex_append_requests_total{model_name="m",outcome="success"} 10000.0)"));
  EXPECT_TRUE(InText(
      text, R"(vllm_omni:duplex_append_requests_total{model_name="m",outcome="timeout"} 10000.0)"));
  EXPECT_TRUE(InText(
      text,
      R"(vllm_omni:duplex_kv_rebuilds_total{model_name="m",outcome="success",reason="replica_loss"} 20000.0)"));
}

TEST(DuplexMetricsTest, SecondInstanceOnOneRegistrySharesTheFamilies) {
  Registry registry;
  DuplexMetrics a(registry, "a");
  DuplexMetrics b(registry, "b");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  a.IncReplicaAffinityLoss(2);
  b.IncReplicaAffinityLoss();
  const std::string text = registry.Render(Format::kText);
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_replica_affinity_loss_total{model_name="a"} 2.0)"));
  EXPECT_TRUE(InText(text, R"(vllm_omni:duplex_replica_affinity_loss_total{model_name="b"} 1.0)"));
}

}  // namespace
}  // namespace modelmetrics::pipeline
