// Merging Pod reads into a snapshot (reference §2.3-§2.5, steps 11-12 of §2.2): the merge-level
// upstream cases of §4.1 with their inputs and expected values, the golden values of §4.2, SGLang
// tier and KV-connector detection, the baseline store, sorting and `partial`.
#include "aggregation/merge.h"

#include "aggregation/exporter_registry.h"

#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using testing::CopySeries;
using testing::DropLines;
using testing::FindCacheHit;
using testing::FindGauge;
using testing::FindWindow;
using testing::Fixture;
using testing::GpuStackMissing;
using testing::M;
using testing::MergeMetricsWindow;
using testing::MergeOnce;
using testing::MergeReads;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;
using testing::MetricsPDModelDeployment;
using testing::MetricsRouterPod;
using testing::MetricsServerPod;
using testing::MetricsSGLangFixture;
using testing::MetricsVLLMResponse;
using testing::MetricsVLLMResponseITL;
using testing::Parse;
using testing::SetSample;
using testing::SGLangPDResponse;
using testing::T0;
using testing::WindowKeys;

using Missings = std::vector<Missing>;

ModelDeployment WithRouter(ModelDeployment md, std::string router) {
  md.router = Router{.name = std::move(router), .replicas = 1};
  return md;
}

PodMetrics Windows(std::map<std::string, WindowValue, std::less<>> windows) {
  PodMetrics read;
  read.windows = std::move(windows);
  return read;
}

const std::string kKvConnectorArg = R"({"kv_connector":"MooncakeConnector","kv_role":"kv_both"})";

// ---------------------------------------------------------------------------------------------
// §4.1, the merge-level upstream cases.

// §4.1 case 2.
TEST(SnapshotUpstream, VLLMRouterWorkerCountDoesNotClaimReadiness) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "vllm-router");
  BaselineStore store;
  const Snapshot snapshot =
      MergeOnce(md, &store, T0(), MetricsRouterPod("chat-router", "router-uid", "vllm-router"),
                Parse(Fixture("vllm_router_backend_failure.prom"), exporters::kVllmRouter));
  ASSERT_EQ(snapshot.processing.size(), 1u);
  EXPECT_EQ(snapshot.processing[0].name, "router-reported-workers");
  EXPECT_EQ(snapshot.processing[0].unit, "workers");
  EXPECT_EQ(snapshot.processing[0].value, 1);
  EXPECT_EQ(snapshot.processing[0].scope, "router");
  EXPECT_EQ(snapshot.processing[0].source, "vllm_router_active_workers");
  EXPECT_TRUE(snapshot.queueing.empty());
}

// §4.1 case 6.
TEST(SnapshotUpstream, VLLMRouterDoesNotDivideSuccessesByErrors) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "vllm-router");
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "vllm-router");
  const Snapshot snapshot = MergeMetricsWindow(
      md, router,
      Windows({{"successful-requests", {0, 1}}, {"errors", {0, 1}}, {"retries-exhausted", {0, 1}}}),
      Windows({{"successful-requests", {0, 2}}, {"errors", {0, 2}}, {"retries-exhausted", {0, 2}}}),
      1s);
  ASSERT_EQ(snapshot.traffic.size(), 3u);
  for (const Window& w : snapshot.traffic) {
    EXPECT_EQ(w.value, 1) << w.name;
    EXPECT_NE(w.name, "error-ratio");
  }
  EXPECT_EQ(WindowKeys(snapshot.traffic),
            (std::vector<std::string>{"chat-router/errors", "chat-router/retries-exhausted",
                                      "chat-router/successful-requests"}));
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "retries-exhausted")->unit,
            "events/second");
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "errors")->unit, "errors/second");
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "successful-requests")->unit,
            "requests/second");
}

// §4.1 case 7.
TEST(SnapshotUpstream, SGLangGatewayHTTP5xxHasItsOwnRate) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "sglang-gateway");
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "sglang-gateway");
  const Snapshot snapshot = MergeMetricsWindow(
      md, router, Windows({{"requests", {0, 1}}, {"http-5xx-responses", {0, 1}}}),
      Windows({{"requests", {0, 3}}, {"http-5xx-responses", {0, 2}}}), 1s);
  const Window* http5xx = FindWindow(snapshot.traffic, "chat-router", "http-5xx-responses");
  ASSERT_NE(http5xx, nullptr);
  EXPECT_EQ(http5xx->source, "smg_http_responses_total");
  EXPECT_EQ(http5xx->unit, "responses/second");
  EXPECT_EQ(http5xx->value, 1);
  EXPECT_EQ(http5xx->samples, 1);
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "error-ratio"), nullptr);
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "requests")->value, 2);
}

// §4.1 case 8. Upstream checks Missing[0] of the unsorted merge (definition order); here the
// snapshot is sorted, so the whole list is checked instead.
TEST(SnapshotUpstream, SGLangHTTPGatewayDoesNotRequireGRPCLatency) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "sglang-gateway");
  PodMetrics read;
  read.gauges = {{"router-running", 1}, {"router-backends", 2}};
  BaselineStore store;
  const Snapshot snapshot = MergeOnce(
      md, &store, T0(), MetricsRouterPod("chat-router", "router-uid", "sglang-gateway"), read);
  EXPECT_EQ(snapshot.missing,
            (Missings{M("chat-router", "smg_http_responses_total", reason::kAbsent),
                      M("chat-router", "smg_router_request_errors_total", reason::kAbsent),
                      M("chat-router", "smg_router_requests_total", reason::kAbsent)}));
  for (const Missing& m : snapshot.missing) {
    EXPECT_EQ(m.source.find("smg_router_ttft_seconds"), std::string::npos);
    EXPECT_EQ(m.source.find("smg_router_tpot_seconds"), std::string::npos);
  }
  EXPECT_TRUE(snapshot.latency.empty());
}

// §4.1 case 19.
TEST(SnapshotUpstream, DoesNotDivideDifferentCounterWindows) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "sglang-gateway");
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "sglang-gateway");
  BaselineStore store;
  MergeOnce(md, &store, T0(), router, Windows({{"requests", {0, 1}}, {"errors", {0, 0}}}));
  MergeOnce(md, &store, T0() + 1s, router, Windows({{"requests", {0, 3}}}));
  const Snapshot snapshot =
      MergeOnce(md, &store, T0() + 2s, router, Windows({{"requests", {0, 5}}, {"errors", {0, 1}}}));
  bool found = false;
  for (const Missing& m : snapshot.missing) {
    if (m.source == "smg_router_requests_total+smg_router_request_errors_total") {
      EXPECT_EQ(m, M("chat-router", "smg_router_requests_total+smg_router_request_errors_total",
                     "request and error counters have different sampling windows"));
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "error-ratio"), nullptr);
  // Each counter still has its own rate over its own window.
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "requests")->value, 2);
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "errors")->value, 0.5);
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "errors")->window_seconds, 2);
}

// §4.1 case 21.
TEST(SnapshotUpstream, PDTransferUsesKind) {
  const ModelDeployment md = MetricsPDModelDeployment("sglang");
  BaselineStore store;
  const PodMetrics read = Parse(MetricsSGLangFixture(), exporters::kSglang);
  const Snapshot snapshot =
      MergeReads(md, &store, T0(),
                 {{MetricsEnginePod("generation-pod", "generation-uid", "generation"), read},
                  {MetricsEnginePod("prompt-pod", "prompt-uid", "prompt"), read}});
  ASSERT_EQ(snapshot.queueing.size(), 3u);  // waiting x2 (scopes differ), decode-transfer-waiting
  int decode_transfer = 0;
  for (const Gauge& g : snapshot.queueing) {
    if (g.name != "decode-transfer-waiting") continue;
    ++decode_transfer;
    EXPECT_EQ(g.scope, "engine/generation");
    EXPECT_EQ(g.value, 2);
    EXPECT_EQ(g.source, "sglang:num_decode_transfer_queue_reqs");
  }
  EXPECT_EQ(decode_transfer, 1);
  Missings latency_missing;
  for (const Missing& m : snapshot.missing) {
    if (m.source == "sglang:kv_transfer_latency_ms") latency_missing.push_back(m);
  }
  EXPECT_EQ(latency_missing,
            (Missings{M("prompt-pod", "sglang:kv_transfer_latency_ms", reason::kAwaiting)}));
}

// §4.1 case 22.
TEST(SnapshotUpstream, PDPrefillDoesNotExpectInterTokenLatency) {
  const ModelDeployment md = MetricsPDModelDeployment("vllm");
  const Pod prompt = MetricsEnginePod("prompt-pod", "prompt-uid", "prompt");
  const Pod generation = MetricsEnginePod("generation-pod", "generation-uid", "generation");
  BaselineStore store;
  auto read = [&](WallTime at, std::string prompt_body, std::string generation_body) {
    return MergeReads(md, &store, at,
                      {{generation, Parse(generation_body, exporters::kVllm)},
                       {prompt, Parse(prompt_body, exporters::kVllm)}});
  };
  read(T0(), MetricsVLLMResponseITL(5, 10, 2, 0, 0), MetricsVLLMResponse(5, 10, 2));
  const Snapshot second =
      read(T0() + 30s, MetricsVLLMResponseITL(10, 20, 4, 0, 0), MetricsVLLMResponse(10, 20, 4));
  EXPECT_TRUE(GpuStackMissing(second).empty());
  EXPECT_FALSE(second.partial);
  std::vector<const Window*> itl;
  for (const Window& w : second.latency) {
    if (w.name == "itl") itl.push_back(&w);
  }
  ASSERT_EQ(itl.size(), 1u);
  EXPECT_EQ(itl[0]->pod, "generation-pod");
  EXPECT_EQ(itl[0]->samples, 2);

  // The decode ITL stays at 12/4 while TTFT moves: not idle, so the partial reason.
  const Snapshot third = read(T0() + 60s, MetricsVLLMResponseITL(15, 30, 6, 0, 0),
                              MetricsVLLMResponseITL(15, 30, 6, 12, 4));
  EXPECT_TRUE(third.partial);
  EXPECT_EQ(GpuStackMissing(third),
            (Missings{M("generation-pod", "vllm:inter_token_latency_seconds",
                        "no observations in the sampling window")}));
}

// §4.1 case 23.
TEST(SnapshotUpstream, UnexportedErrorCounterIsNotPartial) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "llm-d-router");
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "llm-d-router");
  auto read = [](double step, bool with_requests) {
    PodMetrics r;
    r.gauges = {{"router-running", 1}, {"router-backends", 2}};
    r.windows = {{"ttft", {step, step}}, {"tpot", {step / 2, step}}};
    if (with_requests) r.windows["requests"] = {0, step};
    return r;
  };
  const Snapshot unexported = MergeMetricsWindow(md, router, read(2, true), read(5, true));
  EXPECT_EQ(unexported.missing, (Missings{M("chat-router", "llm_d_epp_request_error_total",
                                            reason::kLabeledCounterUnexported)}));
  EXPECT_FALSE(unexported.partial);

  const Snapshot absent = MergeMetricsWindow(md, router, read(2, false), read(5, false));
  // The reference's "metric is absent", naming the older names looked for too (issue 36).
  EXPECT_EQ(absent.missing,
            (Missings{M("chat-router", "llm_d_epp_request_error_total",
                        "metric is absent: looked for llm_d_epp_request_error_total, then "
                        "inference_objective_request_error_total (llm-d router before June "
                        "2026), then inference_model_request_error_total (inference extension "
                        "before September 2025)"),
                      M("chat-router", "llm_d_epp_request_total",
                        "metric is absent: looked for llm_d_epp_request_total, then "
                        "inference_objective_request_total (llm-d router before June 2026), then "
                        "inference_model_request_total (inference extension before September "
                        "2025)")}));
  EXPECT_TRUE(absent.partial);
}

// §4.1 case 24, merge half.
TEST(SnapshotUpstream, VLLMRouterPDReadsItsOwnSeries) {
  const Pod router = MetricsRouterPod("router", "router-uid", "vllm-router");
  const std::string first = Fixture("vllm_router_pd_serving.prom");
  const std::string second = SetSample(first, "vllm_router_pd_requests_total", "5");
  const PodMetrics first_read = Parse(first, exporters::kVllmRouterPd);
  const PodMetrics second_read = Parse(second, exporters::kVllmRouterPd);

  const ModelDeployment pd = WithRouter(MetricsPDModelDeployment("vllm"), "vllm-router");
  const Snapshot snapshot = MergeMetricsWindow(pd, router, first_read, second_read, 2s);
  EXPECT_TRUE(snapshot.processing.empty());
  ASSERT_EQ(snapshot.traffic.size(), 1u);
  EXPECT_EQ(snapshot.traffic[0].name, "pd-requests");
  EXPECT_EQ(snapshot.traffic[0].source, "vllm_router_pd_requests_total");
  EXPECT_EQ(snapshot.traffic[0].value, 2);
  EXPECT_EQ(snapshot.traffic[0].samples, 4);
  EXPECT_EQ(snapshot.traffic[0].unit, "requests/second");
  EXPECT_EQ(snapshot.traffic[0].window_seconds, 2);
  EXPECT_EQ(
      snapshot.missing,
      (Missings{M("router", "vllm_router_active_workers", reason::kVllmRouterPdNoProcessing),
                M("router", "vllm_router_pd_errors_total", reason::kLabeledCounterUnexported),
                M("router", "vllm_router_running_requests", reason::kVllmRouterPdNoProcessing)}));
  EXPECT_FALSE(snapshot.partial);
  EXPECT_EQ(snapshot.missing[0].reason,
            "unsupported source: the vLLM router exports no router processing gauge for a "
            "prefill/decode deployment");

  const ModelDeployment single = WithRouter(MetricsModelDeployment(), "vllm-router");
  const Snapshot server = MergeMetricsWindow(single, router, first_read, second_read, 2s);
  bool found = false;
  for (const Missing& m : server.missing) {
    found |= m == M("router", "vllm_router_running_requests", "metric is absent");
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(server.partial);
}

// §4.1 case 25, as the reference (fa9b16c1) has it: the prompt Pod renders no tier argument, so
// host-prefix and storage-prefix are unsupported and only device-prefix is a cache hit.
TEST(SnapshotUpstream, SGLangPDReadsEachSeriesFromItsHalf) {
  const ModelDeployment md = MetricsPDModelDeployment("sglang");
  for (const bool tier_args : {false, true}) {
    SCOPED_TRACE(tier_args ? "with tier args (efb08122's expectations)" : "no tier args");
    Pod prompt = MetricsEnginePod("prompt-pod", "prompt-uid", "prompt");
    if (tier_args) {
      prompt.containers[0].args = {"--enable-hierarchical-cache", "--hicache-storage-backend",
                                   "file"};
    }
    const Pod generation = MetricsEnginePod("generation-pod", "generation-uid", "generation");
    BaselineStore store;
    auto read = [&](WallTime at, int step) {
      const PodMetrics body = Parse(SGLangPDResponse(step), exporters::kSglang);
      return MergeReads(md, &store, at, {{generation, body}, {prompt, body}});
    };
    read(T0(), 1);
    const Snapshot snapshot = read(T0() + 30s, 3);

    EXPECT_EQ(WindowKeys(snapshot.transfer),
              (std::vector<std::string>{"prompt-pod/transfer-latency", "prompt-pod/transfer-size",
                                        "prompt-pod/transfer-speed"}));
    EXPECT_EQ(FindWindow(snapshot.transfer, "prompt-pod", "transfer-latency")->value, 10);
    EXPECT_EQ(FindWindow(snapshot.transfer, "prompt-pod", "transfer-latency")->unit,
              "milliseconds");
    EXPECT_EQ(FindWindow(snapshot.transfer, "prompt-pod", "transfer-speed")->value, 4);
    EXPECT_EQ(FindWindow(snapshot.transfer, "prompt-pod", "transfer-speed")->unit, "GB/second");
    EXPECT_EQ(FindWindow(snapshot.transfer, "prompt-pod", "transfer-size")->value, 20);
    EXPECT_EQ(FindWindow(snapshot.transfer, "prompt-pod", "transfer-size")->unit, "MB");
    EXPECT_EQ(FindWindow(snapshot.transfer, "prompt-pod", "transfer-size")->samples, 6);

    EXPECT_EQ(WindowKeys(snapshot.latency),
              (std::vector<std::string>{"generation-pod/itl", "generation-pod/ttft"}));
    EXPECT_EQ(FindWindow(snapshot.latency, "generation-pod", "ttft")->value, 0.5);
    EXPECT_EQ(FindWindow(snapshot.latency, "generation-pod", "itl")->value, 0.05);

    const CacheHit* device = FindCacheHit(snapshot.cache_hits, "prompt-pod", "device-prefix");
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(device->hits, 12);
    EXPECT_EQ(device->queries, 40);
    EXPECT_EQ(device->rate, 0.3);
    EXPECT_EQ(device->source, "sglang:prefill_effective_tokens_total");
    for (const CacheHit& hit : snapshot.cache_hits) EXPECT_EQ(hit.pod, "prompt-pod");

    const Missing failures =
        M("prompt-pod", "sglang:num_transfer_failed_reqs_total", reason::kLabeledCounterUnexported);
    if (tier_args) {
      ASSERT_EQ(snapshot.cache_hits.size(), 3u);
      EXPECT_EQ(FindCacheHit(snapshot.cache_hits, "prompt-pod", "host-prefix")->hits, 6);
      EXPECT_EQ(FindCacheHit(snapshot.cache_hits, "prompt-pod", "host-prefix")->rate, 0.15);
      EXPECT_EQ(FindCacheHit(snapshot.cache_hits, "prompt-pod", "storage-prefix")->hits, 2);
      EXPECT_EQ(FindCacheHit(snapshot.cache_hits, "prompt-pod", "storage-prefix")->queries, 40);
      EXPECT_EQ(GpuStackMissing(snapshot), (Missings{failures}));
    } else {
      ASSERT_EQ(snapshot.cache_hits.size(), 1u);
      EXPECT_EQ(GpuStackMissing(snapshot),
                (Missings{M("prompt-pod", "host-prefix", reason::kSglangNoHostTier), failures,
                          M("prompt-pod", "storage-prefix", reason::kSglangNoStorageTier)}));
    }
    EXPECT_FALSE(snapshot.partial);
    // Only the decode half reports its transfer queue.
    ASSERT_NE(FindGauge(snapshot.queueing, "decode-transfer-waiting", "engine/generation"),
              nullptr);
    EXPECT_EQ(FindGauge(snapshot.queueing, "decode-transfer-waiting", "engine/prompt"), nullptr);
  }
}

// §4.1 case 26.
TEST(SnapshotUpstream, SGLangTransferFailuresNeedTheirPair) {
  const ModelDeployment md = MetricsPDModelDeployment("sglang");
  const Pod prompt = MetricsEnginePod("prompt-pod", "prompt-uid", "prompt");
  const Snapshot paired =
      MergeMetricsWindow(md, prompt, Parse(SGLangPDResponse(1), exporters::kSglang),
                         Parse(SGLangPDResponse(2), exporters::kSglang));
  int failures = 0;
  for (const Missing& m : paired.missing) {
    if (m.source != "sglang:num_transfer_failed_reqs_total") continue;
    ++failures;
    EXPECT_EQ(m.reason,
              "labeled failure or error counter is not exported before its first increment; its "
              "paired counter was read in the same scrape");
  }
  EXPECT_EQ(failures, 1);
  EXPECT_FALSE(paired.partial);

  const Snapshot unpaired = MergeMetricsWindow(
      md, prompt,
      Parse(DropLines(SGLangPDResponse(1), "sglang:kv_transfer_total_mb"), exporters::kSglang),
      Parse(DropLines(SGLangPDResponse(2), "sglang:kv_transfer_total_mb"), exporters::kSglang));
  failures = 0;
  for (const Missing& m : unpaired.missing) {
    if (m.source != "sglang:num_transfer_failed_reqs_total") continue;
    ++failures;
    EXPECT_EQ(m.reason, reason::kAbsent);
  }
  EXPECT_EQ(failures, 1);
  EXPECT_TRUE(unpaired.partial);
}

// The external counters of the busy fixtures moved from 2/8 to 6/16.
std::pair<std::string, std::string> BusyWithExternalMoving() {
  std::string first = Fixture("vllm_server_busy_first.prom");
  std::string second = Fixture("vllm_server_busy_second.prom");
  first = SetSample(first, "vllm:external_prefix_cache_hits_total", "2");
  first = SetSample(first, "vllm:external_prefix_cache_queries_total", "8");
  second = SetSample(second, "vllm:external_prefix_cache_hits_total", "6");
  second = SetSample(second, "vllm:external_prefix_cache_queries_total", "16");
  return {first, second};
}

// §4.1 case 27.
TEST(SnapshotUpstream, VLLMExternalStoreNeedsAKVConnector) {
  ModelDeployment md = MetricsModelDeployment();
  md.kv_cache = true;
  const PodMetrics first = Parse(Fixture("vllm_server_busy_first.prom"), exporters::kVllm);
  const PodMetrics second = Parse(Fixture("vllm_server_busy_second.prom"), exporters::kVllm);

  const Snapshot plain =
      MergeMetricsWindow(md, MetricsServerPod("server", {"vllm", "serve"}), first, second);
  EXPECT_EQ(GpuStackMissing(plain),
            (Missings{M("server", "external-store", reason::kVllmNoKvConnector)}));
  EXPECT_EQ(GpuStackMissing(plain)[0].reason,
            "unsupported source: the Pod renders no KV connector, so vLLM queries no external "
            "prefix cache");
  EXPECT_FALSE(plain.partial);
  ASSERT_EQ(plain.cache_hits.size(), 1u);
  EXPECT_EQ(plain.cache_hits[0].scope, "local-prefix");
  EXPECT_EQ(plain.cache_hits[0].queries, 37842);

  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"vllm", "serve", "--kv-transfer-config", kKvConnectorArg},
        std::vector<std::string>{"vllm", "serve", "--kv-transfer-config=" + kKvConnectorArg}}) {
    SCOPED_TRACE(command.back());
    const Snapshot connector =
        MergeMetricsWindow(md, MetricsServerPod("server", command), first, second);
    EXPECT_EQ(GpuStackMissing(connector),
              (Missings{M("server", "external-store", "no queries in the sampling window")}));
    EXPECT_TRUE(connector.partial);
    ASSERT_EQ(connector.cache_hits.size(), 1u);
    EXPECT_EQ(connector.cache_hits[0].scope, "local-prefix");
    EXPECT_EQ(connector.cache_hits[0].queries, 37842);
  }

  const auto [moving_first, moving_second] = BusyWithExternalMoving();
  const Snapshot moving = MergeMetricsWindow(md, MetricsServerPod("server", {"vllm", "serve"}),
                                             Parse(moving_first, exporters::kVllm),
                                             Parse(moving_second, exporters::kVllm));
  EXPECT_TRUE(GpuStackMissing(moving).empty());
  EXPECT_FALSE(moving.partial);
  ASSERT_EQ(moving.cache_hits.size(), 2u);
  const CacheHit* external = FindCacheHit(moving.cache_hits, "server", "external-store");
  ASSERT_NE(external, nullptr);
  EXPECT_EQ(external->hits, 4);
  EXPECT_EQ(external->queries, 8);
  EXPECT_EQ(external->rate, 0.5);
  EXPECT_EQ(external->source, "vllm:external_prefix_cache");
  EXPECT_EQ(FindCacheHit(moving.cache_hits, "server", "local-prefix")->source, "vllm:prefix_cache");
}

// §4.1 case 28.
TEST(SnapshotUpstream, VLLMExternalStoreIsReadOnlyFromAStore) {
  const auto [first_body, second_body] = BusyWithExternalMoving();
  const PodMetrics first = Parse(first_body, exporters::kVllm);
  const PodMetrics second = Parse(second_body, exporters::kVllm);
  struct Case {
    const char* kind;  // prefill, decode or server
    bool pool;
    bool read;
  };
  for (const Case c :
       {Case{"decode", true, false}, Case{"decode", false, false}, Case{"prefill", false, false},
        Case{"server", false, false}, Case{"prefill", true, true}, Case{"server", true, true}}) {
    SCOPED_TRACE(std::string(c.kind) + (c.pool ? " with pool" : " without pool"));
    const std::string kind = c.kind;
    ModelDeployment md =
        kind == "server" ? MetricsModelDeployment() : MetricsPDModelDeployment("vllm");
    md.kv_cache = c.pool;
    const std::string role =
        kind == "server" ? "server" : (kind == "prefill" ? "prompt" : "generation");
    const Pod pod = MetricsServerPod(
        "pod",
        {"vllm", "serve", "--kv-transfer-config",
         R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[]}})"},
        role);
    const Snapshot snapshot = MergeMetricsWindow(md, pod, first, second);
    EXPECT_FALSE(snapshot.partial);
    if (c.read) {
      EXPECT_TRUE(GpuStackMissing(snapshot).empty());
      ASSERT_EQ(snapshot.cache_hits.size(), 2u);
      EXPECT_EQ(FindCacheHit(snapshot.cache_hits, "pod", "local-prefix")->queries, 37842);
      EXPECT_EQ(FindCacheHit(snapshot.cache_hits, "pod", "external-store")->queries, 8);
    } else {
      EXPECT_EQ(GpuStackMissing(snapshot),
                (Missings{M("pod", "external-store", reason::kVllmExternalNotStore)}));
      ASSERT_EQ(snapshot.cache_hits.size(), 1u);
      EXPECT_EQ(snapshot.cache_hits[0].scope, "local-prefix");
    }
  }
}

// §4.1 case 29.
TEST(SnapshotUpstream, VLLMPDPrefillDoesNotExpectTPOT) {
  const PodMetrics first = Parse(Fixture("vllm_server_busy_first.prom"), exporters::kVllm);
  const PodMetrics second = Parse(Fixture("vllm_server_busy_second.prom"), exporters::kVllm);
  const std::string tpot = "vllm:request_time_per_output_token_seconds";

  const Snapshot prefill = MergeMetricsWindow(MetricsPDModelDeployment("vllm"),
                                              MetricsServerPod("pod", {}, "prompt"), first, second);
  EXPECT_EQ(FindWindow(prefill.latency, "pod", "tpot"), nullptr);
  EXPECT_EQ(FindWindow(prefill.latency, "pod", "itl"), nullptr);
  ASSERT_NE(FindWindow(prefill.latency, "pod", "ttft"), nullptr);  // vLLM prefill keeps TTFT
  for (const Missing& m : prefill.missing) EXPECT_NE(m.source, tpot);

  for (const auto& [md, role] :
       {std::pair{MetricsPDModelDeployment("vllm"), std::string("generation")},
        std::pair{MetricsModelDeployment(), std::string("server")}}) {
    SCOPED_TRACE(role);
    const Snapshot snapshot =
        MergeMetricsWindow(md, MetricsServerPod("pod", {}, role), first, second);
    const Window* window = FindWindow(snapshot.latency, "pod", "tpot");
    ASSERT_NE(window, nullptr);
    EXPECT_EQ(window->source, tpot);
    EXPECT_EQ(window->scope, "engine/" + role);
  }
}

// §4.1 case 30.
TEST(SnapshotUpstream, VLLMRouterUnexportedRetriesExhaustedIsNotPartial) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "vllm-router");
  const Pod router = MetricsRouterPod("chat-router-pod", "router-uid", "vllm-router");
  const std::string first = Fixture("vllm_router_server_first.prom");
  const std::string second = Fixture("vllm_router_server_second.prom");
  const Snapshot snapshot = MergeMetricsWindow(md, router, Parse(first, exporters::kVllmRouter),
                                               Parse(second, exporters::kVllmRouter));
  EXPECT_EQ(snapshot.missing, (Missings{M("chat-router-pod", "vllm_router_request_errors_total",
                                          reason::kLabeledCounterUnexported),
                                        M("chat-router-pod", "vllm_router_retries_exhausted_total",
                                          reason::kLabeledCounterUnexported)}));
  EXPECT_FALSE(snapshot.partial);
  // §4.2 golden: vllm-router over 30 s.
  ASSERT_EQ(snapshot.traffic.size(), 1u);
  const Window& requests = snapshot.traffic[0];
  EXPECT_EQ(requests.name, "successful-requests");
  EXPECT_EQ(requests.samples, 246);
  EXPECT_EQ(requests.value, 246.0 / 30.0);
  EXPECT_DOUBLE_EQ(requests.value, 8.2);
  EXPECT_EQ(requests.window_seconds, 30);
  EXPECT_EQ(FindGauge(snapshot.processing, "router-running", "router")->value, 0);
  EXPECT_EQ(FindGauge(snapshot.processing, "router-reported-workers", "router")->value, 2);

  const Snapshot dropped = MergeMetricsWindow(
      md, router, Parse(DropLines(first, "vllm_router_requests_total"), exporters::kVllmRouter),
      Parse(DropLines(second, "vllm_router_requests_total"), exporters::kVllmRouter));
  bool found = false;
  for (const Missing& m : dropped.missing) {
    if (m.source == "vllm_router_retries_exhausted_total") {
      EXPECT_EQ(m.reason, "metric is absent");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(dropped.partial);
}

// §4.1 case 31.
TEST(SnapshotUpstream, IdleServerHasNoNewSample) {
  const Pod pod = MetricsServerPod("server", {"serve"});
  const ModelDeployment vllm = MetricsModelDeployment();
  ModelDeployment sglang = MetricsModelDeployment();
  sglang.engine = "sglang";
  auto vllm_window = [&](const std::string& first, const std::string& second) {
    return MergeMetricsWindow(vllm, pod, Parse(first, exporters::kVllm),
                              Parse(second, exporters::kVllm));
  };
  auto sglang_window = [&](const Pod& p, const std::string& first, const std::string& second) {
    return MergeMetricsWindow(sglang, p, Parse(first, exporters::kSglang),
                              Parse(second, exporters::kSglang));
  };
  const std::string vllm_idle_first = Fixture("vllm_server_idle_first.prom");
  const std::string vllm_idle_second = Fixture("vllm_server_idle_second.prom");
  const std::string vllm_busy_first = Fixture("vllm_server_busy_first.prom");
  const std::string vllm_busy_second = Fixture("vllm_server_busy_second.prom");
  const std::string sglang_idle_first = Fixture("sglang_server_idle_first.prom");
  const std::string sglang_idle_second = Fixture("sglang_server_idle_second.prom");
  const std::string sglang_busy_first = Fixture("sglang_server_busy_first.prom");
  const std::string sglang_busy_second = Fixture("sglang_server_busy_second.prom");
  const Missing no_connector = M("server", "external-store", reason::kVllmNoKvConnector);

  {
    SCOPED_TRACE("vLLM idle");
    const Snapshot s = vllm_window(vllm_idle_first, vllm_idle_second);
    EXPECT_EQ(
        GpuStackMissing(s),
        (Missings{no_connector, M("server", "local-prefix", reason::kIdleWindow),
                  M("server", "vllm:inter_token_latency_seconds", reason::kIdleWindow),
                  M("server", "vllm:request_time_per_output_token_seconds", reason::kIdleWindow),
                  M("server", "vllm:time_to_first_token_seconds", reason::kIdleWindow)}));
    EXPECT_EQ(s.missing[1].reason,
              "idle sampling window: the Pod's TTFT histogram recorded no new request, so this "
              "source has no new sample");
    EXPECT_FALSE(s.partial);
    EXPECT_TRUE(s.latency.empty());
    EXPECT_TRUE(s.cache_hits.empty());
  }
  {
    SCOPED_TRACE("SGLang idle, no tier args (fa9b16c1)");
    const Snapshot s = sglang_window(pod, sglang_idle_first, sglang_idle_second);
    EXPECT_EQ(GpuStackMissing(s),
              (Missings{M("server", "host-prefix", reason::kSglangNoHostTier),
                        M("server", "sglang:inter_token_latency_seconds",
                          reason::kLabeledHistogramUnexported),
                        M("server", "sglang:time_to_first_token_seconds", reason::kIdleWindow),
                        M("server", "storage-prefix", reason::kSglangNoStorageTier)}));
    EXPECT_FALSE(s.partial);
    ASSERT_EQ(s.cache_hits.size(), 1u);
    EXPECT_EQ(s.cache_hits[0].scope, "device-prefix");
    EXPECT_EQ(s.cache_hits[0].queries, 22);
    EXPECT_EQ(s.cache_hits[0].hits, 0);
    EXPECT_EQ(s.cache_hits[0].rate, 0);
  }
  {
    SCOPED_TRACE("SGLang idle with tier args (efb08122's expectations)");
    const Pod tiered = MetricsServerPod(
        "server", {"serve", "--enable-hierarchical-cache", "--hicache-storage-backend", "file"});
    const Snapshot s = sglang_window(tiered, sglang_idle_first, sglang_idle_second);
    EXPECT_EQ(GpuStackMissing(s),
              (Missings{M("server", "sglang:inter_token_latency_seconds",
                          reason::kLabeledHistogramUnexported),
                        M("server", "sglang:time_to_first_token_seconds", reason::kIdleWindow)}));
    EXPECT_FALSE(s.partial);
    ASSERT_EQ(s.cache_hits.size(), 3u);
    for (const CacheHit& hit : s.cache_hits) {
      EXPECT_EQ(hit.queries, 22) << hit.scope;
      EXPECT_EQ(hit.rate, 0) << hit.scope;
    }
  }
  {
    SCOPED_TRACE("vLLM busy with ITL frozen");
    const Snapshot s = vllm_window(vllm_busy_first, CopySeries(vllm_busy_second, vllm_busy_first,
                                                               "vllm:inter_token_latency_seconds"));
    EXPECT_EQ(GpuStackMissing(s),
              (Missings{no_connector,
                        M("server", "vllm:inter_token_latency_seconds", reason::kNoObservations)}));
    EXPECT_TRUE(s.partial);
  }
  {
    SCOPED_TRACE("vLLM busy with local-prefix frozen");
    const Snapshot s = vllm_window(
        vllm_busy_first, CopySeries(vllm_busy_second, vllm_busy_first, "vllm:prefix_cache_"));
    EXPECT_EQ(GpuStackMissing(s),
              (Missings{no_connector, M("server", "local-prefix", reason::kNoQueries)}));
    EXPECT_TRUE(s.partial);
  }
  {
    SCOPED_TRACE("vLLM idle with ttft removed");
    const Snapshot s = vllm_window(DropLines(vllm_idle_first, "vllm:time_to_first_token_seconds"),
                                   DropLines(vllm_idle_second, "vllm:time_to_first_token_seconds"));
    EXPECT_EQ(GpuStackMissing(s),
              (Missings{no_connector, M("server", "local-prefix", reason::kNoQueries),
                        M("server", "vllm:inter_token_latency_seconds", reason::kNoObservations),
                        M("server", "vllm:request_time_per_output_token_seconds",
                          reason::kNoObservations),
                        M("server", "vllm:time_to_first_token_seconds", "metric is absent")}));
    EXPECT_TRUE(s.partial);
  }
  {
    SCOPED_TRACE("SGLang busy with itl removed");
    const Snapshot s =
        sglang_window(pod, DropLines(sglang_busy_first, "sglang:inter_token_latency_seconds"),
                      DropLines(sglang_busy_second, "sglang:inter_token_latency_seconds"));
    EXPECT_EQ(GpuStackMissing(s),
              (Missings{M("server", "host-prefix", reason::kSglangNoHostTier),
                        M("server", "sglang:inter_token_latency_seconds", reason::kAbsent),
                        M("server", "storage-prefix", reason::kSglangNoStorageTier)}));
    EXPECT_TRUE(s.partial);
  }
}

// ---------------------------------------------------------------------------------------------
// §4.2 golden values.

TEST(SnapshotGolden, VLLMBusyFirstToSecond) {
  const Snapshot s =
      MergeMetricsWindow(MetricsModelDeployment(), MetricsServerPod("server", {"serve"}),
                         Parse(Fixture("vllm_server_busy_first.prom"), exporters::kVllm),
                         Parse(Fixture("vllm_server_busy_second.prom"), exporters::kVllm));
  const CacheHit* local = FindCacheHit(s.cache_hits, "server", "local-prefix");
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->hits, 26656);
  EXPECT_EQ(local->queries, 37842);
  EXPECT_EQ(local->rate, 0.7044025157232704);
  EXPECT_EQ(local->rate, 26656.0 / 37842.0);
  EXPECT_EQ(local->window_seconds, 30);
  EXPECT_EQ(local->unit, "tokens");
  EXPECT_EQ(local->pod_count, 1);
  EXPECT_EQ(local->observed_at, T0() + 30s);

  const Window* ttft = FindWindow(s.latency, "server", "ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->samples, 238);
  EXPECT_EQ(ttft->value, 0.01955626391563095);
  EXPECT_EQ(ttft->value, (7.488968133926392 - 2.8345773220062256) / 238);
  EXPECT_EQ(ttft->unit, "seconds");
  EXPECT_EQ(ttft->source, "vllm:time_to_first_token_seconds");
  EXPECT_EQ(ttft->scope, "engine/server");
  EXPECT_EQ(ttft->window_seconds, 30);
  const Window* tpot = FindWindow(s.latency, "server", "tpot");
  ASSERT_NE(tpot, nullptr);
  EXPECT_EQ(tpot->samples, 239);
  EXPECT_EQ(tpot->value, 0.005745277962966269);
  const Window* itl = FindWindow(s.latency, "server", "itl");
  ASSERT_NE(itl, nullptr);
  EXPECT_EQ(itl->samples, 11210);
  EXPECT_EQ(itl->value, 0.005745471810437156);

  EXPECT_EQ(FindGauge(s.processing, "running", "engine/server")->value, 0);
  EXPECT_EQ(FindGauge(s.queueing, "waiting", "engine/server")->value, 0);
  EXPECT_EQ(FindGauge(s.processing, "running", "engine/server")->observed_at, T0() + 30s);
}

TEST(SnapshotGolden, SGLangBusyFirstToSecond) {
  ModelDeployment md = MetricsModelDeployment();
  md.engine = "SGLang";  // either spelling
  for (const bool tiers : {false, true}) {
    SCOPED_TRACE(tiers ? "with tiers" : "without tiers");
    const Pod pod = MetricsServerPod(
        "server", tiers ? std::vector<std::string>{"serve", "--enable-hierarchical-cache",
                                                   "--hicache-storage-backend=file"}
                        : std::vector<std::string>{"serve"});
    const Snapshot s = MergeMetricsWindow(
        md, pod, Parse(Fixture("sglang_server_busy_first.prom"), exporters::kSglang),
        Parse(Fixture("sglang_server_busy_second.prom"), exporters::kSglang));
    const CacheHit* device = FindCacheHit(s.cache_hits, "server", "device-prefix");
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(device->hits, 35928);
    EXPECT_EQ(device->queries, 46111);
    EXPECT_EQ(device->rate, 0.7791633232851164);
    const Window* ttft = FindWindow(s.latency, "server", "ttft");
    ASSERT_NE(ttft, nullptr);
    EXPECT_EQ(ttft->samples, 290);
    EXPECT_EQ(ttft->value, 0.1542041360482848);
    const Window* itl = FindWindow(s.latency, "server", "itl");
    ASSERT_NE(itl, nullptr);
    EXPECT_EQ(itl->samples, 6835);
    EXPECT_EQ(itl->value, 0.005637375294507088);
    if (tiers) {
      for (const char* scope : {"host-prefix", "storage-prefix"}) {
        const CacheHit* hit = FindCacheHit(s.cache_hits, "server", scope);
        ASSERT_NE(hit, nullptr) << scope;
        EXPECT_EQ(hit->hits, 0);
        EXPECT_EQ(hit->queries, 46111);
        EXPECT_EQ(hit->rate, 0);
      }
      EXPECT_TRUE(GpuStackMissing(s).empty());
      EXPECT_FALSE(s.partial);
    } else {
      EXPECT_EQ(s.cache_hits.size(), 1u);
      EXPECT_EQ(GpuStackMissing(s),
                (Missings{M("server", "host-prefix", reason::kSglangNoHostTier),
                          M("server", "storage-prefix", reason::kSglangNoStorageTier)}));
      EXPECT_FALSE(s.partial);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SGLang tier detection and KV-connector detection (§2.3).

SglangTiers TiersOf(std::vector<std::string> args, std::vector<std::string> command = {}) {
  Pod pod = MetricsServerPod("server", std::move(command));
  pod.containers[0].args = std::move(args);
  return DetectSglangTiers(pod);
}

TEST(SglangTiers, HostTierFlags) {
  EXPECT_TRUE(TiersOf({"--enable-hierarchical-cache"}).host);
  EXPECT_TRUE(TiersOf({"--enable-lmcache"}).host);
  EXPECT_TRUE(TiersOf({"--enable-flexkv"}).host);
  EXPECT_TRUE(TiersOf({"--enable-hier"}).host);  // argparse abbreviation
  EXPECT_TRUE(TiersOf({"--enable-lm"}).host);
  EXPECT_TRUE(TiersOf({"--enable-hierarchical-cache=true"}).host);  // cut at '='
  EXPECT_TRUE(TiersOf({}, {"python", "-m", "sglang.launch_server", "--enable-hier"}).host);
  EXPECT_FALSE(TiersOf({"--enable-hierarchical-cache-x"}).host);  // longer than the key
  EXPECT_FALSE(TiersOf({"-enable-hierarchical-cache"}).host);
  EXPECT_FALSE(TiersOf({"--"}).host);
  EXPECT_FALSE(TiersOf({"enable-hierarchical-cache"}).host);
  EXPECT_FALSE(TiersOf({"--enable-torch-compile"}).host);
  EXPECT_FALSE(TiersOf({}).host);
  EXPECT_FALSE(TiersOf({"--enable-hierarchical-cache"}).storage);
}

TEST(SglangTiers, RadixCacheBackendFlexkv) {
  EXPECT_TRUE(TiersOf({"--radix-cache-backend=flexkv"}).host);
  EXPECT_TRUE(TiersOf({"--radix-cache-backend", "flexkv"}).host);
  EXPECT_TRUE(TiersOf({"--radix-cache", "flexkv"}).host);  // abbreviated name
  EXPECT_TRUE(TiersOf({"--radix-cache-b=flexkv"}).host);
  EXPECT_FALSE(TiersOf({"--radix-cache-backend=radix"}).host);
  EXPECT_FALSE(TiersOf({"--radix-cache-backend", "lru"}).host);
  EXPECT_FALSE(TiersOf({"--radix-cache-backend=FlexKV"}).host);  // exact value
  EXPECT_FALSE(TiersOf({"--radix-cache-backend=flexkv2"}).host);
  EXPECT_FALSE(TiersOf({"--radix-cache-backend"}).host);             // no value
  EXPECT_FALSE(TiersOf({"--radix-cache-backend=", "flexkv"}).host);  // inline empty value
  // command and args are one argv: the value may open the args.
  EXPECT_TRUE(
      TiersOf({"flexkv"}, {"python", "-m", "sglang.launch_server", "--radix-cache-backend"}).host);
}

TEST(SglangTiers, StorageTier) {
  EXPECT_TRUE(TiersOf({"--hicache-storage-backend", "file"}).storage);
  EXPECT_TRUE(TiersOf({"--hicache-storage-backend=mooncake"}).storage);
  EXPECT_FALSE(TiersOf({"--hicache-storage-backend", "file"}).host);
  // An operator-owned flag other than the key never resolves, though it starts with the key.
  EXPECT_FALSE(TiersOf({"--hicache-storage-backend-extra-config", "{}"}).storage);
  EXPECT_FALSE(TiersOf({"--hicache-storage-backend-extra-config={}"}).storage);
  // Abbreviations of the key that are not operator-owned flags resolve.
  EXPECT_TRUE(TiersOf({"--hicache-storage-back", "file"}).storage);
  // P/D flags are never tiers.
  for (const char* flag : {"--disaggregation-mode", "--disaggregation-transfer-backend",
                           "--disaggregation-bootstrap-port"}) {
    const SglangTiers tiers = TiersOf({flag, "prefill"});
    EXPECT_FALSE(tiers.host) << flag;
    EXPECT_FALSE(tiers.storage) << flag;
  }
  // Init containers are not read.
  Pod pod = MetricsServerPod("server");
  pod.init_containers = {
      Container{.name = "init",
                .args = {"--enable-hierarchical-cache", "--hicache-storage-backend", "file"}}};
  EXPECT_FALSE(DetectSglangTiers(pod).host);
  EXPECT_FALSE(DetectSglangTiers(pod).storage);
  // Every container is read.
  pod.containers.push_back(Container{.name = "sidecar", .command = {"--enable-flexkv"}});
  EXPECT_TRUE(DetectSglangTiers(pod).host);
}

TEST(KvConnector, ExactFlagNameOnly) {
  auto renders = [](std::vector<std::string> command, std::vector<std::string> args = {}) {
    Pod pod = MetricsServerPod("server", std::move(command));
    pod.containers[0].args = std::move(args);
    return RendersKvConnector(pod);
  };
  EXPECT_TRUE(renders({"vllm", "serve", "--kv-transfer-config=" + kKvConnectorArg}));
  EXPECT_TRUE(renders({"vllm", "serve", "--kv-transfer-config", kKvConnectorArg}));
  EXPECT_TRUE(renders({"vllm", "serve"}, {"--kv-transfer-config", kKvConnectorArg}));
  EXPECT_FALSE(renders({"vllm", "serve"}));
  EXPECT_FALSE(renders({"--kv-transfer"}));                            // no abbreviations
  EXPECT_FALSE(renders({"--kv_transfer_config=" + kKvConnectorArg}));  // no `_` rewriting
  EXPECT_FALSE(renders({"--kv-transfer-config-x"}));
  Pod init = MetricsServerPod("server");
  init.init_containers = {Container{.name = "init", .command = {"--kv-transfer-config={}"}}};
  EXPECT_FALSE(RendersKvConnector(init));
}

// ---------------------------------------------------------------------------------------------
// The baseline store (§2.5).

// An engine with no rules of its own is reported, not read by another engine's rules.
TEST(SnapshotBuilder, UnknownEngineIsAnUnsupportedSource) {
  ModelDeployment md = MetricsModelDeployment();
  md.engine = "tensorrt-llm";
  BaselineStore store;
  const Pod pod = MetricsEnginePod("chat-0", "u1");
  ASSERT_EQ(SelectExporter(md, false), nullptr);
  PodMetrics read;
  std::string error;
  ASSERT_OK(ParsePodMetrics(Fixture("vllm_server_busy_first.prom"), nullptr, &read));
  const Snapshot snapshot = MergeOnce(md, &store, T0(), pod, read);
  EXPECT_TRUE(snapshot.processing.empty());
  EXPECT_TRUE(snapshot.queueing.empty());
  ASSERT_EQ(snapshot.missing.size(), 1u);
  EXPECT_EQ(snapshot.missing[0].pod, "chat-0");
  EXPECT_EQ(snapshot.missing[0].source, "engine");
  EXPECT_EQ(snapshot.missing[0].reason,
            "unsupported source: engine \"tensorrt-llm\" is not one the deployment metrics read "
            "(vllm, sglang, vllm-omni)");
  EXPECT_TRUE(snapshot.partial);
}

// The same for a router: its Pods are reported by name, the engine Pods beside it still read.
TEST(SnapshotBuilder, UnknownRouterIsAnUnsupportedSource) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "envoy-ai-gateway");
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "envoy-ai-gateway");
  ASSERT_EQ(SelectExporter(md, /*router=*/true), nullptr);
  BaselineStore store;
  PodMetrics read;
  std::string error;
  ASSERT_OK(ParsePodMetrics(Fixture("vllm_router_pd_serving.prom"), nullptr, &read));
  const Snapshot snapshot = MergeOnce(md, &store, T0(), router, read);
  EXPECT_TRUE(snapshot.processing.empty());
  ASSERT_EQ(snapshot.missing.size(), 1u);
  EXPECT_EQ(snapshot.missing[0].pod, "chat-router");
  EXPECT_EQ(snapshot.missing[0].source, "router");
  EXPECT_EQ(snapshot.missing[0].reason,
            "unsupported source: router \"envoy-ai-gateway\" is not one the deployment metrics "
            "read (llm-d-router, vllm-router, sglang-gateway)");
  EXPECT_TRUE(snapshot.partial);
  // An engine Pod of the same deployment is read by the vLLM rules as usual.
  ASSERT_NE(SelectExporter(md, /*router=*/false), nullptr);
}

TEST(BaselineStore, ValidOnlyWhenAgeInZeroToFiveMinutes) {
  BaselineStore store;
  EXPECT_FALSE(store.ReplaceWindow("k", {1, 2, ReadTime::Replay(T0())}));
  // Same instant: age 0 is not valid, but the sample is stored.
  EXPECT_FALSE(store.ReplaceWindow("k", {1, 2, ReadTime::Replay(T0())}));
  const auto previous = store.ReplaceWindow("k", {3, 4, ReadTime::Replay(T0() + 5min)});
  ASSERT_TRUE(previous);  // exactly 5 min is valid
  EXPECT_EQ(previous->first, 1);
  EXPECT_EQ(previous->second, 2);
  EXPECT_EQ(previous->at.wall, T0());
  EXPECT_FALSE(
      store.ReplaceWindow("k", {5, 6, ReadTime::Replay(T0() + 10min + 1ns)}));  // 5 min + 1 ns
  const auto last = store.ReplaceWindow("k", {7, 8, ReadTime::Replay(T0() + 10min + 2ns)});
  ASSERT_TRUE(last);  // replaced, then valid against the stored one
  EXPECT_EQ(last->first, 5);
  // A read earlier than the stored one is not valid either.
  EXPECT_FALSE(store.ReplaceWindow("k", {9, 9, ReadTime::Replay(T0() + 9min)}));
}

// Ages and windows follow the monotonic clock: a wall-clock step (NTP, a VM resumed) neither
// invalidates a baseline nor changes a window's length, while observedAt keeps the wall time.
TEST(BaselineStore, WallClockStepsDoNotMoveWindows) {
  BaselineStore store;
  const SteadyTime s0 = SteadyTime(std::chrono::hours(1000));
  EXPECT_FALSE(store.ReplaceWindow("k", {1, 1, ReadTime{T0(), s0}}));
  // The wall clock jumped back an hour while 5 s passed.
  const auto previous = store.ReplaceWindow("k", {2, 2, ReadTime{T0() - 1h, s0 + 5s}});
  ASSERT_TRUE(previous);
  EXPECT_EQ(previous->at.wall, T0());
  // ...and forward a day: still valid, since only 10 s passed.
  EXPECT_TRUE(store.ReplaceWindow("k", {3, 3, ReadTime{T0() + 24h, s0 + 10s}}));

  const ModelDeployment md = MetricsModelDeployment();
  const Pod pod = MetricsEnginePod("chat-0", "u1");
  SnapshotBuilder first(md, &store);
  first.MergePod(pod, Parse(Fixture("vllm_server_busy_first.prom"), exporters::kVllm),
                 ReadTime{T0(), s0});
  first.Finish(T0());
  SnapshotBuilder second(md, &store);
  second.MergePod(pod, Parse(Fixture("vllm_server_busy_second.prom"), exporters::kVllm),
                  ReadTime{T0() - 1h, s0 + 4s});
  const Snapshot snapshot = second.Finish(T0() - 1h);
  ASSERT_FALSE(snapshot.cache_hits.empty());
  EXPECT_EQ(snapshot.cache_hits[0].window_seconds, 4);
  EXPECT_EQ(snapshot.cache_hits[0].observed_at, T0() - 1h);
}

TEST(BaselineStore, WindowsAndCountersAreSeparateMaps) {
  BaselineStore store;
  EXPECT_FALSE(store.ReplaceWindow("md/pod/x", {1, 1, ReadTime::Replay(T0())}));
  EXPECT_FALSE(store.ReplaceCounter("md/pod/x", {1, 1, ReadTime::Replay(T0() + 1s)}));
  EXPECT_TRUE(store.ReplaceWindow("md/pod/x", {2, 2, ReadTime::Replay(T0() + 2s)}));
  EXPECT_TRUE(store.ReplaceCounter("md/pod/x", {2, 2, ReadTime::Replay(T0() + 3s)}));
  EXPECT_EQ(store.size(), 2u);
}

TEST(BaselineStore, PurgesEntriesOlderThanTenMinutes) {
  BaselineStore store;
  store.ReplaceWindow("old", {1, 1, ReadTime::Replay(T0())});
  store.ReplaceCounter("old-counter", {1, 1, ReadTime::Replay(T0())});
  store.ReplaceWindow("recent", {1, 1, ReadTime::Replay(T0() + 5min)});
  EXPECT_EQ(store.size(), 3u);
  store.ReplaceWindow("new", {1, 1, ReadTime::Replay(T0() + 10min)});  // exactly 10 min: kept
  EXPECT_EQ(store.size(), 4u);
  store.ReplaceWindow("newer",
                      {1, 1, ReadTime::Replay(T0() + 10min + 2s)});  // older than 10 min: purged
  EXPECT_EQ(store.size(), 3u);
  // The purged key starts fresh.
  EXPECT_FALSE(store.ReplaceWindow("old", {2, 2, ReadTime::Replay(T0() + 10min + 3s)}));
}

TEST(BaselineStore, ResetShowsOnceThenWorks) {
  const ModelDeployment md = MetricsModelDeployment();
  const Pod pod = MetricsServerPod("server");
  BaselineStore store;
  const Snapshot first =
      MergeOnce(md, &store, T0(), pod, Parse(MetricsVLLMResponse(10, 20, 4), exporters::kVllm));
  EXPECT_EQ(GpuStackMissing(first),
            (Missings{M("server", "local-prefix", reason::kAwaiting),
                      M("server", "vllm:inter_token_latency_seconds", reason::kAwaiting),
                      M("server", "vllm:request_time_per_output_token_seconds", reason::kAwaiting),
                      M("server", "vllm:time_to_first_token_seconds", reason::kAwaiting)}));
  EXPECT_EQ(first.missing[0].reason, "awaiting a second counter sample");
  EXPECT_TRUE(first.partial);

  const Snapshot reset =
      MergeOnce(md, &store, T0() + 30s, pod, Parse(MetricsVLLMResponse(1, 2, 1), exporters::kVllm));
  EXPECT_EQ(GpuStackMissing(reset),
            (Missings{M("server", "local-prefix", "counter reset or incompatible denominator"),
                      M("server", "vllm:inter_token_latency_seconds", "counter reset"),
                      M("server", "vllm:request_time_per_output_token_seconds", "counter reset"),
                      M("server", "vllm:time_to_first_token_seconds", "counter reset")}));
  EXPECT_TRUE(reset.partial);

  const Snapshot after = MergeOnce(md, &store, T0() + 60s, pod,
                                   Parse(MetricsVLLMResponse(6, 12, 3), exporters::kVllm));
  EXPECT_TRUE(GpuStackMissing(after).empty());
  EXPECT_FALSE(after.partial);
  EXPECT_EQ(after.cache_hits.at(0).hits, 5);
  EXPECT_EQ(after.cache_hits.at(0).queries, 10);
  EXPECT_EQ(FindWindow(after.latency, "server", "ttft")->samples, 2);
  EXPECT_EQ(FindWindow(after.latency, "server", "ttft")->window_seconds, 30);
}

TEST(BaselineStore, HitsAboveQueriesIsIncompatible) {
  const Snapshot s = MergeMetricsWindow(MetricsModelDeployment(), MetricsServerPod("server"),
                                        Parse(MetricsVLLMResponse(0, 10, 1), exporters::kVllm),
                                        Parse(MetricsVLLMResponse(9, 15, 2), exporters::kVllm));
  EXPECT_EQ(GpuStackMissing(s), (Missings{M("server", "local-prefix", reason::kCacheReset)}));
}

TEST(BaselineStore, NewPodUIDStartsFresh) {
  const ModelDeployment md = MetricsModelDeployment();
  BaselineStore store;
  MergeOnce(md, &store, T0(), MetricsEnginePod("server", "uid-1"),
            Parse(MetricsVLLMResponse(5, 10, 2), exporters::kVllm));
  const Snapshot restarted = MergeOnce(md, &store, T0() + 30s, MetricsEnginePod("server", "uid-2"),
                                       Parse(MetricsVLLMResponse(10, 20, 4), exporters::kVllm));
  ASSERT_EQ(GpuStackMissing(restarted).size(), 4u);
  for (const Missing& m : GpuStackMissing(restarted))
    EXPECT_EQ(m.reason, reason::kAwaiting) << m.source;
  // A different deployment UID does not share baselines either.
  ModelDeployment other = md;
  other.metadata.uid = "md-two";
  const Snapshot other_md =
      MergeOnce(other, &store, T0() + 60s, MetricsEnginePod("server", "uid-2"),
                Parse(MetricsVLLMResponse(15, 30, 6), exporters::kVllm));
  ASSERT_EQ(GpuStackMissing(other_md).size(), 4u);
  // The first UID's baseline is still there (60 s old).
  const Snapshot back = MergeOnce(md, &store, T0() + 60s, MetricsEnginePod("server", "uid-1"),
                                  Parse(MetricsVLLMResponse(15, 30, 6), exporters::kVllm));
  EXPECT_TRUE(GpuStackMissing(back).empty());
  EXPECT_EQ(FindWindow(back.latency, "server", "ttft")->window_seconds, 60);
}

TEST(BaselineStore, OlderThanFiveMinutesAwaitsAgain) {
  const ModelDeployment md = MetricsModelDeployment();
  const Pod pod = MetricsServerPod("server");
  BaselineStore store;
  MergeOnce(md, &store, T0(), pod, Parse(MetricsVLLMResponse(5, 10, 2), exporters::kVllm));
  const Snapshot stale = MergeOnce(md, &store, T0() + 5min + 1s, pod,
                                   Parse(MetricsVLLMResponse(10, 20, 4), exporters::kVllm));
  ASSERT_EQ(GpuStackMissing(stale).size(), 4u);
  for (const Missing& m : GpuStackMissing(stale)) EXPECT_EQ(m.reason, reason::kAwaiting);
  const Snapshot edge = MergeOnce(md, &store, T0() + 10min + 1s, pod,
                                  Parse(MetricsVLLMResponse(15, 30, 6), exporters::kVllm));
  EXPECT_TRUE(GpuStackMissing(edge).empty());
  EXPECT_EQ(FindWindow(edge.latency, "server", "ttft")->window_seconds, 300);
}

// An absent series leaves its baseline untouched (§2.4 step 1).
TEST(BaselineStore, AbsentSeriesKeepsItsBaseline) {
  const ModelDeployment md = MetricsModelDeployment();
  const Pod pod = MetricsServerPod("server");
  BaselineStore store;
  const std::string with = MetricsVLLMResponse(5, 10, 2);
  MergeOnce(md, &store, T0(), pod, Parse(with, exporters::kVllm));
  MergeOnce(md, &store, T0() + 10s, pod,
            Parse(DropLines(MetricsVLLMResponse(6, 12, 3), "vllm:inter_token_latency_seconds"),
                  exporters::kVllm));
  const Snapshot s = MergeOnce(md, &store, T0() + 20s, pod,
                               Parse(MetricsVLLMResponse(7, 14, 4), exporters::kVllm));
  EXPECT_EQ(FindWindow(s.latency, "server", "itl")->window_seconds, 20);
  EXPECT_EQ(FindWindow(s.latency, "server", "itl")->samples, 2);
  EXPECT_EQ(FindWindow(s.latency, "server", "ttft")->window_seconds, 10);
}

// ---------------------------------------------------------------------------------------------
// Gauges, error ratio, sorting and partial.

TEST(SnapshotMerge, GaugesMergeByNameSourceAndScope) {
  ModelDeployment md = MetricsPDModelDeployment("vLLM");
  md.roles[0].kind = "Prefill";  // either spelling of the kinds
  md.roles[1].kind = "Decode";
  md.router = Router{.name = "llm-d-router"};
  BaselineStore store;
  PodMetrics router;
  router.gauges = {{"router-running", 4}, {"router-backends", 2}};
  const Snapshot s = MergeReads(md, &store, T0(),
                                {{MetricsEnginePod("a-prompt", "u1", "prompt"),
                                  Parse(MetricsVLLMResponse(1, 2, 1), exporters::kVllm)},
                                 {MetricsEnginePod("b-prompt", "u2", "prompt"),
                                  Parse(MetricsVLLMResponse(1, 2, 1), exporters::kVllm)},
                                 {MetricsEnginePod("c-generation", "u3", "generation"),
                                  Parse(MetricsVLLMResponse(1, 2, 1), exporters::kVllm)},
                                 {MetricsRouterPod("d-router", "u4", "llm-d-router"), router}});
  ASSERT_EQ(s.processing.size(), 4u);
  // Sorted by name+scope.
  EXPECT_EQ(s.processing[0].name, "router-backends");
  EXPECT_EQ(s.processing[0].unit, "backends");
  EXPECT_EQ(s.processing[1].name, "router-running");
  EXPECT_EQ(s.processing[1].scope, "router");
  EXPECT_EQ(s.processing[1].value, 4);
  EXPECT_EQ(s.processing[2].scope, "engine/generation");
  EXPECT_EQ(s.processing[2].value, 2);
  EXPECT_EQ(s.processing[2].pod_count, 1);
  EXPECT_EQ(s.processing[3].scope, "engine/prompt");
  EXPECT_EQ(s.processing[3].value, 4);
  EXPECT_EQ(s.processing[3].pod_count, 2);
  EXPECT_EQ(s.processing[3].source, "vllm:num_requests_running");
  ASSERT_EQ(s.queueing.size(), 2u);
  EXPECT_EQ(s.queueing[0].scope, "engine/generation");
  EXPECT_EQ(s.queueing[0].value, 0);  // a measured zero is kept
}

TEST(SnapshotMerge, GaugeObservedAtIsTheLatest) {
  const ModelDeployment md = MetricsModelDeployment();
  BaselineStore store;
  SnapshotBuilder builder(md, &store);
  const PodMetrics read = Parse(MetricsVLLMResponse(1, 2, 1), exporters::kVllm);
  builder.MergePod(MetricsEnginePod("a", "u1"), read, ReadTime::Replay(T0() + 2s));
  builder.MergePod(MetricsEnginePod("b", "u2"), read, ReadTime::Replay(T0() + 5s));
  builder.MergePod(MetricsEnginePod("c", "u3"), read, ReadTime::Replay(T0() + 1s));
  const Snapshot s = builder.Finish(T0() + 6s);
  ASSERT_EQ(s.processing.size(), 1u);
  EXPECT_EQ(s.processing[0].observed_at, T0() + 5s);
  EXPECT_EQ(s.processing[0].pod_count, 3);
  EXPECT_EQ(s.processing[0].value, 6);
  EXPECT_EQ(s.timestamp, T0() + 6s);
  EXPECT_EQ(s.name, "chat");
  EXPECT_EQ(s.namespace_, "team");
}

TEST(SnapshotMerge, ErrorRatioOnlyForTheGateway) {
  const ModelDeployment md = WithRouter(MetricsModelDeployment(), "sglang-gateway");
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "sglang-gateway");
  const std::string source = "smg_router_requests_total+smg_router_request_errors_total";
  {
    const Snapshot s =
        MergeMetricsWindow(md, router, Windows({{"requests", {0, 10}}, {"errors", {0, 1}}}),
                           Windows({{"requests", {0, 20}}, {"errors", {0, 3}}}));
    const Window* ratio = FindWindow(s.traffic, "chat-router", "error-ratio");
    ASSERT_NE(ratio, nullptr);
    EXPECT_EQ(ratio->source, source);
    EXPECT_EQ(ratio->unit, "fraction");
    EXPECT_EQ(ratio->value, 0.2);
    EXPECT_EQ(ratio->samples, 10);
    EXPECT_EQ(ratio->window_seconds, 30);
    EXPECT_EQ(ratio->scope, "router");
  }
  {
    const Snapshot s =
        MergeMetricsWindow(md, router, Windows({{"requests", {0, 10}}, {"errors", {0, 1}}}),
                           Windows({{"requests", {0, 12}}, {"errors", {0, 4}}}));
    EXPECT_EQ(FindWindow(s.traffic, "chat-router", "error-ratio"), nullptr);
    bool found = false;
    for (const Missing& m : s.missing) {
      if (m.source == source) {
        EXPECT_EQ(m.reason, "error counter exceeds request counter");
        found = true;
      }
    }
    EXPECT_TRUE(found);
  }
  {
    const Snapshot s =
        MergeMetricsWindow(md, router, Windows({{"requests", {0, 10}}, {"errors", {0, 1}}}),
                           Windows({{"requests", {0, 10}}, {"errors", {0, 1}}}));
    bool found = false;
    for (const Missing& m : s.missing) {
      if (m.source == source) {
        EXPECT_EQ(m.reason, "no requests in the sampling window");
        found = true;
      }
    }
    EXPECT_TRUE(found);
    // A zero rate is emitted as 0.
    EXPECT_EQ(FindWindow(s.traffic, "chat-router", "requests")->value, 0);
  }
}

// §2.3 step a: the baseline is stored before the unsupported checks, so a scope that becomes
// readable (vLLM's external counters start moving) has a window at once.
TEST(SnapshotMerge, UnsupportedScopesStillStoreTheirBaseline) {
  ModelDeployment md = MetricsModelDeployment();
  md.kv_cache = true;
  const Pod pod = MetricsServerPod("server", {"vllm", "serve"});
  const std::string first = Fixture("vllm_server_busy_first.prom");
  std::string second = Fixture("vllm_server_busy_second.prom");
  second = SetSample(second, "vllm:external_prefix_cache_hits_total", "2");
  second = SetSample(second, "vllm:external_prefix_cache_queries_total", "8");
  BaselineStore store;
  const Snapshot unsupported = MergeOnce(md, &store, T0(), pod, Parse(first, exporters::kVllm));
  bool no_connector = false;
  for (const Missing& m : unsupported.missing) {
    no_connector |= m == M("server", "external-store", reason::kVllmNoKvConnector);
  }
  EXPECT_TRUE(no_connector);
  const Snapshot moving = MergeOnce(md, &store, T0() + 30s, pod, Parse(second, exporters::kVllm));
  EXPECT_TRUE(GpuStackMissing(moving).empty());
  const CacheHit* external = FindCacheHit(moving.cache_hits, "server", "external-store");
  ASSERT_NE(external, nullptr);
  EXPECT_EQ(external->hits, 2);
  EXPECT_EQ(external->queries, 8);
  EXPECT_EQ(external->rate, 0.25);
}

// §2.4 step 1: the labeled-counter rule needs only the pair's key in this scrape, not its
// baseline; the labeled-histogram rule needs the pair's delta in this pass.
TEST(SnapshotMerge, LabeledPairRulesOnTheFirstRead) {
  BaselineStore store;
  const ModelDeployment llmd = WithRouter(MetricsModelDeployment(), "llm-d-router");
  PodMetrics router;
  router.gauges = {{"router-running", 0}, {"router-backends", 1}};
  router.windows = {{"ttft", {0, 0}}, {"tpot", {0, 0}}, {"requests", {0, 7}}};
  const Snapshot first = MergeOnce(
      llmd, &store, T0(), MetricsRouterPod("chat-router", "router-uid", "llm-d-router"), router);
  EXPECT_EQ(
      first.missing,
      (Missings{
          M("chat-router", "llm_d_epp_request_error_total", reason::kLabeledCounterUnexported),
          M("chat-router", "llm_d_epp_request_streaming_tpot_seconds", reason::kAwaiting),
          M("chat-router", "llm_d_epp_request_total", reason::kAwaiting),
          M("chat-router", "llm_d_epp_request_ttft_seconds", reason::kAwaiting)}));

  // SGLang ITL absent while TTFT awaits its second sample: no delta, so `metric is absent`.
  ModelDeployment sglang = MetricsModelDeployment();
  sglang.engine = "sglang";
  const Snapshot idle_first =
      MergeOnce(sglang, &store, T0(), MetricsServerPod("server"),
                Parse(Fixture("sglang_server_idle_first.prom"), exporters::kSglang));
  bool found = false;
  for (const Missing& m : idle_first.missing) {
    if (m.source == "sglang:inter_token_latency_seconds") {
      EXPECT_EQ(m.reason, "metric is absent");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// §2.2 step 11: byte-wise order of the concatenated key; a deployment-level entry (pod "") sorts
// by its source alone, so `engine/server` follows `chat-...` Pods.
TEST(SnapshotMerge, SortsByConcatenatedKeyBytewise) {
  const ModelDeployment md = MetricsModelDeployment();
  BaselineStore store;
  SnapshotBuilder builder(md, &store);
  builder.AddMissing("", "engine/server", "1 of 2 owned metrics Pods present");
  builder.AddMissing("", "scrape", "x");
  builder.AddMissing("chat-b", "scrape", "metrics endpoint returned HTTP 500");
  builder.AddMissing("", "Router", "upper case sorts first");
  const PodMetrics read = Parse(MetricsVLLMResponse(1, 2, 1), exporters::kVllm);
  builder.MergePod(MetricsEnginePod("chat-a", "u1"), read, ReadTime::Replay(T0()));
  // Pod "p" and Pod "pa": the concatenated key "palocal-prefix" < "plocal-prefix".
  builder.MergePod(MetricsEnginePod("p", "u2"), read, ReadTime::Replay(T0()));
  builder.MergePod(MetricsEnginePod("pa", "u3"), read, ReadTime::Replay(T0()));
  const Snapshot s = builder.Finish(T0());
  std::vector<std::string> keys;
  for (const Missing& m : s.missing) keys.push_back(m.pod + "|" + m.source);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "|Router",
                      "chat-a|local-prefix",
                      "chat-a|vllm:inter_token_latency_seconds",
                      "chat-a|vllm:kv_cache_usage_perc",
                      "chat-a|vllm:request_time_per_output_token_seconds",
                      "chat-a|vllm:time_to_first_token_seconds",
                      "chat-b|scrape",
                      "|engine/server",
                      "pa|local-prefix",
                      "pa|vllm:inter_token_latency_seconds",
                      "pa|vllm:kv_cache_usage_perc",
                      "pa|vllm:request_time_per_output_token_seconds",
                      "pa|vllm:time_to_first_token_seconds",
                      "p|local-prefix",
                      "p|vllm:inter_token_latency_seconds",
                      "p|vllm:kv_cache_usage_perc",
                      "p|vllm:request_time_per_output_token_seconds",
                      "p|vllm:time_to_first_token_seconds",
                      "|scrape",
                  }));
}

TEST(SnapshotMerge, CacheHitsAndWindowsSortByPodThenName) {
  const ModelDeployment md = MetricsModelDeployment();
  BaselineStore store;
  auto read = [&](WallTime at, double step) {
    const PodMetrics r = Parse(MetricsVLLMResponse(step, 2 * step, step), exporters::kVllm);
    return MergeReads(md, &store, at,
                      {{MetricsEnginePod("p", "u1"), r}, {MetricsEnginePod("pa", "u2"), r}});
  };
  read(T0(), 1);
  const Snapshot s = read(T0() + 30s, 2);
  ASSERT_EQ(s.cache_hits.size(), 2u);
  EXPECT_EQ(s.cache_hits[0].pod, "pa");  // "palocal-prefix" < "plocal-prefix"
  EXPECT_EQ(s.cache_hits[1].pod, "p");
  // Pod+name: "paitl" < "pitl", as with the cache hits.
  EXPECT_EQ(WindowKeys(s.latency), (std::vector<std::string>{"pa/itl", "pa/tpot", "pa/ttft",
                                                             "p/itl", "p/tpot", "p/ttft"}));
}

TEST(SnapshotMerge, PartialSemantics) {
  const ModelDeployment md = MetricsModelDeployment();
  BaselineStore store;
  {
    SnapshotBuilder builder(md, &store);
    EXPECT_FALSE(builder.Finish(T0()).partial);
  }
  {
    SnapshotBuilder builder(md, &store);
    for (std::string_view r : reason::kNotPartialReasons)
      builder.AddMissing("p", "s", std::string(r));
    const Snapshot s = builder.Finish(T0());
    EXPECT_EQ(s.missing.size(), std::size(reason::kNotPartialReasons));
    EXPECT_FALSE(s.partial);
  }
  {
    SnapshotBuilder builder(md, &store);
    builder.ForcePartial();
    EXPECT_TRUE(builder.Finish(T0()).partial);
  }
  for (std::string_view r :
       {reason::kNoOwnedPod, reason::kPodLimit, reason::kAbsent, reason::kAwaiting,
        reason::kCounterReset, reason::kCacheReset, reason::kNoObservations, reason::kNoQueries,
        reason::kDifferentWindows, reason::kNoRequests, reason::kErrorsExceedRequests,
        reason::kNoEndpoint, reason::kInvalidPort, reason::kUndeclaredPort, reason::kInvalidScheme,
        reason::kTooLarge}) {
    SnapshotBuilder builder(md, &store);
    builder.AddMissing("p", "s", std::string(reason::kIdleWindow));
    builder.AddMissing("p", "t", std::string(r));
    EXPECT_TRUE(builder.Finish(T0()).partial) << r;
    EXPECT_FALSE(IsNotPartialReason(r)) << r;
  }
  {
    SnapshotBuilder builder(md, &store);
    builder.AddMissing("p", "scrape", "Get \"http://10.0.0.1:8000/metrics\": EOF");
    EXPECT_TRUE(builder.Finish(T0()).partial);
  }
  // An exempt reason with one byte changed is not exempt.
  EXPECT_FALSE(IsNotPartialReason(std::string(reason::kIdleWindow) + "."));
}

// §1.2: every reason string, byte for byte.
TEST(SnapshotMerge, ReasonStringsAreByteExact) {
  EXPECT_EQ(reason::kNoOwnedPod, "no owned metrics Pod");
  EXPECT_EQ(CoverageReason(1, 2), "1 of 2 owned metrics Pods present");
  EXPECT_EQ(CoverageReason(3, 12), "3 of 12 owned metrics Pods present");
  EXPECT_EQ(reason::kPodLimit, "Pod count exceeds the bounded scrape limit");
  EXPECT_EQ(reason::kNoEndpoint, "pod has no ready advertised metrics endpoint");
  EXPECT_EQ(reason::kInvalidPort, "pod advertises an invalid metrics port");
  EXPECT_EQ(reason::kUndeclaredPort, "pod advertises a metrics port absent from its containers");
  EXPECT_EQ(reason::kInvalidScheme, "pod advertises an invalid metrics scheme");
  EXPECT_EQ(reason::kTooLarge, "metrics response exceeds 1048576 bytes");
  EXPECT_EQ(reason::kAbsent, "metric is absent");
  EXPECT_EQ(reason::kAwaiting, "awaiting a second counter sample");
  EXPECT_EQ(reason::kCounterReset, "counter reset");
  EXPECT_EQ(reason::kCacheReset, "counter reset or incompatible denominator");
  EXPECT_EQ(reason::kNoObservations, "no observations in the sampling window");
  EXPECT_EQ(reason::kNoQueries, "no queries in the sampling window");
  EXPECT_EQ(reason::kDifferentWindows,
            "request and error counters have different sampling windows");
  EXPECT_EQ(reason::kNoRequests, "no requests in the sampling window");
  EXPECT_EQ(reason::kErrorsExceedRequests, "error counter exceeds request counter");

  const char* const kExempt[] = {
      "labeled failure or error counter is not exported before its first increment; its paired "
      "counter was read in the same scrape",
      "labeled histogram is not exported before its first observation; its paired histogram "
      "recorded no new observation in the same window",
      "unsupported source: the vLLM router exports no router processing gauge for a "
      "prefill/decode deployment",
      "unsupported source: the Pod renders no KV connector, so vLLM queries no external prefix "
      "cache",
      "unsupported source: vLLM counts every token any KV connector loads as an external prefix "
      "cache hit, and this Pod's are not the shared store's alone: it attaches no KV cache pool, "
      "or it is the decode half of a pair, whose store hits cannot be told from the blocks the "
      "prefill half sends",
      "unsupported source: the Pod renders no SGLang argument that selects a tree cache with a "
      "host tier, so SGLang counts no host hit",
      "unsupported source: the Pod renders no SGLang storage backend, so SGLang counts no storage "
      "hit",
      "idle sampling window: the Pod's TTFT histogram recorded no new request, so this source has "
      "no new sample",
      // The vLLM-Omni profile's (not upstream's).
      "not exported before its first observation: vLLM-Omni creates the family when a stage "
      "first records it",
      "idle sampling window: the pipeline's end-to-end latency histogram recorded no finished "
      "request, so this source has no new sample",
      "a part of the ratio has no value in this sampling window (see its own entry)",
      "no Speech API stream ended in the sampling window",
      "no streamed audio request finished in the sampling window",
      // The llm-d router profile's (not upstream's).
      "not exported before the router's first streaming request: a non-streaming request's TTFT "
      "is its whole duration and it records no TPOT, so both are read from streaming requests "
      "only",
      // The utilization extension's (not upstream's).
      "utilization metric is absent (a modelmetrics extension: the GPUStack fields do not depend "
      "on it)",
  };
  ASSERT_EQ(std::size(reason::kNotPartialReasons), std::size(kExempt));
  for (size_t i = 0; i < std::size(kExempt); ++i) {
    EXPECT_EQ(reason::kNotPartialReasons[i], kExempt[i]);
    EXPECT_TRUE(IsNotPartialReason(kExempt[i]));
  }
  EXPECT_EQ(reason::kLabeledCounterUnexported, kExempt[0]);
  EXPECT_EQ(reason::kLabeledHistogramUnexported, kExempt[1]);
  EXPECT_EQ(reason::kVllmRouterPdNoProcessing, kExempt[2]);
  EXPECT_EQ(reason::kVllmNoKvConnector, kExempt[3]);
  EXPECT_EQ(reason::kVllmExternalNotStore, kExempt[4]);
  EXPECT_EQ(reason::kSglangNoHostTier, kExempt[5]);
  EXPECT_EQ(reason::kSglangNoStorageTier, kExempt[6]);
  EXPECT_EQ(reason::kIdleWindow, kExempt[7]);
}

// §2.3: no cache counters at all; the SGLang decode half of a pair reads none and says nothing.
TEST(SnapshotMerge, CacheHitCountersAbsent) {
  BaselineStore store;
  PodMetrics read = Parse(MetricsVLLMResponse(1, 2, 1), exporters::kVllm);
  read.cache.clear();
  const Snapshot s =
      MergeOnce(MetricsModelDeployment(), &store, T0(), MetricsServerPod("server"), read);
  // The reference's "metric is absent", naming the counters looked for (issue 36: the source is
  // generic, so the reason says which names a Pod of any vLLM version would have).
  EXPECT_EQ(s.missing[0], M("server", "cache-hit counters",
                            "metric is absent: looked for vllm:prefix_cache_hits and "
                            "vllm:prefix_cache_queries, then vllm:gpu_prefix_cache_hits and "
                            "vllm:gpu_prefix_cache_queries (vLLM before 0.9.2)"));

  PodMetrics decode_read = Parse(MetricsSGLangFixture(), exporters::kSglang);
  decode_read.cache.clear();
  const Snapshot decode =
      MergeOnce(MetricsPDModelDeployment("sglang"), &store, T0(),
                MetricsEnginePod("generation-pod", "g-uid", "generation"), decode_read);
  for (const Missing& m : decode.missing) EXPECT_NE(m.source, "cache-hit counters");
}

// §2.4: SGLang's TTFT is skipped on the prefill half; transfer is read only on the prefill half.
TEST(SnapshotMerge, SGLangPDSkipsLeaveNoMissing) {
  BaselineStore store;
  const PodMetrics read = Parse(SGLangPDResponse(1), exporters::kSglang);
  const ModelDeployment md = MetricsPDModelDeployment("sglang");
  const Snapshot prompt =
      MergeOnce(md, &store, T0(), MetricsEnginePod("prompt-pod", "p-uid", "prompt"), read);
  for (const Missing& m : prompt.missing) {
    EXPECT_NE(m.source, "sglang:time_to_first_token_seconds");
    EXPECT_NE(m.source, "sglang:inter_token_latency_seconds");
  }
  const Snapshot generation =
      MergeOnce(md, &store, T0(), MetricsEnginePod("generation-pod", "g-uid", "generation"), read);
  for (const Missing& m : generation.missing) {
    EXPECT_EQ(m.source.find("kv_transfer"), std::string::npos) << m.source;
    EXPECT_NE(m.source, "device-prefix");
  }
  // A server (not P/D) reads no transfer at all.
  ModelDeployment server = MetricsModelDeployment();
  server.engine = "sglang";
  const Snapshot s = MergeOnce(server, &store, T0(), MetricsServerPod("server"), read);
  for (const Missing& m : s.missing) EXPECT_EQ(m.source.find("kv_transfer"), std::string::npos);
  EXPECT_EQ(FindGauge(s.queueing, "decode-transfer-waiting", "engine/server"), nullptr);
}

}  // namespace
}  // namespace modelmetrics::deployment

namespace modelmetrics::deployment {
namespace {

TEST(SnapshotMerge, OverflowingValuesAreMissingNotZero) {
  // A hostile Pod: two gauge series whose sum overflows, and a histogram whose mean does.
  const std::string body =
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\"} 1.7e308\n"
      "vllm:num_requests_running{engine=\"1\"} 1.7e308\n";
  const PodMetrics read = testing::Parse(body, exporters::kVllm);
  EXPECT_FALSE(read.gauges.contains("running"));

  const ModelDeployment md = testing::MetricsModelDeployment();
  const Pod pod = testing::MetricsEnginePod("pod", "uid");
  BaselineStore store;
  PodMetrics first;
  first.windows["ttft"] = {1e307, 1};
  PodMetrics second;
  second.windows["ttft"] = {1.7e308, 1 + 1e-15};  // mean of the delta: ~1.6e323 -> Inf
  testing::MergeOnce(md, &store, testing::T0(), pod, first);
  const Snapshot s =
      testing::MergeOnce(md, &store, testing::T0() + std::chrono::seconds(30), pod, second);
  EXPECT_EQ(testing::FindWindow(s.latency, "pod", "ttft"), nullptr);
  EXPECT_THAT(s.missing, ::testing::Contains(testing::M("pod", "vllm:time_to_first_token_seconds",
                                                        "value is not a finite number")));
  EXPECT_TRUE(s.partial);
  EXPECT_EQ(SnapshotToJson(s).find("inf"), std::string::npos);
}

}  // namespace
}  // namespace modelmetrics::deployment
