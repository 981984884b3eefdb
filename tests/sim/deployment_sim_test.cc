// Tests for the deployment simulator: each exporter's scrape parses strictly and holds the series
// the deployment aggregator reads (and not those it must not find), the traffic model moves,
// freezes and repeats as promised, every fault behaves as a real broken Pod would through
// net::HttpClient, and the objects describe the Pods in the shape the aggregator reads.
#include "sim/deployment_sim.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/object_file.h"
#include "modelmetrics/scrape.h"
#include "net/http_client.h"
#include "sim/number_spelling.h"
#include "status_matchers.h"
#include "test_deadlines.h"
#include "test_paths.h"

namespace modelmetrics::sim {

using ::modelmetrics::testing::Ok;

using ::modelmetrics::testing::Ok;
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using modelmetrics::testing::LetTimePass;
using modelmetrics::testing::WaitUntil;
// How long an idle simulator is watched for a change: it has no clock-driven numbers, so any
// length shows it; a quarter second costs little.
constexpr auto kIdleWatch = 250ms;

net::FetchResult Fetch(const std::string& url, std::chrono::milliseconds timeout = 2000ms) {
  net::ClientOptions options;
  options.fetch_timeout = timeout;
  net::HttpClient client(options);
  std::vector<net::FetchRequest> batch{{url, {}}};
  return client.FetchAll(batch, Clock::now() + timeout + 2s).at(0);
}

// Fetches and strictly parses one Pod's scrape; fails the test on any error.
Scrape ScrapePod(const DeploymentSim& sim, const std::string& pod, std::string* body = nullptr) {
  net::FetchResult result = Fetch(sim.PodUrl(pod));
  EXPECT_TRUE(result.ok()) << pod << ": " << result.message;
  Scrape scrape;
  std::string error;
  EXPECT_TRUE(scrape.Parse(result.body, {}, &error)) << pod << ": " << error;
  if (body) *body = result.body;
  return scrape;
}

std::unique_ptr<DeploymentSim> Started(DeploymentSimOptions options) {
  auto sim = std::make_unique<DeploymentSim>(std::move(options));
  std::string error;
  EXPECT_OK(sim->Start());
  return sim;
}

DeploymentSimOptions PrefillDecode(std::string engine) {
  DeploymentSimOptions options;
  options.engine = std::move(engine);
  options.roles = {{"prompt", deployment::RoleKind::kPrefill, 1, 1, {}},
                   {"generation", deployment::RoleKind::kDecode, 1, 1, {}}};
  return options;
}

double SumOr(const Scrape& scrape, std::string_view name, double fallback = -1) {
  return scrape.Sum(name).value_or(fallback);
}

double Mode(const Scrape& scrape, std::string_view mode) {
  LabelMatch match[] = {{"mode", mode}};
  return scrape.Sum("sglang:prefill_effective_tokens_total", match).value_or(-1);
}

double Mean(const Scrape& scrape, std::string_view name) {
  auto h = scrape.Histogram(name);
  return h && h->count > 0 ? h->sum / h->count : -1;
}

TEST(DeploymentSimTest, VllmServerExportsWhatTheAggregatorReads) {
  auto sim = Started({});
  ASSERT_EQ(sim->PodNames(), std::vector<std::string>{"chat-server-0"});
  std::string body;
  Scrape scrape = ScrapePod(*sim, "chat-server-0", &body);
  EXPECT_GE(SumOr(scrape, "vllm:num_requests_running"), 0);
  EXPECT_GE(SumOr(scrape, "vllm:num_requests_waiting"), 0);
  double queries = SumOr(scrape, "vllm:prefix_cache_queries");
  double hits = SumOr(scrape, "vllm:prefix_cache_hits");
  ASSERT_GT(queries, 0);
  EXPECT_GT(hits / queries, 0.45);
  EXPECT_LT(hits / queries, 0.85);
  // Exported without a connector too, and never moving then.
  EXPECT_EQ(SumOr(scrape, "vllm:external_prefix_cache_queries"), 0);
  EXPECT_EQ(SumOr(scrape, "vllm:external_prefix_cache_hits"), 0);
  for (const char* name :
       {"vllm:time_to_first_token_seconds", "vllm:request_time_per_output_token_seconds",
        "vllm:inter_token_latency_seconds"}) {
    auto h = scrape.Histogram(name);
    ASSERT_TRUE(h) << name;
    EXPECT_GT(h->count, 0) << name;
    EXPECT_GT(h->buckets.size(), 10u) << name;
  }
  EXPECT_GT(Mean(scrape, "vllm:time_to_first_token_seconds"), 0.005);
  EXPECT_LT(Mean(scrape, "vllm:time_to_first_token_seconds"), 0.1);
  EXPECT_NEAR(Mean(scrape, "vllm:inter_token_latency_seconds"), 0.005, 0.002);
  // prometheus_client's spelling and habits.
  EXPECT_NE(body.find("# TYPE vllm:prefix_cache_hits_total counter\n"), std::string::npos);
  EXPECT_NE(body.find("vllm:engine_sleep_state{engine=\"0\",model_name=\"Qwen/Qwen2.5-0.5B-"
                      "Instruct\",sleep_state=\"awake\"} 1.0\n"),
            std::string::npos);
  EXPECT_NE(body.find(",le=\"0.001\",model_name="), std::string::npos);
}

TEST(DeploymentSimTest, VllmExternalStoreMovesOnlyWithAConnectorAndAPool) {
  DeploymentSimOptions with_pool;
  with_pool.kv_cache = true;
  auto pooled = Started(with_pool);
  Scrape scrape = ScrapePod(*pooled, "chat-server-0");
  double queries = SumOr(scrape, "vllm:external_prefix_cache_queries");
  EXPECT_GT(queries, 0);
  EXPECT_LT(SumOr(scrape, "vllm:external_prefix_cache_hits"), queries);
  EXPECT_NE(pooled->ObjectsJson().find("--kv-transfer-config"), std::string::npos);

  DeploymentSimOptions connector_only;
  connector_only.kv_connector = true;
  auto unpooled = Started(connector_only);
  EXPECT_EQ(SumOr(ScrapePod(*unpooled, "chat-server-0"), "vllm:external_prefix_cache_queries"), 0);
  EXPECT_NE(unpooled->ObjectsJson().find("--kv-transfer-config"), std::string::npos);
}

TEST(DeploymentSimTest, VllmPrefillDecodePair) {
  auto sim = Started(PrefillDecode("vllm"));
  Scrape prefill = ScrapePod(*sim, "chat-prompt-0");
  Scrape decode = ScrapePod(*sim, "chat-generation-0");
  // The prefill half answers one-token requests: no ITL, zero TPOT, TTFT counted.
  EXPECT_EQ(prefill.Histogram("vllm:inter_token_latency_seconds")->count, 0);
  EXPECT_GT(prefill.Histogram("vllm:request_time_per_output_token_seconds")->count, 0);
  EXPECT_EQ(prefill.Histogram("vllm:request_time_per_output_token_seconds")->sum, 0);
  EXPECT_GT(prefill.Histogram("vllm:time_to_first_token_seconds")->count, 0);
  // Without a pool the prefill leg supplies nothing; decode's leg supplies every missing token.
  EXPECT_EQ(SumOr(prefill, "vllm:external_prefix_cache_queries"), 0);
  double decode_queries = SumOr(decode, "vllm:external_prefix_cache_queries");
  EXPECT_GT(decode_queries, 0);
  EXPECT_EQ(SumOr(decode, "vllm:external_prefix_cache_hits"), decode_queries);
  EXPECT_GT(decode.Histogram("vllm:inter_token_latency_seconds")->count, 0);
}

TEST(DeploymentSimTest, SglangServerTiersAndStreaming) {
  DeploymentSimOptions plain;
  plain.engine = "sglang";
  auto sim = Started(plain);
  std::string body;
  Scrape scrape = ScrapePod(*sim, "chat-server-0", &body);
  EXPECT_GE(SumOr(scrape, "sglang:num_running_reqs"), 0);
  EXPECT_GE(SumOr(scrape, "sglang:num_queue_reqs"), 0);
  double input = Mode(scrape, "input"), device = Mode(scrape, "device_hit");
  EXPECT_GT(device / (input + device), 0.45);
  EXPECT_LT(device / (input + device), 0.85);
  // Every mode exported from the start; tiers the Pod does not build stay at zero.
  EXPECT_EQ(Mode(scrape, "host_hit"), 0);
  EXPECT_EQ(Mode(scrape, "storage_hit"), 0);
  EXPECT_TRUE(scrape.Histogram("sglang:time_to_first_token_seconds"));
  EXPECT_TRUE(scrape.Histogram("sglang:inter_token_latency_seconds"));
  EXPECT_NEAR(Mean(scrape, "sglang:inter_token_latency_seconds"), 0.005, 0.002);
  EXPECT_EQ(scrape.Find("sglang:kv_transfer_latency_ms"), nullptr);
  EXPECT_NE(body.find("is_streaming=\"true\""), std::string::npos);

  DeploymentSimOptions tiered = plain;
  tiered.kv_cache = true;
  auto with_tiers = Started(tiered);
  Scrape tiers = ScrapePod(*with_tiers, "chat-server-0");
  EXPECT_GT(Mode(tiers, "host_hit"), 0);
  EXPECT_GT(Mode(tiers, "storage_hit"), 0);
  const std::string objects = with_tiers->ObjectsJson();
  EXPECT_NE(objects.find("--enable-hierarchical-cache"), std::string::npos);
  EXPECT_NE(objects.find("--hicache-storage-backend"), std::string::npos);
}

TEST(DeploymentSimTest, SglangIdleAnsweredOnlyItsWarmup) {
  DeploymentSimOptions options;
  options.engine = "sglang";
  options.idle = true;
  auto sim = Started(options);
  std::string first, second;
  Scrape scrape = ScrapePod(*sim, "chat-server-0", &first);
  EXPECT_EQ(scrape.Histogram("sglang:time_to_first_token_seconds")->count, 1);
  EXPECT_EQ(scrape.Find("sglang:inter_token_latency_seconds"), nullptr);
  EXPECT_EQ(SumOr(scrape, "sglang:num_running_reqs"), 0);
  LetTimePass(kIdleWatch);
  ScrapePod(*sim, "chat-server-0", &second);
  EXPECT_EQ(first, second);
}

TEST(DeploymentSimTest, SglangPrefillDecodeHalves) {
  auto sim = Started(PrefillDecode("sglang"));
  Scrape prefill = ScrapePod(*sim, "chat-prompt-0");
  Scrape decode = ScrapePod(*sim, "chat-generation-0");
  for (const char* name : {"sglang:kv_transfer_latency_ms", "sglang:kv_transfer_speed_gb_s",
                           "sglang:kv_transfer_total_mb"}) {
    auto h = prefill.Histogram(name);
    ASSERT_TRUE(h) << name;
    EXPECT_GT(h->count, 0) << name;
    EXPECT_EQ(decode.Find(name), nullptr) << name;
  }
  // TTFT is the decode half's; the prefill half keeps its warmup request alone.
  EXPECT_EQ(prefill.Histogram("sglang:time_to_first_token_seconds")->count, 1);
  EXPECT_GT(decode.Histogram("sglang:time_to_first_token_seconds")->count, 1);
  EXPECT_EQ(prefill.Find("sglang:inter_token_latency_seconds"), nullptr);
  EXPECT_TRUE(decode.Sum("sglang:num_decode_transfer_queue_reqs"));
  EXPECT_GT(Mode(prefill, "device_hit"), 0);

  // Before its first transfer a prefill half exports neither the transfer histograms nor the
  // failure counter.
  DeploymentSimOptions idle = PrefillDecode("sglang");
  idle.idle = true;
  auto quiet = Started(idle);
  Scrape quiet_prefill = ScrapePod(*quiet, "chat-prompt-0");
  EXPECT_EQ(quiet_prefill.Find("sglang:kv_transfer_total_mb"), nullptr);
  EXPECT_EQ(quiet_prefill.Find("sglang:num_transfer_failed_reqs_total"), nullptr);
}

std::string RouterPod(const DeploymentSim& sim) {
  for (const SimPodInfo& pod : sim.Pods()) {
    if (pod.router) return pod.name;
  }
  return "";
}

TEST(DeploymentSimTest, LlmdRouter) {
  DeploymentSimOptions options = PrefillDecode("vllm");
  options.router = "llm-d-router";
  auto sim = Started(options);
  const std::string router = RouterPod(*sim);
  EXPECT_TRUE(router.starts_with("chat-router-")) << router;
  std::string body;
  Scrape scrape = ScrapePod(*sim, router, &body);
  EXPECT_EQ(SumOr(scrape, "llm_d_epp_ready_endpoints"), 2);
  EXPECT_GE(SumOr(scrape, "llm_d_epp_request_running"), 0);
  EXPECT_GT(SumOr(scrape, "llm_d_epp_request_total"), 0);
  EXPECT_GT(scrape.Histogram("llm_d_epp_request_ttft_seconds")->count, 0);
  EXPECT_GT(scrape.Histogram("llm_d_epp_request_streaming_tpot_seconds")->count, 0);
  EXPECT_NE(body.find("# HELP llm_d_epp_request_total [ALPHA]"), std::string::npos);
  EXPECT_NE(body.find("target_model_name=\"Qwen/Qwen2.5-0.5B-Instruct\",le=\"+Inf\"}"),
            std::string::npos);

  options.idle = true;
  auto idle = Started(options);
  Scrape quiet = ScrapePod(*idle, RouterPod(*idle));
  EXPECT_EQ(quiet.Find("llm_d_epp_request_error_total"), nullptr);
  EXPECT_EQ(SumOr(quiet, "llm_d_epp_request_running"), 0);
}

TEST(DeploymentSimTest, VllmRouterNormalAndPrefillDecodeModes) {
  DeploymentSimOptions options;
  options.router = "vllm-router";
  options.roles = {{"server", deployment::RoleKind::kServer, 2, 1, {}}};
  auto sim = Started(options);
  std::string body;
  Scrape scrape = ScrapePod(*sim, RouterPod(*sim), &body);
  EXPECT_GT(SumOr(scrape, "vllm_router_requests_total"), 0);
  EXPECT_GE(SumOr(scrape, "vllm_router_running_requests"), 0);
  EXPECT_EQ(SumOr(scrape, "vllm_router_active_workers"), 2);
  EXPECT_EQ(scrape.Find("vllm_router_pd_requests_total"), nullptr);
  EXPECT_NE(
      body.find("\n\n# TYPE vllm_router_active_workers gauge\nvllm_router_active_workers 2\n"),
      std::string::npos);

  DeploymentSimOptions pd = PrefillDecode("vllm");
  pd.router = "vllm-router";
  auto paired = Started(pd);
  Scrape pd_scrape = ScrapePod(*paired, RouterPod(*paired));
  EXPECT_GT(SumOr(pd_scrape, "vllm_router_pd_requests_total"), 0);
  EXPECT_TRUE(pd_scrape.Histogram("vllm_router_pd_request_duration_seconds"));
  EXPECT_EQ(pd_scrape.Find("vllm_router_running_requests"), nullptr);
  EXPECT_EQ(pd_scrape.Find("vllm_router_active_workers"), nullptr);
  EXPECT_EQ(pd_scrape.Find("vllm_router_requests_total"), nullptr);

  // Labeled error counters export nothing before their first increment.
  options.idle = true;
  auto idle = Started(options);
  Scrape quiet = ScrapePod(*idle, RouterPod(*idle));
  EXPECT_EQ(quiet.Find("vllm_router_request_errors_total"), nullptr);
  EXPECT_EQ(quiet.Find("vllm_router_retries_exhausted_total"), nullptr);
  EXPECT_EQ(SumOr(quiet, "vllm_router_running_requests"), 0);
}

TEST(DeploymentSimTest, SglangGateway) {
  DeploymentSimOptions options = PrefillDecode("sglang");
  options.router = "sglang-gateway";
  auto sim = Started(options);
  Scrape scrape = ScrapePod(*sim, RouterPod(*sim));
  EXPECT_GT(SumOr(scrape, "smg_router_requests_total"), 0);
  EXPECT_EQ(SumOr(scrape, "smg_worker_pool_size"), 2);
  const MetricFamily* active = scrape.Find("smg_worker_requests_active");
  ASSERT_NE(active, nullptr);
  EXPECT_EQ(active->samples.size(), 2u);  // one per worker
  LabelMatch ok[] = {{"status_code", "200"}};
  EXPECT_GT(scrape.Sum("smg_http_responses_total", ok).value_or(0), 0);
}

TEST(DeploymentSimTest, CountersMoveUnderTrafficAndFreezeWhenIdle) {
  DeploymentSimOptions busy_options;
  busy_options.requests_per_second = 40;
  auto busy = Started(busy_options);
  Scrape first = ScrapePod(*busy, "chat-server-0");
  const auto ttft_count = [](const Scrape& scrape) {
    return scrape.Histogram("vllm:time_to_first_token_seconds")->count;
  };
  Scrape second;
  WaitUntil([&] {  // a request has finished since the first scrape
    second = ScrapePod(*busy, "chat-server-0");
    return ttft_count(second) > ttft_count(first);
  });
  for (const char* name : {"vllm:prefix_cache_queries", "vllm:prefix_cache_hits",
                           "vllm:generation_tokens", "vllm:prompt_tokens"}) {
    EXPECT_GE(SumOr(second, name), SumOr(first, name)) << name;
  }
  EXPECT_GT(ttft_count(second), ttft_count(first));

  DeploymentSimOptions idle_options;
  idle_options.idle = true;
  auto idle = Started(idle_options);
  std::string a, b;
  Scrape idle_scrape = ScrapePod(*idle, "chat-server-0", &a);
  LetTimePass(kIdleWatch);
  ScrapePod(*idle, "chat-server-0", &b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(SumOr(idle_scrape, "vllm:num_requests_running"), 0);
  EXPECT_EQ(idle_scrape.Histogram("vllm:time_to_first_token_seconds")->count, 0);
}

TEST(DeploymentSimTest, SeededModelIsDeterministic) {
  DeploymentSimOptions options = PrefillDecode("sglang");
  options.seed = 42;
  auto one = Started(options);
  auto two = Started(options);
  for (const std::string& pod : {std::string("chat-prompt-0"), std::string("chat-generation-0")}) {
    EXPECT_EQ(one->MetricsAt(pod, 2500ms), two->MetricsAt(pod, 2500ms)) << pod;
    EXPECT_NE(one->MetricsAt(pod, 0ms), one->MetricsAt(pod, 2500ms)) << pod;
  }
  options.seed = 43;
  auto other = Started(options);
  EXPECT_NE(one->MetricsAt("chat-prompt-0", 2500ms), other->MetricsAt("chat-prompt-0", 2500ms));
  EXPECT_EQ(one->Objects().model_deployments.at(0).metadata.uid,
            two->Objects().model_deployments.at(0).metadata.uid);
}

TEST(DeploymentSimTest, FaultsBehaveThroughTheScrapeClient) {
  DeploymentSimOptions options;
  options.roles = {{"server", deployment::RoleKind::kServer, 9, 1, {}}};
  options.faults = {
      {"chat-server-1", PodFault::kHang},     {"chat-server-2", PodFault::kSlowBody},
      {"chat-server-3", PodFault::kOversize}, {"chat-server-4", PodFault::kGzipBomb},
      {"chat-server-5", PodFault::kHttp500},  {"chat-server-6", PodFault::kRedirect},
      {"chat-server-7", PodFault::kGarbage},  {"chat-server-8", PodFault::kUntrustedTls}};
  auto sim = Started(options);
  net::ClientOptions client_options;
  client_options.fetch_timeout = 800ms;
  net::HttpClient client(client_options);
  std::vector<net::FetchRequest> batch;
  for (const std::string& pod : sim->PodNames()) batch.push_back({sim->PodUrl(pod), {}});
  auto results = client.FetchAll(batch, Clock::now() + 3s);
  ASSERT_EQ(results.size(), 9u);
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  EXPECT_EQ(results[1].error, net::FetchError::kTimeout) << results[1].message;
  EXPECT_EQ(results[2].error, net::FetchError::kTimeout) << results[2].message;
  EXPECT_EQ(results[3].error, net::FetchError::kTooLarge) << results[3].message;
  EXPECT_EQ(results[4].error, net::FetchError::kTooLarge) << results[4].message;
  EXPECT_EQ(results[5].error, net::FetchError::kHttpStatus);
  EXPECT_EQ(results[5].status, 500);
  EXPECT_EQ(results[6].error, net::FetchError::kHttpStatus);
  EXPECT_EQ(results[6].status, 302);
  EXPECT_TRUE(results[6].location.starts_with("http://127.0.0.1:")) << results[6].location;
  ASSERT_TRUE(results[7].ok()) << results[7].message;
  Scrape garbage;
  std::string error;
  EXPECT_FALSE(garbage.Parse(results[7].body, {}, &error));
  EXPECT_EQ(results[8].error, net::FetchError::kTls) << results[8].message;
  EXPECT_TRUE(sim->PodUrl("chat-server-8").starts_with("https://"));
  EXPECT_GE(sim->PeakConcurrentScrapes(), 2u);
  EXPECT_GE(sim->ScrapesServed(), 8u);  // the TLS one never got past its handshake

  // Faults change at runtime, and clear.
  ASSERT_TRUE(sim->SetFault("chat-server-0", PodFault::kHttp500));
  EXPECT_EQ(Fetch(sim->PodUrl("chat-server-0")).status, 500);
  ASSERT_TRUE(sim->SetFault("chat-server-5", PodFault::kNone));
  EXPECT_TRUE(Fetch(sim->PodUrl("chat-server-5")).ok());
  EXPECT_FALSE(sim->SetFault("no-such-pod", PodFault::kHang));
}

TEST(DeploymentSimTest, ShortestScrapeGapIsTheClosestTwoAsksOfOnePod) {
  DeploymentSimOptions options;
  options.roles = {{"server", deployment::RoleKind::kServer, 2, 1, {}}};
  auto sim = Started(options);
  EXPECT_EQ(sim->ShortestScrapeGap(), std::chrono::milliseconds::max());  // nobody asked twice
  ASSERT_TRUE(Fetch(sim->PodUrl("chat-server-0")).ok());
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(Fetch(sim->PodUrl("chat-server-1")).ok());  // another Pod: not a gap
  EXPECT_EQ(sim->ShortestScrapeGap(), std::chrono::milliseconds::max());
  std::this_thread::sleep_for(450ms);
  ASSERT_TRUE(Fetch(sim->PodUrl("chat-server-0")).ok());
  const std::chrono::milliseconds first = sim->ShortestScrapeGap();
  EXPECT_GE(first, 500ms);
  EXPECT_LT(first, std::chrono::milliseconds::max());
  ASSERT_TRUE(Fetch(sim->PodUrl("chat-server-0")).ok());  // at once: the shorter gap wins
  EXPECT_LT(sim->ShortestScrapeGap(), first);
}

TEST(DeploymentSimTest, CounterResetDropsCounters) {
  DeploymentSimOptions options;
  options.faults = {{"chat-server-0", PodFault::kCounterReset}};
  auto sim = Started(options);
  Scrape first = ScrapePod(*sim, "chat-server-0");
  Scrape second = ScrapePod(*sim, "chat-server-0");
  EXPECT_LT(SumOr(second, "vllm:prefix_cache_queries"), SumOr(first, "vllm:prefix_cache_queries"));
  EXPECT_LT(second.Histogram("vllm:time_to_first_token_seconds")->count,
            first.Histogram("vllm:time_to_first_token_seconds")->count);
}

TEST(DeploymentSimTest, RestartIsANewPodWithFreshCounters) {
  auto sim = Started({});
  const std::string uid = sim->Objects().pods.at(0).metadata.uid;
  Scrape before = ScrapePod(*sim, "chat-server-0");
  ASSERT_TRUE(sim->SetFault("chat-server-0", PodFault::kRestart));
  const std::string new_uid = sim->Objects().pods.at(0).metadata.uid;
  EXPECT_NE(new_uid, uid);
  Scrape after = ScrapePod(*sim, "chat-server-0");
  EXPECT_LT(SumOr(after, "vllm:prefix_cache_queries"), SumOr(before, "vllm:prefix_cache_queries"));
  // While set, every served scrape restarts the Pod again.
  EXPECT_NE(sim->Objects().pods.at(0).metadata.uid, new_uid);
}

TEST(DeploymentSimTest, ObjectsDescribeThePods) {
  DeploymentSimOptions options = PrefillDecode("vllm");
  options.name = "chat";
  options.ns = "team";
  options.router = "llm-d-router";
  options.kv_cache = true;
  options.faults = {{"chat-prompt-0", PodFault::kUntrustedTls}};
  options.objects_file = test_paths::ScratchFile("deployment_sim_objects.json");
  auto sim = Started(options);

  deployment::ObjectSet decoded;
  std::string error;
  ASSERT_OK(deployment::DecodeObjects(sim->ObjectsJson(), &decoded));
  ASSERT_EQ(decoded.model_deployments.size(), 1u);
  const deployment::ModelDeployment& md = decoded.model_deployments[0];
  EXPECT_EQ(md.metadata.name, "chat");
  EXPECT_EQ(md.metadata.namespace_, "team");
  EXPECT_EQ(md.engine, "vllm");
  EXPECT_TRUE(md.kv_cache);
  ASSERT_EQ(md.roles.size(), 2u);
  EXPECT_EQ(md.roles[0].kind, "prefill");
  EXPECT_EQ(md.roles[1].size, 1);
  ASSERT_TRUE(md.router);
  EXPECT_EQ(md.router->name, "llm-d-router");
  ASSERT_EQ(decoded.pods.size(), 3u);
  ASSERT_EQ(decoded.replica_sets.size(), 1u);
  ASSERT_EQ(decoded.deployments.size(), 1u);
  EXPECT_EQ(decoded.deployments[0].metadata.name, "chat-router");

  for (const deployment::Pod& pod : decoded.pods) {
    SCOPED_TRACE(pod.metadata.name);
    EXPECT_EQ(pod.pod_ip, "127.0.0.1");
    EXPECT_EQ(pod.metadata.labels.at("app.kubernetes.io/name"), "model-deployment");
    EXPECT_EQ(pod.metadata.labels.at("app.kubernetes.io/instance"), "chat");
    EXPECT_EQ(pod.metadata.annotations.at("prometheus.io/scrape"), "true");
    EXPECT_EQ(pod.metadata.annotations.at("prometheus.io/path"), "/metrics");
    const std::string port = pod.metadata.annotations.at("prometheus.io/port");
    ASSERT_EQ(pod.containers.size(), 1u);
    EXPECT_EQ(std::to_string(pod.containers[0].ports.at(0).container_port), port);
    ASSERT_EQ(pod.metadata.owner_references.size(), 1u);
    const deployment::OwnerReference& owner = pod.metadata.owner_references[0];
    EXPECT_TRUE(owner.controller);
    if (pod.metadata.labels.contains("modeldeployment.gpustack.ai/router")) {
      EXPECT_EQ(pod.metadata.labels.at("modeldeployment.gpustack.ai/router"), "llm-d-router");
      EXPECT_EQ(owner.kind, "ReplicaSet");
      EXPECT_EQ(owner.uid, decoded.replica_sets[0].metadata.uid);
      EXPECT_EQ(owner.name, decoded.replica_sets[0].metadata.name);
      EXPECT_TRUE(pod.metadata.name.starts_with(owner.name + "-"));
    } else {
      EXPECT_EQ(owner.kind, "ModelDeployment");
      EXPECT_EQ(owner.uid, md.metadata.uid);
      EXPECT_NE(md.FindRole(pod.metadata.labels.at("app.kubernetes.io/component")), nullptr);
    }
    const bool tls = pod.metadata.name == "chat-prompt-0";
    EXPECT_EQ(pod.metadata.annotations.contains("prometheus.io/scheme"), tls);
    if (tls) {
      EXPECT_EQ(pod.metadata.annotations.at("prometheus.io/scheme"), "https");
    }
  }
  const auto& rs_owner = decoded.replica_sets[0].metadata.owner_references.at(0);
  EXPECT_EQ(rs_owner.kind, "Deployment");
  EXPECT_EQ(rs_owner.uid, decoded.deployments[0].metadata.uid);
  const auto& dep_owner = decoded.deployments[0].metadata.owner_references.at(0);
  EXPECT_EQ(dep_owner.kind, "ModelDeployment");
  EXPECT_EQ(dep_owner.uid, md.metadata.uid);

  // The file holds the same objects, and follows runtime changes.
  deployment::FileObjectSource file;
  ASSERT_OK(file.Load(options.objects_file));
  ASSERT_TRUE(sim->SetFault("chat-prompt-0", PodFault::kNone));
  ASSERT_OK(file.Load(options.objects_file));
  std::vector<deployment::Pod> pods;
  ASSERT_TRUE(file.ListPods("team", "app.kubernetes.io/instance=chat", &pods).ok());
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& pod : pods)
    EXPECT_FALSE(pod.metadata.annotations.contains("prometheus.io/scheme"));
  sim.reset();
  std::remove(options.objects_file.c_str());
}

TEST(DeploymentSimTest, PaddingReachesBenchmarkSize) {
  DeploymentSimOptions options;
  options.padding_bytes = 200 * 1024;
  auto sim = Started(options);
  std::string body;
  Scrape scrape = ScrapePod(*sim, "chat-server-0", &body);
  EXPECT_GE(body.size(), 200u * 1024);
  EXPECT_LT(body.size(), 260u * 1024);
  EXPECT_TRUE(scrape.Sum("vllm:num_requests_running"));
}

TEST(DeploymentSimTest, RejectsBadOptions) {
  DeploymentSimOptions options;
  options.engine = "tgi";
  DeploymentSim bad_engine(options);
  std::string error;
  EXPECT_FALSE(Ok(bad_engine.Start(), &error));
  EXPECT_NE(error.find("engine"), std::string::npos);
  options = {};
  options.faults = {{"nobody", PodFault::kHang}};
  DeploymentSim bad_fault(options);
  EXPECT_FALSE(Ok(bad_fault.Start(), &error));
  EXPECT_NE(error.find("nobody"), std::string::npos);
}

TEST(DeploymentSimTest, FaultNamesRoundTrip) {
  for (PodFault fault :
       {PodFault::kNone, PodFault::kHang, PodFault::kSlowBody, PodFault::kOversize,
        PodFault::kGzipBomb, PodFault::kHttp500, PodFault::kRedirect, PodFault::kGarbage,
        PodFault::kCounterReset, PodFault::kRestart, PodFault::kUntrustedTls}) {
    EXPECT_EQ(ParsePodFault(PodFaultName(fault)), fault);
  }
  EXPECT_EQ(ParsePodFault("gzip_bomb"), PodFault::kGzipBomb);
  EXPECT_FALSE(ParsePodFault("meltdown"));
}

TEST(ExporterNumbersTest, ClientLibrarySpellings) {
  EXPECT_EQ(PythonFloat(1), "1.0");
  EXPECT_EQ(PythonFloat(0), "0.0");
  EXPECT_EQ(PythonFloat(14363), "14363.0");
  EXPECT_EQ(PythonFloat(8128902), "8.128902e+06");
  EXPECT_EQ(PythonFloat(2097152), "2.097152e+06");
  EXPECT_EQ(PythonFloat(4.04242432e9), "4.04242432e+09");
  EXPECT_EQ(PythonFloat(1.2e10), "1.2e+010");
  EXPECT_EQ(PythonFloat(0.001), "0.001");
  EXPECT_EQ(PythonFloat(27.006403835998753), "27.006403835998753");
  EXPECT_EQ(GoFloat(11231), "11231");
  EXPECT_EQ(GoFloat(1), "1");
  EXPECT_EQ(GoFloat(1294.602395982995), "1294.602395982995");
  EXPECT_EQ(GoFloat(3.124776801655127e-05), "3.124776801655127e-05");
  EXPECT_EQ(GoFloat(1e6), "1e+06");
  EXPECT_EQ(RustFloat(354), "354");
  EXPECT_EQ(RustFloat(0.61), "0.61");
  EXPECT_EQ(RustFloat(1e6), "1000000");
}

}  // namespace
}  // namespace modelmetrics::sim
