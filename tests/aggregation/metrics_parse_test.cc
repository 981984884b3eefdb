// Reading one Pod's /metrics body into keyed values (reference §3), including the parse halves of
// the upstream cases of §4.1 and the fixtures' golden values of §4.2.
#include "aggregation/metrics_parse.h"

#include "aggregation/exporter_registry.h"
#include "aggregation/exporters/builtin.h"

#include <string>

#include <gtest/gtest.h>

#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using testing::Fixture;
using testing::MetricsSGLangFixture;
using testing::MetricsVLLMFixture;
using testing::MetricsVLLMResponse;
using testing::Parse;

// §4.1 case 1.
TEST(SnapshotUpstream, ParseModelDeploymentMetrics) {
  const PodMetrics vllm = Parse(MetricsVLLMFixture(5, 10), exporters::kVllm);
  ASSERT_TRUE(vllm.gauges.contains("waiting"));
  EXPECT_EQ(vllm.gauges.at("waiting"), 0);
  EXPECT_EQ(vllm.gauges.at("running"), 2);
  ASSERT_TRUE(vllm.cache.contains("local-prefix"));
  EXPECT_EQ(vllm.cache.at("local-prefix").hits, 5);
  EXPECT_EQ(vllm.cache.at("local-prefix").queries, 10);
  EXPECT_FALSE(vllm.cache.contains("external-store"));

  const PodMetrics sglang = Parse(MetricsSGLangFixture(), exporters::kSglang);
  EXPECT_EQ(sglang.gauges.at("running"), 3);
  ASSERT_TRUE(sglang.cache.contains("host-prefix"));
  EXPECT_EQ(sglang.cache.at("host-prefix").hits, 3);
  EXPECT_EQ(sglang.cache.at("host-prefix").queries, 30);  // 20 + 5 + 3 + 2
  EXPECT_EQ(sglang.cache.at("device-prefix").hits, 5);
  EXPECT_EQ(sglang.cache.at("storage-prefix").hits, 2);
  EXPECT_EQ(sglang.cache.at("storage-prefix").queries, 30);

  const PodMetrics router =
      Parse("# TYPE vllm_router_active_workers gauge\nvllm_router_active_workers 1\n",
            exporters::kVllmRouter);
  EXPECT_EQ(router.gauges.at("router-reported-workers"), 1);

  const PodMetrics llmd =
      Parse("# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{name=\"chat\"} 2\n",
            exporters::kLlmdRouter);
  EXPECT_EQ(llmd.gauges.at("router-backends"), 2);

  const PodMetrics smg = Parse(
      "# TYPE smg_worker_pool_size gauge\n"
      "smg_worker_pool_size{worker_type=\"prefill\"} 2\n"
      "smg_worker_pool_size{worker_type=\"decode\"} 3\n",
      exporters::kSglangGateway);
  EXPECT_EQ(smg.gauges.at("router-backends"), 5);

  PodMetrics broken;
  std::string error;
  EXPECT_FALSE(Ok(ParsePodMetrics("broken{", &exporters::kVllm, &broken), &error));
  EXPECT_TRUE(error.starts_with("parse Prometheus metrics: ")) << error;
}

// §4.1 case 3.
TEST(SnapshotUpstream, ParseModelDeploymentMetricsWindows) {
  const PodMetrics vllm = Parse(MetricsVLLMResponse(5, 10, 4), exporters::kVllm);
  ASSERT_TRUE(vllm.windows.contains("ttft"));
  EXPECT_EQ(vllm.windows.at("ttft").sum, 4);
  EXPECT_EQ(vllm.windows.at("ttft").count, 4);
  EXPECT_EQ(vllm.windows.at("tpot").sum, 8);
  EXPECT_EQ(vllm.windows.at("itl").sum, 12);

  const PodMetrics sglang = Parse(MetricsSGLangFixture(), exporters::kSglang);
  ASSERT_TRUE(sglang.windows.contains("transfer-latency"));
  EXPECT_EQ(sglang.windows.at("transfer-latency").sum, 25);
  EXPECT_EQ(sglang.windows.at("transfer-latency").count, 5);
  ASSERT_TRUE(sglang.windows.contains("transfer-failures"));
  EXPECT_EQ(sglang.windows.at("transfer-failures").count, 1);
  EXPECT_EQ(sglang.gauges.at("decode-transfer-waiting"), 2);

  const PodMetrics router = Parse(
      "# TYPE vllm_router_requests_total counter\n"
      "vllm_router_requests_total{route=\"/v1/chat/completions\"} 4\n",
      exporters::kVllmRouter);
  ASSERT_TRUE(router.windows.contains("successful-requests"));
  EXPECT_EQ(router.windows.at("successful-requests").count, 4);
}

// §4.1 case 4.
TEST(SnapshotUpstream, SGLangGatewayUnavailableWorker) {
  const PodMetrics gateway =
      Parse(Fixture("sglang_gateway_no_workers.prom"), exporters::kSglangGateway);
  ASSERT_TRUE(gateway.windows.contains("requests"));
  EXPECT_EQ(gateway.windows.at("requests").count, 1);
  ASSERT_TRUE(gateway.windows.contains("http-5xx-responses"));
  EXPECT_EQ(gateway.windows.at("http-5xx-responses").count, 1);
  EXPECT_FALSE(gateway.windows.contains("errors"));

  const PodMetrics ok_only = Parse(
      "# TYPE smg_http_responses_total counter\n"
      "smg_http_responses_total{status_code=\"200\",error_code=\"\"} 7\n",
      exporters::kSglangGateway);
  ASSERT_TRUE(ok_only.windows.contains("http-5xx-responses"));
  EXPECT_EQ(ok_only.windows.at("http-5xx-responses").count, 0);
  EXPECT_EQ(ok_only.windows.at("http-5xx-responses").sum, 0);

  const PodMetrics type_only =
      Parse("# TYPE smg_http_responses_total counter\n", exporters::kSglangGateway);
  EXPECT_FALSE(type_only.windows.contains("http-5xx-responses"));
}

// §4.1 case 5.
TEST(SnapshotUpstream, VLLMRouterBackendFailure) {
  const PodMetrics router =
      Parse(Fixture("vllm_router_backend_failure.prom"), exporters::kVllmRouter);
  EXPECT_EQ(router.windows.at("successful-requests").count, 1);
  EXPECT_EQ(router.windows.at("retries-exhausted").count, 1);
  EXPECT_FALSE(router.windows.contains("errors"));
  EXPECT_EQ(router.gauges.at("router-reported-workers"), 1);
}

// §4.1 case 24, parse half.
TEST(SnapshotUpstream, VLLMRouterPDReadsItsOwnSeriesParse) {
  const PodMetrics router = Parse(Fixture("vllm_router_pd_serving.prom"), exporters::kVllmRouterPd);
  ASSERT_TRUE(router.windows.contains("pd-requests"));
  EXPECT_EQ(router.windows.at("pd-requests").count, 1);
  EXPECT_FALSE(router.windows.contains("pd-errors"));
  EXPECT_FALSE(router.windows.contains("successful-requests"));
  EXPECT_TRUE(router.gauges.empty());
}

// §4.2: every fixture parses; the values the golden numbers are computed from.
TEST(MetricsParse, FixturesParse) {
  const PodMetrics first = Parse(Fixture("vllm_server_busy_first.prom"), exporters::kVllm);
  EXPECT_EQ(first.gauges.at("running"), 1);
  EXPECT_EQ(first.cache.at("local-prefix").hits, 12880);
  EXPECT_EQ(first.cache.at("local-prefix").queries, 18228);
  EXPECT_EQ(first.cache.at("external-store").queries, 0);
  EXPECT_EQ(first.windows.at("ttft").count, 116);
  EXPECT_EQ(first.windows.at("ttft").sum, 2.8345773220062256);

  const PodMetrics sglang = Parse(Fixture("sglang_server_busy_first.prom"), exporters::kSglang);
  // TTFT sums both is_streaming series.
  EXPECT_EQ(sglang.windows.at("ttft").count, 117);
  EXPECT_EQ(sglang.windows.at("ttft").sum, 27.006403835998753 + 1.3266321940018315);
  EXPECT_EQ(sglang.cache.at("device-prefix").hits, 14153);
  EXPECT_EQ(sglang.cache.at("device-prefix").queries, 4180 + 14153);

  const PodMetrics idle = Parse(Fixture("sglang_server_idle_first.prom"), exporters::kSglang);
  EXPECT_FALSE(idle.windows.contains("itl"));
  EXPECT_EQ(idle.cache.at("device-prefix").queries, 110);

  for (const char* name : {"vllm_server_busy_second.prom", "vllm_server_idle_first.prom",
                           "vllm_server_idle_second.prom"}) {
    Parse(Fixture(name), exporters::kVllm);
  }
  Parse(Fixture("sglang_server_busy_second.prom"), exporters::kSglang);
  Parse(Fixture("sglang_server_idle_second.prom"), exporters::kSglang);
  const PodMetrics router = Parse(Fixture("vllm_router_server_first.prom"), exporters::kVllmRouter);
  EXPECT_EQ(router.windows.at("successful-requests").count, 108);
  EXPECT_EQ(router.gauges.at("router-running"), 1);
  EXPECT_EQ(router.gauges.at("router-reported-workers"), 2);
}

// §3: untyped families are absent; histograms must be TYPE histogram; `name` and `name_total`
// both resolve; NaN, infinite and negative samples are skipped.
TEST(MetricsParse, TypeRulesAndValueFilters) {
  const PodMetrics untyped = Parse(
      "vllm:num_requests_running 2\n"
      "vllm:time_to_first_token_seconds_sum 1\n"
      "vllm:time_to_first_token_seconds_count 1\n"
      "# TYPE vllm:request_time_per_output_token_seconds summary\n"
      "vllm:request_time_per_output_token_seconds_sum 1\n"
      "vllm:request_time_per_output_token_seconds_count 1\n",
      exporters::kVllm);
  EXPECT_FALSE(untyped.gauges.contains("running"));
  EXPECT_FALSE(untyped.windows.contains("ttft"));
  EXPECT_FALSE(untyped.windows.contains("tpot"));

  // Both cache counters without `_total`, as counters: resolved by the bare name.
  const PodMetrics bare = Parse(
      "# TYPE vllm:prefix_cache_hits counter\n"
      "vllm:prefix_cache_hits 3\n"
      "# TYPE vllm:prefix_cache_queries gauge\n"
      "vllm:prefix_cache_queries 4\n",
      exporters::kVllm);
  ASSERT_TRUE(bare.cache.contains("local-prefix"));
  EXPECT_EQ(bare.cache.at("local-prefix").hits, 3);
  EXPECT_EQ(bare.cache.at("local-prefix").queries, 4);

  // One counter without its pair: no pair.
  const PodMetrics half =
      Parse("# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total 3\n",
            exporters::kVllm);
  EXPECT_FALSE(half.cache.contains("local-prefix"));

  const PodMetrics filtered = Parse(
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{a=\"1\"} NaN\n"
      "vllm:num_requests_running{a=\"2\"} -1\n"
      "vllm:num_requests_running{a=\"3\"} +Inf\n"
      "vllm:num_requests_running{a=\"4\"} 5\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{a=\"1\"} NaN\n"
      "vllm:num_requests_waiting{a=\"2\"} -3\n",
      exporters::kVllm);
  EXPECT_EQ(filtered.gauges.at("running"), 5);
  EXPECT_FALSE(filtered.gauges.contains("waiting"));  // no valid sample: absent, not 0
}

// §3: the SGLang pairs need all four modes; the SGLang-only keys are read whatever the role.
TEST(MetricsParse, SGLangNeedsAllFourModes) {
  const PodMetrics three = Parse(
      "# TYPE sglang:prefill_effective_tokens_total counter\n"
      "sglang:prefill_effective_tokens_total{mode=\"input\"} 20\n"
      "sglang:prefill_effective_tokens_total{mode=\"device_hit\"} 5\n"
      "sglang:prefill_effective_tokens_total{mode=\"host_hit\"} 3\n",
      exporters::kSglang);
  EXPECT_TRUE(three.cache.empty());
}

// §3: the gateway's 5xx counter reads the first `status_code` label, 100..599, and only >= 500.
TEST(MetricsParse, GatewayHttp5xxStatusRules) {
  const PodMetrics mixed = Parse(
      "# TYPE smg_http_responses_total counter\n"
      "smg_http_responses_total{status_code=\"500\"} 2\n"
      "smg_http_responses_total{status_code=\"503\"} 3\n"
      "smg_http_responses_total{status_code=\"499\"} 100\n"
      "smg_http_responses_total{status_code=\"600\"} 50\n"
      "smg_http_responses_total{status_code=\"abc\"} 50\n",
      exporters::kSglangGateway);
  EXPECT_EQ(mixed.windows.at("http-5xx-responses").count, 5);

  const PodMetrics invalid_only = Parse(
      "# TYPE smg_http_responses_total counter\n"
      "smg_http_responses_total{status_code=\"600\"} 50\n"
      "smg_http_responses_total{status_code=\"5xx\"} 50\n"
      "smg_http_responses_total{other=\"500\"} 50\n",
      exporters::kSglangGateway);
  EXPECT_FALSE(invalid_only.windows.contains("http-5xx-responses"));

  // Not a counter: absent.
  const PodMetrics gauge = Parse(
      "# TYPE smg_http_responses_total gauge\nsmg_http_responses_total{status_code=\"500\"} 1\n",
      exporters::kSglangGateway);
  EXPECT_FALSE(gauge.windows.contains("http-5xx-responses"));
}

// §3: a syntax error anywhere in the body fails the read, even in a family nobody reads.
TEST(MetricsParse, SyntaxErrorAnywhereFails) {
  PodMetrics read;
  std::string error;
  EXPECT_FALSE(Ok(ParsePodMetrics(MetricsVLLMFixture(1, 2) + "unrelated_metric{a=\"1\" 3\n",
                                  &exporters::kVllm, &read),
                  &error));
  EXPECT_TRUE(error.starts_with("parse Prometheus metrics: ")) << error;
  EXPECT_TRUE(read.gauges.empty());
}

TEST(MetricsParse, ExporterNames) {
  auto engine = [](std::string_view name) { return SelectExporter(PodRole::kEngine, name, false); };
  auto router = [](std::string_view name, bool pd = false) {
    return SelectExporter(PodRole::kRouter, name, pd);
  };
  EXPECT_EQ(engine("vllm"), &exporters::kVllm);
  EXPECT_EQ(engine("vLLM"), &exporters::kVllm);
  EXPECT_EQ(engine("sglang"), &exporters::kSglang);
  EXPECT_EQ(engine("SGLang"), &exporters::kSglang);
  // Upstream reads every other name as SGLang; an engine nobody checked is reported instead.
  EXPECT_EQ(engine("anything-else"), nullptr);
  EXPECT_EQ(router("llm-d-router"), &exporters::kLlmdRouter);
  EXPECT_EQ(router("vllm-router"), &exporters::kVllmRouter);
  EXPECT_EQ(router("vllm-router", true), &exporters::kVllmRouterPd);
  EXPECT_EQ(router("sglang-gateway"), &exporters::kSglangGateway);
  EXPECT_EQ(router("VLLM-Router"), nullptr);  // lowercase everywhere
  EXPECT_EQ(ExporterNames(PodRole::kEngine), "vllm, sglang, vllm-omni");
  EXPECT_EQ(ExporterNames(PodRole::kRouter), "llm-d-router, vllm-router, sglang-gateway");
}

}  // namespace
}  // namespace modelmetrics::deployment
