// The custom metrics API (custom.metrics.k8s.io) as the HPA controller reads it from
// `modelmetrics serve`: both versions' shapes, object and pods metrics, `*`, the missing-value
// rule (an error, never a number), RBAC on RESOURCE/METRIC, discovery, reads shared between
// callers, bad requests, and the API off by default.
#include <atomic>
#include <string>

#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "aggregation/baseline_store.h"
#include "aggregation/exporters/builtin.h"
#include "aggregation/merge.h"
#include "aggregation/test_builders.h"
#include "apiserver/api_server.h"
#include "apiserver/auth.h"
#include "apiserver/custom_metrics_api.h"
#include "kube/object_file.h"
#include "net/http_client.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::MetricsEnginePod;
using testing::Parse;
using testing::T0;

constexpr std::string_view kCustomApi = "/apis/custom.metrics.k8s.io/";
const std::string kChatMetrics =
    "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/modeldeployments.worker.gpustack.ai/chat/";

std::string EngineBody(int waiting, double kv, double ttft_count) {
  return fmt::format(
             "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"
             "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting {}\n"
             "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc {}\n",
             waiting, kv) +
         testing::VllmHistogram("vllm:time_to_first_token_seconds", ttft_count / 10, ttft_count);
}

std::vector<Pod> EnginePods() {
  return {MetricsEnginePod("decode-0", "d0", "generation"),
          MetricsEnginePod("decode-1", "d1", "generation"),
          MetricsEnginePod("prefill-0", "p0", "prompt")};
}

// Two reads 10 s apart of the three Pods; with `fail_decode_1`, its second read fails.
Snapshot TwoReads(const ModelDeployment& md, bool fail_decode_1) {
  BaselineStore store;
  const std::vector<Pod> pods = EnginePods();
  SnapshotBuilder first(md, &store);
  for (const Pod& pod : pods) {
    first.MergePod(pod, Parse(EngineBody(0, 0.1, 0), exporters::kVllm), ReadTime::Replay(T0()));
  }
  first.Finish(T0());
  SnapshotBuilder second(md, &store);
  const ReadTime at = ReadTime::Replay(T0() + 10s);
  second.MergePod(pods[0], Parse(EngineBody(3, 0.25, 20), exporters::kVllm), at);
  if (fail_decode_1) {
    second.AddFailedPod(pods[1], "metrics endpoint returned HTTP 500");
  } else {
    second.MergePod(pods[1], Parse(EngineBody(5, 0.5, 20), exporters::kVllm), at);
  }
  second.MergePod(pods[2], Parse(EngineBody(1, 0.75, 40), exporters::kVllm), at);
  return second.Finish(T0() + 10s);
}

constexpr const char* kMetricsPolicy = R"(rules:
  - users: [hpa]
    namespaces: ["*"]
    verbs: [get]
    apiGroups: [custom.metrics.k8s.io]
    resources: ["*"]
  - users: [waiting-only]
    namespaces: [team]
    verbs: [get]
    apiGroups: [custom.metrics.k8s.io]
    resources: ["modeldeployments.worker.gpustack.ai/waiting"]
  - users: [snapshot-reader]
    namespaces: [team]
    verbs: [get]
    resources: ["modeldeployments/metrics"]
)";

class CustomMetricsServer {
 public:
  explicit CustomMetricsServer(bool enabled = true, std::chrono::milliseconds metrics_reuse =
                                                        ApiServerOptions{}.metrics_reuse_for) {
    ModelDeployment chat = testing::MetricsPDModelDeployment("vllm");
    ModelDeployment broken = chat;
    broken.metadata.name = "broken";
    // A stray Pod whose instance label names no ModelDeployment.
    std::vector<Pod> pods = EnginePods();
    Pod stray = MetricsEnginePod("stray-0", "s0", "prompt");
    stray.metadata.labels[std::string(kLabelInstance)] = "missing";
    pods.push_back(stray);
    objects_.Set({.model_deployments = {chat, broken}, .pods = pods});
    std::unique_ptr<TokenFileAuthenticator> authn;
    EXPECT_OK(TokenFileAuthenticator::Parse(
        "hpa-token,hpa,u1\nwaiting-token,waiting-only,u2\nsnapshot-token,snapshot-reader,u3",
        &authn));
    std::vector<PolicyRule> rules;
    EXPECT_OK(ParsePolicy(kMetricsPolicy, &rules));
    ApiServerOptions options;
    options.custom_metrics = enabled;
    options.objects = &objects_;
    options.reuse_for = 0ms;  // the snapshot path reads every time; metric calls reuse 5 s
    options.metrics_reuse_for = metrics_reuse;
    server_ = std::make_unique<ApiServer>(
        options,
        [this, chat, broken](std::string_view, std::string_view name, SteadyTime, Snapshot* out) {
          ++reads;
          if (name == "missing") return Status::NotFound("modeldeployments \"missing\" not found");
          if (fail_reads) return Status::Unavailable("every Pod read timed out");
          *out = TwoReads(name == "broken" ? broken : chat, name == "broken");
          return Status::Ok();
        },
        std::move(authn), std::make_unique<PolicyAuthorizer>(std::move(rules)));
    EXPECT_OK(server_->Start());
  }
  ~CustomMetricsServer() { server_->Stop(); }

  net::FetchResult Get(const std::string& path, const std::string& token = "hpa-token",
                       const std::string& accept = "") {
    net::HttpClient client(net::ClientOptions{});
    net::FetchRequest request{server_->url() + path, {{"Authorization", "Bearer " + token}}};
    if (!accept.empty()) request.headers.emplace_back("Accept", accept);
    return client.FetchAll(std::span(&request, 1), SteadyClock::now() + 10s).at(0);
  }
  Json GetJson(const std::string& path, int code = 200, const std::string& token = "hpa-token") {
    const net::FetchResult result = Get(path, token);
    EXPECT_EQ(result.status, code) << path << ": " << result.body;
    return Json::parse(result.body, nullptr, false);
  }

  std::atomic<int> reads{0};
  std::atomic<bool> fail_reads{false};

 private:
  FileObjectSource objects_;
  std::unique_ptr<ApiServer> server_;
};

TEST(CustomMetricsApi, AnObjectMetricOfOneRoleInBothVersions) {
  CustomMetricsServer server;
  const Json list = server.GetJson(kChatMetrics + "waiting?metricLabelSelector=role%3Dgeneration");
  EXPECT_EQ(list, Json::parse(R"({"kind":"MetricValueList",
    "apiVersion":"custom.metrics.k8s.io/v1beta2","metadata":{},"items":[{
    "describedObject":{"kind":"ModelDeployment","namespace":"team","name":"chat",
                       "apiVersion":"worker.gpustack.ai/v1alpha1"},
    "metric":{"name":"waiting","selector":{"matchLabels":{"role":"generation"}}},
    "timestamp":"2026-11-29T16:13:25Z","value":"8"}]})"));
  // Without a selector: every engine scope, as the snapshot sums Pods; a windowed value.
  const Json ttft = server.GetJson(kChatMetrics + "ttft");
  ASSERT_EQ(ttft["items"].size(), 1u);
  EXPECT_EQ(ttft["items"][0]["value"], "100m");  // every Pod's new TTFTs average 0.1 s
  EXPECT_EQ(ttft["items"][0]["windowSeconds"], 10);
  EXPECT_TRUE(ttft["items"][0]["metric"]["selector"].is_null());
  // v1beta1: metricName, the window as `window`, a top-level selector.
  std::string v1beta1 = kChatMetrics + "kv-cache-usage?metricLabelSelector=scope%3Dengine%2Fprompt";
  v1beta1.replace(v1beta1.find("v1beta2"), 7, "v1beta1");
  const Json old = server.GetJson(v1beta1);
  EXPECT_EQ(old["apiVersion"], "custom.metrics.k8s.io/v1beta1");
  EXPECT_EQ(old["items"][0]["metricName"], "kv-cache-usage");
  EXPECT_EQ(old["items"][0]["value"], "750m");
  EXPECT_EQ(old["items"][0]["selector"],
            Json::parse(R"({"matchLabels":{"scope":"engine/prompt"}})"));
}

// The HPA holds only when the metric call fails: a value with a Pod missing is an error.
TEST(CustomMetricsApi, AMissingValueIsNotFoundNeverANumber) {
  CustomMetricsServer server;
  const std::string path =
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/"
      "modeldeployments.worker.gpustack.ai/broken/waiting";
  const Json status = server.GetJson(path + "?metricLabelSelector=role%3Dgeneration", 404);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["reason"], "NotFound");
  EXPECT_EQ(status["message"],
            "the server could not find the metric waiting for modeldeployments.worker.gpustack.ai "
            "broken: metric waiting has no value: missing[] lists scrape of Pod decode-1 (metrics "
            "endpoint returned HTTP 500)");
  EXPECT_EQ(status["details"]["group"], "custom.metrics.k8s.io");
  server.GetJson(path, 404);  // the deployment as a whole lacks decode-1's share too
  // The other role is whole.
  EXPECT_EQ(server.GetJson(path + "?metricLabelSelector=role%3Dprompt")["items"][0]["value"], "1");
  // The deployment itself missing: its own 404.
  server.GetJson(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/"
      "modeldeployments.worker.gpustack.ai/missing/waiting",
      404);
}

TEST(CustomMetricsApi, PodsMetricsGiveEachSelectedPodsOwnValue) {
  CustomMetricsServer server;
  const std::string pods = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/pods/%2A/";
  const Json list = server.GetJson(
      pods + "kv-cache-usage?labelSelector=app.kubernetes.io%2Fcomponent%3Dgeneration");
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(
      list["items"][0]["describedObject"],
      Json::parse(R"({"kind":"Pod","namespace":"team","name":"decode-0","apiVersion":"/v1"})"));
  EXPECT_EQ(list["items"][0]["value"], "250m");
  EXPECT_EQ(list["items"][1]["describedObject"]["name"], "decode-1");
  EXPECT_EQ(list["items"][1]["value"], "500m");
  // `*` as written, every Pod of the deployment.
  EXPECT_EQ(server
                .GetJson("/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/pods/*/waiting?"
                         "labelSelector=app.kubernetes.io%2Finstance%3Dchat")["items"]
                .size(),
            3u);
  // No Pod selected: 404; a metric a Pod has no value of (windows are per deployment): 404.
  server.GetJson(pods + "waiting?labelSelector=app%3Dnothing", 404);
  server.GetJson(pods + "ttft?labelSelector=app.kubernetes.io%2Finstance%3Dchat", 404);
  // A scale target's set-based selector selects as Kubernetes does; a malformed one is refused.
  EXPECT_EQ(server
                .GetJson(pods + "waiting?labelSelector=" +
                         "app.kubernetes.io%2Fcomponent%20in%20%28generation%2Cprompt%29%2C" +
                         "app.kubernetes.io%2Fcomponent%20notin%20%28prompt%29")["items"]
                .size(),
            2u);
  server.GetJson(pods + "waiting?labelSelector=app.kubernetes.io%2Fcomponent%20in%20%28a", 400);
  // A selected Pod whose deployment is not there is no Pod of the answer, not an error.
  const Json prompt =
      server.GetJson(pods + "waiting?labelSelector=app.kubernetes.io%2Fcomponent%3Dprompt");
  ASSERT_EQ(prompt["items"].size(), 1u);
  EXPECT_EQ(prompt["items"][0]["describedObject"]["name"], "prefill-0");
}

// A Pods metric whose deployment could not be read is that error, not a list without its Pods
// (the HPA would count them as 0 on a scale-up); an object list leaves the deployment out.
TEST(CustomMetricsApi, APodsMetricFailsWhenItsDeploymentsReadFails) {
  CustomMetricsServer server;
  server.fail_reads = true;
  const Json status = server.GetJson(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/pods/%2A/waiting?"
      "labelSelector=app.kubernetes.io%2Finstance%3Dchat",
      503);
  EXPECT_EQ(status["message"], "every Pod read timed out");
  const Json list = server.GetJson(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/"
      "modeldeployments.worker.gpustack.ai/%2A/waiting?metricLabelSelector=role%3Dprompt");
  EXPECT_TRUE(list["items"].empty());
}

TEST(CustomMetricsApi, EveryDeploymentOfANamespaceWithAValue) {
  CustomMetricsServer server;
  const Json list = server.GetJson(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/modeldeployments.worker.gpustack.ai/"
      "%2A/waiting?metricLabelSelector=role%3Dgeneration");
  ASSERT_EQ(list["items"].size(), 1u);  // `broken` has no whole value
  EXPECT_EQ(list["items"][0]["describedObject"]["name"], "chat");
}

TEST(CustomMetricsApi, RbacIsOnResourceSlashMetricInTheCustomMetricsGroup) {
  CustomMetricsServer server;
  server.GetJson(kChatMetrics + "waiting", 200, "waiting-token");
  const Json denied = server.GetJson(kChatMetrics + "ttft", 403, "waiting-token");
  EXPECT_EQ(denied["message"],
            "modeldeployments.worker.gpustack.ai.custom.metrics.k8s.io \"chat\" is forbidden: User "
            "\"waiting-only\" cannot get resource \"modeldeployments.worker.gpustack.ai/ttft\" in "
            "API group \"custom.metrics.k8s.io\" in the namespace \"team\"");
  // The snapshot's readers are not the metrics' readers, and the other way round.
  server.GetJson(kChatMetrics + "waiting", 403, "snapshot-token");
  server.GetJson("/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat/metrics", 403,
                 "hpa-token");
  EXPECT_EQ(server.Get(kChatMetrics + "waiting", "no-such-token").status, 401);
}

TEST(CustomMetricsApi, DiscoveryListsEveryMetricOfADeploymentAndThePodsOnesOfAPod) {
  CustomMetricsServer server;
  const Json apis = server.GetJson("/apis");
  ASSERT_EQ(apis["groups"].size(), 2u);
  EXPECT_EQ(apis["groups"][1]["name"], "custom.metrics.k8s.io");
  EXPECT_EQ(apis["groups"][1]["preferredVersion"]["version"], "v1beta2");
  EXPECT_EQ(apis["groups"][1]["versions"].size(), 2u);
  EXPECT_EQ(server.GetJson(std::string(kCustomApi.substr(0, kCustomApi.size() - 1)))["kind"],
            "APIGroup");
  for (const char* version : {"v1beta2", "v1beta1"}) {
    const Json list = server.GetJson(std::string(kCustomApi) + version);
    EXPECT_EQ(list["groupVersion"], std::string("custom.metrics.k8s.io/") + version);
    std::set<std::string> names;
    for (const Json& r : list["resources"]) {
      names.insert(r["name"]);
      EXPECT_EQ(r["kind"], "MetricValueList");
      EXPECT_EQ(r["verbs"], Json::array({"get"}));
    }
    for (const char* name :
         {"modeldeployments.worker.gpustack.ai/waiting", "modeldeployments.worker.gpustack.ai/ttft",
          "modeldeployments.worker.gpustack.ai/kv-cache-usage-max",
          "modeldeployments.worker.gpustack.ai/local-prefix-hit-rate",
          "modeldeployments.worker.gpustack.ai/error-ratio", "pods/waiting", "pods/running",
          "pods/kv-cache-usage", "pods/decode-transfer-waiting"}) {
      EXPECT_TRUE(names.contains(name)) << name;
    }
    EXPECT_FALSE(names.contains("pods/ttft"));
  }
  // Aggregated discovery: the group with both versions, metrics as subresources.
  const net::FetchResult aggregated = server.Get(
      "/apis", "hpa-token", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  const Json items = Json::parse(aggregated.body)["items"];
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1]["metadata"]["name"], "custom.metrics.k8s.io");
  EXPECT_EQ(items[1]["versions"][0]["version"], "v1beta2");
  EXPECT_EQ(items[1]["versions"][0]["resources"][1]["resource"], "pods");
}

// However many callers ask within the reuse time (5 s unless configured), the deployment is read
// once. The test's reuse time is long, so a slow machine cannot split the calls over two reads.
TEST(CustomMetricsApi, MetricCallsShareOneReadWithinTheReuseTime) {
  EXPECT_EQ(ApiServerOptions{}.metrics_reuse_for, 5s);
  CustomMetricsServer server(/*enabled=*/true, /*metrics_reuse=*/1h);
  for (int i = 0; i < 5; ++i) server.GetJson(kChatMetrics + "waiting");
  server.GetJson(kChatMetrics + "kv-cache-usage?metricLabelSelector=role%3Dgeneration");
  server.GetJson(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/pods/%2A/waiting?"
      "labelSelector=app.kubernetes.io%2Finstance%3Dchat");
  EXPECT_EQ(server.reads.load(), 1);
}

TEST(CustomMetricsApi, BadRequestsAreAnsweredAsTheAdapterDoes) {
  CustomMetricsServer server;
  const Json unknown = server.GetJson(kChatMetrics + "no-such-metric", 404);
  EXPECT_EQ(unknown["message"],
            "the server could not find the metric no-such-metric for "
            "modeldeployments.worker.gpustack.ai");
  server.GetJson(kChatMetrics + "waiting?metricLabelSelector=pod%3Dx", 400);
  server.GetJson(kChatMetrics + "waiting?metricLabelSelector=role%21%3Dx", 400);
  server.GetJson(kChatMetrics + "waiting?metricLabelSelector=role%3Da%2Cscope%3Db", 400);
  // Decoded once, as the query is: a twice-encoded `=` is no term.
  server.GetJson(kChatMetrics + "waiting?metricLabelSelector=role%253Dgeneration", 400);
  server.GetJson(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/team/deployments.apps/chat/waiting", 404);
  server.GetJson("/apis/custom.metrics.k8s.io/v1beta3", 404);
  server.GetJson(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/Not_A_Namespace/"
      "modeldeployments.worker.gpustack.ai/chat/waiting",
      400);
  EXPECT_EQ(server.reads.load(), 0);
}

TEST(CustomMetricsApi, OffByDefaultItsPathsAreUnknown) {
  CustomMetricsServer server(/*enabled=*/false);
  server.GetJson(kChatMetrics + "waiting", 404);
  server.GetJson("/apis/custom.metrics.k8s.io/v1beta2", 404);
  EXPECT_EQ(server.GetJson("/apis")["groups"].size(), 1u);
}

TEST(CustomMetricsApi, QuantitiesKeepMicroPrecision) {
  EXPECT_EQ(FormatQuantity(0), "0");
  EXPECT_EQ(FormatQuantity(3), "3");
  EXPECT_EQ(FormatQuantity(0.42), "420m");
  EXPECT_EQ(FormatQuantity(1.5), "1500m");
  EXPECT_EQ(FormatQuantity(0.01955626), "19556u");
  EXPECT_EQ(FormatQuantity(-2.25), "-2250m");
  EXPECT_EQ(FormatQuantity(4e12), "4000000000000");
  // Never a number for what is none (ReadMetric refuses such values before this).
  EXPECT_EQ(FormatQuantity(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatQuantity(std::numeric_limits<double>::infinity()), "NaN");
}

}  // namespace
}  // namespace modelmetrics::deployment
