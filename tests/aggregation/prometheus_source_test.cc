// The Prometheus-compatible source against a loopback fake of /api/v1/query that holds the samples
// of real exposition bodies at known instants. The central check: for the same two bodies, the
// snapshot from the store equals the direct-scrape merge of those bodies byte for byte (the
// snapshot's own timestamp aside), for every exporter; then the store's own cases (one scrape, a
// reset inside the range, a down, stale or absent target, two targets for one Pod, query errors,
// credentials, the answer's cap) and the decoder's bounds.
#include "aggregation/prometheus_source.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "aggregation/aggregator.h"
#include "aggregation/exporter_registry.h"
#include "aggregation/fake_store.h"
#include "aggregation/merge.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/prometheus_query.h"
#include "aggregation/source_compare.h"
#include "aggregation/test_builders.h"
#include "kube/object_file.h"
#include "modelmetrics/parser.h"
#include "net/http_server.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using namespace std::chrono_literals;
using testing::CurrentLlmdRouterBody;
using testing::DropLines;
using testing::FakeStore;
using testing::Fixture;
using testing::FromStore;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;
using testing::MetricsPDModelDeployment;
using testing::MetricsRouterPod;
using testing::MetricsServerPod;
using testing::SetSample;
using testing::SGLangPDResponse;
using testing::SGLangPriorityPDResponse;
using testing::SGLangSchedulersBody;
using testing::StoreOptions;
using testing::T0;

using testing::Ms;

// Both ways for one deployment: scrapes at T0() and T0() + 15 s, read 5 s later.
void ExpectAgreement(const ModelDeployment& md, const std::vector<Pod>& pods,
                     const std::vector<std::string>& first,
                     const std::vector<std::string>& second) {
  FakeStore store;
  const WallTime t0 = T0();
  const WallTime t1 = T0() + 15s;
  for (size_t i = 0; i < pods.size(); ++i) {
    store.AddScrape(pods[i].metadata.name, t0, first[i]);
    store.AddScrape(pods[i].metadata.name, t1, second[i]);
  }
  const Snapshot direct =
      testing::DirectReads(md, pods, first, second, std::vector<WallTime>(pods.size(), t0),
                           std::vector<WallTime>(pods.size(), t1), t1);
  const Snapshot stored = FromStore(md, pods, StoreOptions(store, t1 + 5s), t1);
  EXPECT_EQ(SnapshotToJson(stored), SnapshotToJson(direct));
  EXPECT_FALSE(direct.latency.empty() && direct.traffic.empty() && direct.processing.empty());
}

TEST(PrometheusSourceAgreement, VllmServer) {
  ExpectAgreement(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")},
                  {Fixture("vllm_server_busy_first.prom")},
                  {Fixture("vllm_server_busy_second.prom")});
}

TEST(PrometheusSourceAgreement, VllmIdleAndAbsentSeries) {
  const std::string busy = Fixture("vllm_server_busy_first.prom");
  ExpectAgreement(MetricsModelDeployment(),
                  {MetricsEnginePod("chat-0", "u0"), MetricsEnginePod("chat-1", "u1")},
                  {Fixture("vllm_server_idle_first.prom"), DropLines(busy, "vllm:inter_token")},
                  {Fixture("vllm_server_idle_first.prom"),
                   DropLines(Fixture("vllm_server_busy_second.prom"), "vllm:inter_token")});
}

TEST(PrometheusSourceAgreement, SglangServer) {
  ModelDeployment md = MetricsModelDeployment();
  md.engine = "sglang";
  ExpectAgreement(md, {MetricsEnginePod("chat-0", "u0")},
                  {Fixture("sglang_server_busy_first.prom")},
                  {Fixture("sglang_server_busy_second.prom")});
}

// A P/D pair, and the same with priority scheduling, where the store holds the priority=""
// totals beside the parts: it reads the totals, as a direct read does.
TEST(PrometheusSourceAgreement, SglangPrefillDecodeTransfer) {
  const ModelDeployment md = MetricsPDModelDeployment("sglang");
  for (const auto body : {&SGLangPDResponse, &SGLangPriorityPDResponse}) {
    ExpectAgreement(md,
                    {MetricsEnginePod("chat-decode-0", "d0", "generation"),
                     MetricsEnginePod("chat-prefill-0", "p0", "prompt")},
                    {body(1), body(1)}, {body(2), body(2)});
  }
}

// SGLang with --enable-metrics-for-all-schedulers: the store holds every rank's copy, and reads
// one per attention-DP group from the Pod's arguments, as a direct read does.
TEST(PrometheusSourceAgreement, SglangAllSchedulers) {
  ModelDeployment md = MetricsModelDeployment();
  md.engine = "sglang";
  Pod pod = MetricsServerPod(
      "chat-0", {"python3", "-m", "sglang.launch_server", "--enable-metrics-for-all-schedulers"});
  auto body = [](int n) {
    return SGLangSchedulersBody({{.tp_rank = 0, .running = 3, .input_tokens = 10 * n},
                                 {.tp_rank = 1, .running = 3, .input_tokens = 10 * n}},
                                4 * n);
  };
  ExpectAgreement(md, {pod}, {body(1)}, {body(2)});
}

// Exporters that write their older names: the store reads them as a direct read does, under the
// current names' resets and baselines.
TEST(PrometheusSourceAgreement, OlderNames) {
  ExpectAgreement(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")},
                  {testing::OlderVllmBody(Fixture("vllm_server_busy_first.prom"))},
                  {testing::OlderVllmBody(Fixture("vllm_server_busy_second.prom"))});
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router", .replicas = 1};
  ExpectAgreement(md, {MetricsRouterPod("chat-router-a", "r0", "llm-d-router")},
                  {testing::OlderLlmdRouterBody(10, 1)}, {testing::OlderLlmdRouterBody(70, 4)});
}

TEST(PrometheusSourceAgreement, Routers) {
  for (const auto& [router, first, second] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"vllm-router", Fixture("vllm_router_server_first.prom"),
            Fixture("vllm_router_server_second.prom")},
           {"sglang-gateway", Fixture("sglang_gateway_no_workers.prom"),
            SetSample(Fixture("sglang_gateway_no_workers.prom"), "smg_router_requests_total",
                      "9")}}) {
    SCOPED_TRACE(router);
    ModelDeployment md = MetricsModelDeployment();
    md.router = Router{.name = router, .replicas = 1};
    ExpectAgreement(md, {MetricsRouterPod("chat-router-a", "r0", router)}, {first}, {second});
  }
}

// The llm-d router: TTFT read from streaming requests only, and a first error between the reads.
TEST(PrometheusSourceAgreement, LlmdRouter) {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router", .replicas = 1};
  ExpectAgreement(md, {MetricsRouterPod("chat-router-a", "r0", "llm-d-router")},
                  {CurrentLlmdRouterBody({.streamed = 10, .non_streamed = 10})},
                  {CurrentLlmdRouterBody({.streamed = 40, .non_streamed = 40, .errors = 2})});
}

TEST(PrometheusSourceAgreement, CounterResetBetweenTheTwoScrapes) {
  const std::string first = Fixture("vllm_server_busy_second.prom");
  const std::string second = Fixture("vllm_server_busy_first.prom");  // every counter lower
  ExpectAgreement(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")}, {first}, {second});
}

// The cases only a store has.

TEST(PrometheusSource, OneScrapeAwaitsASecondSample) {
  FakeStore store;
  store.AddScrape("chat-0", T0(), Fixture("vllm_server_busy_first.prom"));
  const Snapshot snapshot = FromStore(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")},
                                      StoreOptions(store, T0() + 1s), T0() + 1s);
  EXPECT_FALSE(snapshot.processing.empty());
  EXPECT_TRUE(snapshot.latency.empty());
  size_t awaiting = 0;
  for (const Missing& m : snapshot.missing) awaiting += m.reason == reason::kAwaiting;
  EXPECT_EQ(awaiting, 4u);  // ttft, tpot, itl, local-prefix
}

TEST(PrometheusSource, ADecreaseInsideTheRangeIsAResetEvenWhenTheLastValueIsHigher) {
  FakeStore store;
  const std::string low = Fixture("vllm_server_busy_first.prom");
  const std::string high = Fixture("vllm_server_busy_second.prom");
  store.AddScrape("chat-0", T0(), high);
  store.AddScrape("chat-0", T0() + 10s, low);  // the process restarted
  store.AddScrape("chat-0", T0() + 20s, high);
  const Snapshot snapshot = FromStore(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")},
                                      StoreOptions(store, T0() + 21s), T0() + 21s);
  EXPECT_TRUE(snapshot.latency.empty());
  EXPECT_TRUE(snapshot.cache_hits.empty());
  std::map<std::string, std::string> reasons;
  for (const Missing& m : snapshot.missing) reasons[m.source] = m.reason;
  EXPECT_EQ(reasons["vllm:time_to_first_token_seconds"], reason::kCounterReset);
  EXPECT_EQ(reasons["local-prefix"], reason::kCacheReset);
}

TEST(PrometheusSource, TheWindowIsAnchoredAtTheNewestScrape) {
  FakeStore store;
  const std::string body = Fixture("vllm_server_busy_first.prom");
  for (int s = 0; s <= 300; s += 30)
    store.AddScrape("chat-0", T0() + std::chrono::seconds(s), body);
  PrometheusSourceOptions options = StoreOptions(store, T0() + 310s);
  options.window = 60s;
  const Snapshot snapshot =
      FromStore(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")}, options, T0());
  ASSERT_FALSE(snapshot.cache_hits.empty() && snapshot.missing.empty());
  for (const Missing& m : snapshot.missing) {
    if (m.source == "local-prefix") {
      EXPECT_EQ(m.reason, reason::kIdleWindow);
    }
  }
  ASSERT_FALSE(snapshot.processing.empty());
  EXPECT_EQ(snapshot.processing[0].observed_at, T0() + 300s);
  // Same query a moment later: the same instants, so the same snapshot.
  options.now = [] { return T0() + 319s; };
  EXPECT_EQ(SnapshotToJson(FromStore(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")},
                                     options, T0())),
            SnapshotToJson(snapshot));
  const std::vector<std::string> bodies = store.bodies();
  ASSERT_FALSE(bodies.empty());
  EXPECT_NE(bodies[0].find(FormEncode("[150s]")), std::string::npos) << bodies[0];
  EXPECT_NE(bodies[0].find(FormEncode("namespace=\"team\"")), std::string::npos);
  EXPECT_NE(bodies[0].find(FormEncode("pod=~\"chat-0\"")), std::string::npos);
}

// Remote write can deliver part of a scrape before the rest: the newest scrape, missing series
// the one before had, is passed over for the newest whole one.
TEST(PrometheusSource, APartlyArrivedScrapeIsPassedOver) {
  FakeStore store;
  const std::string first = Fixture("vllm_server_busy_first.prom");
  const std::string second = Fixture("vllm_server_busy_second.prom");
  store.AddScrape("chat-0", T0(), first);
  store.AddScrape("chat-0", T0() + 15s, second);
  store.AddScrape("chat-0", T0() + 20s, DropLines(second, "vllm:inter_token_latency_seconds"));
  const ModelDeployment md = MetricsModelDeployment();
  const std::vector<Pod> pods = {MetricsEnginePod("chat-0", "u0")};
  const Snapshot stored = FromStore(md, pods, StoreOptions(store, T0() + 21s), T0() + 15s);
  const Snapshot direct =
      testing::DirectReads(md, pods, {first}, {second}, {T0()}, {T0() + 15s}, T0() + 15s);
  EXPECT_EQ(SnapshotToJson(stored), SnapshotToJson(direct));
  // Once a later scrape is whole again (the series really went), it is read.
  store.AddScrape("chat-0", T0() + 25s, DropLines(second, "vllm:inter_token_latency_seconds"));
  const Snapshot later = FromStore(md, pods, StoreOptions(store, T0() + 26s), T0() + 25s);
  ASSERT_FALSE(later.processing.empty());
  EXPECT_EQ(later.processing[0].observed_at, T0() + 25s);
}

TEST(PrometheusSource, DownStaleAbsentAndDoubledTargetsAreMissing) {
  FakeStore store;
  const std::string body = Fixture("vllm_server_busy_first.prom");
  store.AddScrape("chat-down", T0(), body);
  store.AddUp("chat-down", T0() + 10s, 0);
  store.AddScrape("chat-stale", T0() - 100s, body);
  store.AddScrape("chat-twice", T0(), body, "10.0.0.1:8000");
  store.AddScrape("chat-twice", T0(), body, "10.0.0.2:8000");
  store.AddScrape("chat-two-jobs", T0(), body, "10.0.0.3:8000", "team", "pods");
  store.AddScrape("chat-two-jobs", T0(), body, "10.0.0.3:8000", "team", "vllm");
  store.AddScrape("chat-ok", T0(), body);
  const std::vector<Pod> pods = {
      MetricsEnginePod("chat-absent", "a"), MetricsEnginePod("chat-down", "d"),
      MetricsEnginePod("chat-ok", "o"),     MetricsEnginePod("chat-stale", "s"),
      MetricsEnginePod("chat-twice", "t"),  MetricsEnginePod("chat-two-jobs", "j")};
  const Snapshot snapshot =
      FromStore(MetricsModelDeployment(), pods, StoreOptions(store, T0() + 11s), T0());
  std::map<std::string, std::string> scrape;
  for (const Missing& m : snapshot.missing) {
    if (m.source == "scrape") scrape[m.pod] = m.reason;
  }
  EXPECT_EQ(scrape["chat-absent"], "the store has no sample of the Pod in the last 210s");
  EXPECT_EQ(scrape["chat-down"],
            "the store's newest scrape of the Pod failed (up == 0 at 2026-11-29T16:13:25Z)");
  EXPECT_EQ(scrape["chat-stale"],
            "the store's newest sample of the Pod is older than 90s (at 2026-11-29T16:11:35Z)");
  EXPECT_TRUE(scrape["chat-twice"].starts_with(
      "the store holds the Pod's series from 2 targets (job \"pods\" instance \"10.0.0.1:8000\" "
      "and job \"pods\" instance \"10.0.0.2:8000\")"))
      << scrape["chat-twice"];
  EXPECT_TRUE(scrape["chat-two-jobs"].starts_with(
      "the store holds the Pod's series from 2 targets (job \"pods\" instance \"10.0.0.3:8000\" "
      "and job \"vllm\" instance \"10.0.0.3:8000\")"))
      << scrape["chat-two-jobs"];
  EXPECT_FALSE(scrape.contains("chat-ok"));
  EXPECT_TRUE(snapshot.partial);
}

TEST(PrometheusSource, QueryErrorsReachEveryPodAndTheAggregatorAnswers503) {
  FakeStore store;
  store.Fail(422, R"({"status":"error","errorType":"execution","error":"query timed out"})");
  ObjectSet objects;
  objects.model_deployments.push_back(MetricsModelDeployment());
  objects.pods = {MetricsEnginePod("chat-0", "chat-0-uid")};
  FileObjectSource source;
  source.Set(objects);
  AggregatorOptions options;
  options.pod_source = std::make_shared<PrometheusSource>(StoreOptions(store, T0()));
  Aggregator aggregator(&source, options);
  Snapshot snapshot;
  const Status status = aggregator.Get("team", "chat", &snapshot);
  EXPECT_EQ(status.code(), 503);
  EXPECT_EQ(status.message(),
            fmt::format("all ModelDeployment metrics Pods are unreadable: query {}/api/v1/query: "
                        "HTTP 422: the store answered execution: query timed out",
                        store.url()));
}

TEST(PrometheusSource, ThroughTheAggregatorWithCredentialsAndALimitOfItsOwn) {
  FakeStore store;
  ObjectSet objects;
  objects.model_deployments.push_back(MetricsModelDeployment());
  objects.model_deployments[0].roles[0].replicas = 3;
  for (int i = 0; i < 3; ++i) {
    const std::string name = fmt::format("chat-{}", i);
    objects.pods.push_back(MetricsEnginePod(name, name + "-uid"));
    store.AddScrape(name, T0(), Fixture("vllm_server_busy_first.prom"));
    store.AddScrape(name, T0() + 15s, Fixture("vllm_server_busy_second.prom"));
  }
  FileObjectSource source;
  source.Set(objects);
  PrometheusSourceOptions store_options = StoreOptions(store, T0() + 16s);
  store_options.bearer_token = "s3cret";
  store_options.pod_limit = 2;
  store_options.pods_per_query = 1;  // two queries
  AggregatorOptions options;
  options.pod_source = std::make_shared<PrometheusSource>(store_options);
  Aggregator aggregator(&source, options);
  Snapshot snapshot;
  ASSERT_TRUE(aggregator.Get("team", "chat", &snapshot).ok());
  EXPECT_EQ(store.authorization(), "Bearer s3cret");
  EXPECT_EQ(store.bodies().size(), 2u);
  EXPECT_TRUE(snapshot.partial);
  EXPECT_TRUE(std::any_of(snapshot.missing.begin(), snapshot.missing.end(),
                          [](const Missing& m) { return m.reason == reason::kPodLimit; }));
  EXPECT_EQ(testing::FindGauge(snapshot.processing, "running", "engine/server")->pod_count, 2);

  store_options.bearer_token.clear();
  store_options.basic_user = "reader";
  store_options.basic_password = "pw";
  PrometheusSource basic(store_options);
  basic.Read(objects.model_deployments[0], objects.pods, SteadyClock::now() + 5s);
  EXPECT_EQ(store.authorization(), "Basic cmVhZGVyOnB3");
}

TEST(PrometheusSource, TheAnswerIsCapped) {
  FakeStore store;
  store.AddScrape("chat-0", T0(), Fixture("vllm_server_busy_first.prom"));
  PrometheusSourceOptions options = StoreOptions(store, T0() + 1s);
  options.max_response_bytes = 1024;
  const Snapshot snapshot =
      FromStore(MetricsModelDeployment(), {MetricsEnginePod("chat-0", "u0")}, options, T0());
  ASSERT_EQ(snapshot.missing.size(), 1u);
  EXPECT_EQ(
      snapshot.missing[0].reason,
      fmt::format("query {}/api/v1/query: the answer exceeds the response size cap", store.url()));
}

TEST(PrometheusSource, OptionsAreChecked) {
  PrometheusSourceOptions options;
  EXPECT_NE(ValidatePrometheusSourceOptions(options), "");
  options.url = "http://127.0.0.1:9090";
  EXPECT_EQ(ValidatePrometheusSourceOptions(options), "");
  options.pod_label = "pod-name";
  EXPECT_NE(ValidatePrometheusSourceOptions(options), "");
  options.pod_label = "pod";
  options.window = 0ms;
  EXPECT_NE(ValidatePrometheusSourceOptions(options), "");
}

// The decoder.

TEST(DecodeMatrix, ReadsSeriesAndRejectsWhatIsNotAMatrix) {
  std::vector<StoreSeries> series;
  std::string error;
  ASSERT_OK(DecodeMatrix(
      R"({"status":"success","warnings":["w"],"data":{"resultType":"matrix","result":[
          {"metric":{"__name__":"x","pod":"p"},"values":[[1700000000.5,"1"],[1700000001,"+Inf"]]}]}})",
      MatrixLimits{}, &series));
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].name, "x");
  EXPECT_EQ(series[0].labels, (std::vector<LabelPair>{{"pod", "p"}}));
  ASSERT_EQ(series[0].samples.size(), 2u);
  EXPECT_EQ(series[0].samples[0].ms, 1700000000500);
  EXPECT_TRUE(std::isinf(series[0].samples[1].value));

  for (
      const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
          {"", "the answer is not JSON"},
          {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
           "the answer's resultType is \"vector\", not \"matrix\""},
          {R"({"status":"error","errorType":"bad_data","error":"parse error"})",
           "the store answered bad_data: parse error"},
          {R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,2]]}]}})",
           "a sample is not [time, \"value\"]"},
          {R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[["1","2"]]}]}})",
           "a sample is not [time, \"value\"]"},
          {R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"x"]]}]}})",
           "a sample value is not a number"},
          {R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":{}}}]}})",
           "a sample or label set has an unexpected shape"},
      }) {
    EXPECT_FALSE(Ok(DecodeMatrix(body, MatrixLimits{}, &series), &error)) << body;
    EXPECT_TRUE(error.starts_with(message)) << body << " -> " << error;
    EXPECT_TRUE(series.empty());
  }
}

TEST(DecodeMatrix, Limits) {
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  for (int i = 0; i < 10; ++i) {
    body += fmt::format(R"({}{{"metric":{{"__name__":"x","i":"{}"}},"values":[[1,"1"],[2,"2"]]}})",
                        i == 0 ? "" : ",", i);
  }
  body += "]}}";
  std::vector<StoreSeries> series;
  std::string error;
  EXPECT_OK(DecodeMatrix(body, MatrixLimits{}, &series));
  EXPECT_FALSE(Ok(DecodeMatrix(body, MatrixLimits{.max_series = 9}, &series), &error));
  EXPECT_EQ(error, "the answer has more than 9 series");
  EXPECT_FALSE(Ok(DecodeMatrix(body, MatrixLimits{.max_samples = 19}, &series), &error));
  EXPECT_EQ(error, "the answer has more than 19 samples");
  EXPECT_FALSE(Ok(DecodeMatrix(body, MatrixLimits{.max_labels = 0}, &series), &error));
  EXPECT_EQ(error, "a series has more than 0 labels");
}

TEST(PromqlText, QuotingAndRegexes) {
  EXPECT_EQ(PromqlString("a\"b\\c"), R"("a\"b\\c")");
  const std::vector<std::string> names = {"chat-0", "x.y", "vllm:a"};
  EXPECT_EQ(RegexAlternation(names), R"(chat-0|x\.y|vllm:a)");
  EXPECT_EQ(PromqlString(RegexAlternation(names)), R"("chat-0|x\\.y|vllm:a")");
  EXPECT_EQ(FormEncode("a b=&\"{}"), "a%20b%3D%26%22%7B%7D");
}

}  // namespace
}  // namespace modelmetrics::deployment
