// The bodies of tests/aggregation/upstream/ (written from each exporter's current code; its README
// names the code) read into the snapshot a careful SRE expects: each request counted once, TTFT
// from first tokens, a first error counted from zero, no false partial.
#include <string>

#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/exporters/builtin.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using testing::FindGauge;
using testing::FindWindow;
using testing::MergeMetricsWindow;
using testing::MetricsModelDeployment;
using testing::MetricsRouterPod;
using testing::MetricsServerPod;
using testing::Parse;
using testing::UpstreamBody;

PodMetrics ParseFrom(const std::string& body, const ExporterProfile& profile, const Pod& pod) {
  PodMetrics read;
  std::string error;
  EXPECT_OK(ParsePodMetrics(body, &profile, &read, &pod));
  return read;
}

TEST(UpstreamBodies, SglangWithPrioritiesAndEverySchedulerCountsEachRequestOnce) {
  const std::string body = UpstreamBody("sglang_016d8605_priority_all_schedulers.prom");
  const Pod pod = MetricsServerPod(
      "sglang-0", {"python3", "-m", "sglang.launch_server", "--tp-size", "4", "--dp-size", "2",
                   "--enable-dp-attention", "--enable-priority-scheduling",
                   "--enable-metrics-for-all-schedulers"});
  const PodMetrics read = ParseFrom(body, exporters::kSglang, pod);
  EXPECT_EQ(read.gauges.at("running"), 12);  // 7 + 5: each DP group's total, once
  EXPECT_EQ(read.gauges.at("waiting"), 3);
  EXPECT_EQ(read.cache.at("device-prefix").hits, 700);
  EXPECT_EQ(read.cache.at("device-prefix").queries, 2300);  // input 1600 + device hits 700
  EXPECT_EQ(read.windows.at("ttft").count, 90);             // both is_streaming series
  EXPECT_DOUBLE_EQ(read.windows.at("ttft").sum, 3.7);
  EXPECT_EQ(read.windows.at("itl").count, 4500);

  // Without the flag in the Pod's arguments every rank's series is read as its own.
  const PodMetrics unflagged = ParseFrom(body, exporters::kSglang, MetricsServerPod("sglang-1"));
  EXPECT_EQ(unflagged.gauges.at("running"), 24);
}

ModelDeployment WithRouter(std::string router) {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = std::move(router), .replicas = 1};
  return md;
}

// Two reads 30 s apart: 60 streaming and 60 non-streaming requests, the process's first 2 errors.
TEST(UpstreamBodies, LlmdRouterReadsStreamingTtftTheCurrentNamesOnceAndItsFirstErrors) {
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "llm-d-router");
  const Snapshot s = MergeMetricsWindow(
      WithRouter("llm-d-router"), router,
      Parse(UpstreamBody("llmd_router_ebab6879_first.prom"), exporters::kLlmdRouter),
      Parse(UpstreamBody("llmd_router_ebab6879_second.prom"), exporters::kLlmdRouter));
  EXPECT_TRUE(s.missing.empty()) << s.missing.size();
  EXPECT_FALSE(s.partial);
  ASSERT_NE(FindGauge(s.processing, "router-running", "router"), nullptr);
  EXPECT_EQ(FindGauge(s.processing, "router-running", "router")->value, 5);  // not the twin too
  EXPECT_EQ(FindGauge(s.processing, "router-backends", "router")->value, 2);
  const Window* ttft = FindWindow(s.latency, "chat-router", "ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->samples, 60);
  EXPECT_NEAR(ttft->value, 0.038, 1e-9);  // not 0.97 with the whole non-streaming requests in
  EXPECT_NEAR(FindWindow(s.latency, "chat-router", "tpot")->value, 0.012, 1e-9);
  EXPECT_DOUBLE_EQ(FindWindow(s.traffic, "chat-router", "requests")->value, 4);
  const Window* errors = FindWindow(s.traffic, "chat-router", "request-errors");
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->samples, 2);
  EXPECT_DOUBLE_EQ(errors->window_seconds, 30);
}

TEST(UpstreamBodies, SmgWithItsNewLabelsSumsEveryPart) {
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "sglang-gateway");
  const Snapshot s = MergeMetricsWindow(
      WithRouter("sglang-gateway"), router,
      Parse(UpstreamBody("smg_73da68ca_first.prom"), exporters::kSglangGateway),
      Parse(UpstreamBody("smg_73da68ca_second.prom"), exporters::kSglangGateway));
  EXPECT_TRUE(s.missing.empty()) << s.missing.size();
  EXPECT_FALSE(s.partial);
  EXPECT_EQ(FindGauge(s.processing, "router-running", "router")->value, 3);
  EXPECT_EQ(FindGauge(s.processing, "router-backends", "router")->value, 2);
  EXPECT_DOUBLE_EQ(FindWindow(s.traffic, "chat-router", "requests")->value, 6);  // 180 in 30 s
  EXPECT_DOUBLE_EQ(FindWindow(s.traffic, "chat-router", "errors")->value, 0.1);
  EXPECT_DOUBLE_EQ(FindWindow(s.traffic, "chat-router", "http-5xx-responses")->value, 0.1);
  EXPECT_DOUBLE_EQ(FindWindow(s.traffic, "chat-router", "error-ratio")->value, 3.0 / 180);
}

// vLLM's Rust frontend: the same snapshot as the reference's text capture of the same numbers.
TEST(UpstreamBodies, VllmRustFrontendReadsAsItsTextTwin) {
  const Pod pod = MetricsServerPod("server");
  const Snapshot om =
      MergeMetricsWindow(MetricsModelDeployment(), pod,
                         Parse(UpstreamBody("vllm_rust_frontend_first.om"), exporters::kVllm),
                         Parse(UpstreamBody("vllm_rust_frontend_second.om"), exporters::kVllm));
  const Snapshot text =
      MergeMetricsWindow(MetricsModelDeployment(), pod,
                         Parse(testing::Fixture("vllm_server_busy_first.prom"), exporters::kVllm),
                         Parse(testing::Fixture("vllm_server_busy_second.prom"), exporters::kVllm));
  ASSERT_EQ(om.latency.size(), 3);
  for (const char* key : {"ttft", "tpot", "itl"}) {
    SCOPED_TRACE(key);
    EXPECT_EQ(FindWindow(om.latency, "server", key)->value,
              FindWindow(text.latency, "server", key)->value);
    EXPECT_EQ(FindWindow(om.latency, "server", key)->samples,
              FindWindow(text.latency, "server", key)->samples);
  }
  EXPECT_EQ(FindWindow(om.latency, "server", "ttft")->samples, 238);  // the reference's golden
  ASSERT_EQ(om.cache_hits.size(), 1);
  EXPECT_DOUBLE_EQ(om.cache_hits[0].rate, 0.7044025157232704);  // the reference's golden
  EXPECT_EQ(om.processing.size(), text.processing.size());
  // The frontend writes no external-store counters: that scope is skipped, as with any Pod
  // whose local scope reads.
  EXPECT_EQ(om.partial, text.partial);
}

}  // namespace
}  // namespace modelmetrics::deployment
