// The aggregated API's documents on their own: discovery in both forms and its negotiation, the
// OpenAPI documents and their caching rules, named health checks in kube-apiserver's format, the
// API group and version settings and Kubernetes' name rules.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "aggregation/metrics_api.h"
#include "apiserver/api_discovery.h"
#include "apiserver/api_openapi.h"
#include "apiserver/health_checks.h"
#include "kube/kube_names.h"

namespace modelmetrics::deployment {
namespace {

using Json = nlohmann::json;

constexpr const char* kAggregatedV2 =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
constexpr const char* kAggregatedV2Beta1 =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

MetricsApi SecondGroup() {
  return MetricsApi{.group = "metrics.example.com", .version = "v1beta2"};
}

TEST(MetricsApiTest, PathsFollowTheGroupAndVersion) {
  const MetricsApi api;
  EXPECT_EQ(api.GroupVersion(), "worker.gpustack.ai/v1");
  EXPECT_EQ(api.GroupVersion(), kDefaultMetricsApiVersion);
  EXPECT_EQ(api.MetricsPath("team", "chat"),
            "/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat/metrics");
  EXPECT_EQ(SecondGroup().VersionPath(), "/apis/metrics.example.com/v1beta2");
  EXPECT_EQ(api.Validate(), "");
  EXPECT_EQ(SecondGroup().Validate(), "");
}

TEST(MetricsApiTest, BadGroupsAndVersionsAreRefusedWithTheSettingNamed) {
  EXPECT_NE(MetricsApi{.group = "nodots"}.Validate().find("api_group `nodots`"), std::string::npos);
  EXPECT_NE(MetricsApi{.group = "Upper.Case"}.Validate(), "");
  EXPECT_NE(MetricsApi{.group = "a/b.c"}.Validate(), "");
  for (const char* version : {"", "1", "v", "v0", "v01", "v1gamma1", "v1beta", "v1beta0", "V1"}) {
    EXPECT_NE(MetricsApi{.version = version}.Validate(), "") << version;
  }
  for (const char* version : {"v1", "v2", "v10", "v1alpha1", "v2beta3", "v1beta10"}) {
    EXPECT_EQ(ValidateApiVersion(version), "") << version;
  }
}

TEST(KubeNamesTest, DnsValidatorsFollowKubernetes) {
  EXPECT_EQ(ValidateDns1123Label("a"), "");
  EXPECT_EQ(ValidateDns1123Label("0-a"), "");
  EXPECT_EQ(ValidateDns1123Label(std::string(63, 'x')), "");
  EXPECT_EQ(ValidateDns1123Label(std::string(64, 'x')), "must be no more than 63 characters");
  EXPECT_NE(ValidateDns1123Label("a.b"), "");
  EXPECT_NE(ValidateDns1123Label("\xc3\xa9"), "");
  EXPECT_EQ(ValidateDns1123Subdomain("a.b-c.d"), "");
  EXPECT_EQ(ValidateDns1123Subdomain(std::string(200, 'x')), "");  // parts are not limited to 63
  EXPECT_EQ(ValidateDns1123Subdomain(std::string(254, 'x')), "must be no more than 253 characters");
  EXPECT_NE(ValidateDns1123Subdomain("a.-b"), "");
  EXPECT_NE(ValidateDns1123Subdomain("a_b"), "");
  EXPECT_EQ(ValidateApiGroup("worker.gpustack.ai"), "");
  EXPECT_NE(ValidateApiGroup("worker"), "");
}

TEST(DiscoveryTest, NegotiatesTheFormKubectlAndTheAggregatorAskFor) {
  // kubectl and kube-aggregator list aggregated v2, then v2beta1, then plain JSON.
  EXPECT_EQ(NegotiateDiscovery(std::string(kAggregatedV2) + "," + kAggregatedV2Beta1 +
                               ",application/json"),
            DiscoveryForm::kAggregatedV2);
  EXPECT_EQ(NegotiateDiscovery(std::string(kAggregatedV2Beta1) + ",application/json"),
            DiscoveryForm::kAggregatedV2Beta1);
  EXPECT_EQ(NegotiateDiscovery("application/json"), DiscoveryForm::kLegacy);
  EXPECT_EQ(NegotiateDiscovery(""), DiscoveryForm::kLegacy);
  EXPECT_EQ(NegotiateDiscovery("*/*"), DiscoveryForm::kLegacy);
  // Parameters in any case and with spaces; protobuf is skipped for the JSON that follows.
  EXPECT_EQ(NegotiateDiscovery("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;"
                               "as=APIGroupDiscoveryList, Application/JSON ; G=apidiscovery.k8s.io"
                               " ; v=v2 ; as=APIGroupDiscoveryList"),
            DiscoveryForm::kAggregatedV2);
  // A version this server does not know is skipped; q=0 means "not this".
  EXPECT_EQ(
      NegotiateDiscovery("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,"
                         "application/json"),
      DiscoveryForm::kLegacy);
  EXPECT_EQ(NegotiateDiscovery(std::string(kAggregatedV2) + ";q=0," + kAggregatedV2Beta1),
            DiscoveryForm::kAggregatedV2Beta1);
  EXPECT_EQ(DiscoveryContentType(DiscoveryForm::kAggregatedV2), kAggregatedV2);
  EXPECT_EQ(DiscoveryContentType(DiscoveryForm::kLegacy), "application/json");
}

TEST(DiscoveryTest, AggregatedFormHangsTheSubresourceUnderItsParent) {
  const Json list = Json::parse(ApisJson(SecondGroup(), DiscoveryForm::kAggregatedV2));
  EXPECT_EQ(list["kind"], "APIGroupDiscoveryList");
  EXPECT_EQ(list["apiVersion"], "apidiscovery.k8s.io/v2");
  ASSERT_EQ(list["items"].size(), 1u);
  const Json& group = list["items"][0];
  EXPECT_EQ(group["metadata"]["name"], "metrics.example.com");
  ASSERT_EQ(group["versions"].size(), 1u);
  const Json& version = group["versions"][0];
  EXPECT_EQ(version["version"], "v1beta2");
  EXPECT_EQ(version["freshness"], "Current");
  ASSERT_EQ(version["resources"].size(), 2u);
  const Json kind = {
      {"group", "metrics.example.com"}, {"version", "v1beta2"}, {"kind", "ModelDeploymentMetrics"}};
  const Json& object = version["resources"][0];
  EXPECT_EQ(object["resource"], "modeldeploymentmetrics");
  EXPECT_EQ(object["responseKind"], kind);
  EXPECT_EQ(object["verbs"], Json({"get"}));
  EXPECT_EQ(object["shortNames"], Json({"mdm"}));
  const Json& parent = version["resources"][1];
  EXPECT_EQ(parent["resource"], "modeldeployments");
  EXPECT_EQ(parent["scope"], "Namespaced");
  // The objects are another API's: an empty kind (never null) and no verbs.
  EXPECT_EQ(parent["responseKind"], Json({{"group", ""}, {"version", ""}, {"kind", ""}}));
  EXPECT_EQ(parent["verbs"], Json::array());
  ASSERT_EQ(parent["subresources"].size(), 1u);
  EXPECT_EQ(parent["subresources"][0],
            Json({{"subresource", "metrics"}, {"responseKind", kind}, {"verbs", {"get"}}}));
  EXPECT_EQ(Json::parse(ApisJson(SecondGroup(), DiscoveryForm::kAggregatedV2Beta1))["apiVersion"],
            "apidiscovery.k8s.io/v2beta1");
}

TEST(DiscoveryTest, LegacyDocumentsNameTheConfiguredGroup) {
  const Json apis = Json::parse(ApisJson(SecondGroup(), DiscoveryForm::kLegacy));
  EXPECT_EQ(apis["kind"], "APIGroupList");
  EXPECT_EQ(apis["groups"][0]["name"], "metrics.example.com");
  EXPECT_EQ(apis["groups"][0]["preferredVersion"]["groupVersion"], "metrics.example.com/v1beta2");
  EXPECT_EQ(Json::parse(ApiGroupJson(SecondGroup()))["kind"], "APIGroup");
  const Json resources = Json::parse(ApiResourceListJson(SecondGroup()));
  EXPECT_EQ(resources["groupVersion"], "metrics.example.com/v1beta2");
  ASSERT_EQ(resources["resources"].size(), 2u);
  EXPECT_EQ(resources["resources"][0]["name"], "modeldeploymentmetrics");
  EXPECT_EQ(resources["resources"][0]["shortNames"], Json({"mdm"}));
  EXPECT_EQ(resources["resources"][1]["name"], "modeldeployments/metrics");
  for (const Json& resource : resources["resources"]) {
    EXPECT_EQ(resource["kind"], "ModelDeploymentMetrics");
    EXPECT_EQ(resource["namespaced"], true);
    EXPECT_EQ(resource["verbs"], Json({"get"}));
  }
}

net::HttpRequest Get(std::string path, std::string query = "") {
  net::HttpRequest request;
  request.method = "GET";
  request.path = std::move(path);
  request.query = std::move(query);
  return request;
}

std::string Header(const net::HttpResponse& response, std::string_view name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return "";
}

TEST(OpenApiTest, V2DescribesTheMetricsPathAndKind) {
  const OpenApiDocuments documents(SecondGroup());
  const Json v2 = Json::parse(documents.v2());
  EXPECT_EQ(v2["swagger"], "2.0");
  const std::string path =
      "/apis/metrics.example.com/v1beta2/namespaces/{namespace}/modeldeployments/{name}/metrics";
  ASSERT_TRUE(v2["paths"].contains(path)) << v2["paths"].dump();
  const Json& get = v2["paths"][path]["get"];
  EXPECT_EQ(get["x-kubernetes-action"], "get");
  EXPECT_EQ(get["x-kubernetes-group-version-kind"]["group"], "metrics.example.com");
  const std::string ref = get["responses"]["200"]["schema"]["$ref"];
  EXPECT_EQ(ref, "#/definitions/com.example.metrics.v1beta2.ModelDeploymentMetrics");
  const Json& kind = v2["definitions"]["com.example.metrics.v1beta2.ModelDeploymentMetrics"];
  EXPECT_EQ(kind["x-kubernetes-group-version-kind"][0]["version"], "v1beta2");
  // Every reference resolves inside the document.
  for (const auto& [name, schema] : v2["definitions"].items()) {
    for (const auto& [field, property] : schema["properties"].items()) {
      if (property.contains("items")) {
        const std::string target = property["items"]["$ref"];
        EXPECT_TRUE(v2["definitions"].contains(target.substr(std::string("#/definitions/").size())))
            << name << "." << field;
      }
    }
  }
}

TEST(OpenApiTest, V3IndexPointsAtTheGroupVersionDocumentByHash) {
  const OpenApiDocuments documents(MetricsApi{});
  const Json index = Json::parse(documents.v3_index());
  const std::string url = index["paths"]["apis/worker.gpustack.ai/v1"]["serverRelativeURL"];
  EXPECT_EQ(url, "/openapi/v3/apis/worker.gpustack.ai/v1?hash=" + documents.v3_hash());
  EXPECT_EQ(documents.v3_hash().size(), 128u);
  const Json v3 = Json::parse(documents.v3_group_version());
  EXPECT_EQ(v3["openapi"], "3.0.0");
  EXPECT_TRUE(v3["components"]["schemas"].contains("ai.gpustack.worker.v1.ModelDeploymentMetrics"));

  // With the current hash: cacheable for ever. A stale hash: 301 to the current one.
  const auto current =
      documents.Serve(Get(documents.v3_group_version_path(), "hash=" + documents.v3_hash()));
  ASSERT_TRUE(current.has_value());
  EXPECT_EQ(current->status, 200);
  EXPECT_EQ(Header(*current, "Cache-Control"), "public, immutable");
  const auto stale = documents.Serve(Get(documents.v3_group_version_path(), "hash=OLD"));
  ASSERT_TRUE(stale.has_value());
  EXPECT_EQ(stale->status, 301);
  EXPECT_EQ(Header(*stale, "Location"), url);
  EXPECT_FALSE(documents.Serve(Get("/openapi/v3/apis/other.example.com/v1")).has_value());
}

TEST(OpenApiTest, EtagsAnswerNotModified) {
  const OpenApiDocuments documents(MetricsApi{});
  const auto first = documents.Serve(Get("/openapi/v2"));
  ASSERT_TRUE(first.has_value());
  const std::string etag = Header(*first, "ETag");
  ASSERT_FALSE(etag.empty());
  net::HttpRequest again = Get("/openapi/v2");
  again.headers.Add("If-None-Match", etag);
  const auto second = documents.Serve(again);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status, 304);
  EXPECT_TRUE(second->body.empty());
}

TEST(HealthChecksTest, KubeApiserverFormat) {
  bool synced = false;
  HealthChecks readyz("readyz");
  readyz.Add("ping", [] { return std::string(); });
  readyz.Add("informer-sync", [&synced] { return synced ? "" : std::string("not yet listed"); });

  net::HttpResponse failing = readyz.Serve("", "");
  EXPECT_EQ(failing.status, 500);
  EXPECT_EQ(failing.body,
            "[+]ping ok\n[-]informer-sync failed: reason withheld\nreadyz check failed\n");
  net::HttpResponse one = readyz.Serve("informer-sync", "");
  EXPECT_EQ(one.status, 500);
  EXPECT_EQ(one.body, "internal server error: not yet listed\n");
  net::HttpResponse excluded = readyz.Serve("", "exclude=informer-sync&exclude=nope&verbose");
  EXPECT_EQ(excluded.status, 200);
  EXPECT_EQ(excluded.body,
            "[+]ping ok\n[+]informer-sync excluded: ok\n"
            "warn: some health checks cannot be excluded: no matches for \"nope\"\n"
            "readyz check passed\n");

  synced = true;
  EXPECT_EQ(readyz.Serve("", "").body, "ok");
  EXPECT_EQ(readyz.Serve("", "verbose").body,
            "[+]ping ok\n[+]informer-sync ok\nreadyz check passed\n");
  EXPECT_EQ(readyz.Serve("", "verbose=1").status, 200);
  EXPECT_EQ(readyz.Serve("ping", "").body, "ok");
  EXPECT_EQ(readyz.Serve("nope", "").status, 404);
  EXPECT_EQ(Header(readyz.Serve("", ""), "X-Content-Type-Options"), "nosniff");
  // An informational check reports without failing the endpoint.
  std::string degraded = "degraded: 9 requests waiting";
  readyz.AddInformational("reviews", [&degraded] { return degraded; });
  EXPECT_EQ(readyz.Serve("", "verbose").status, 200);
  EXPECT_EQ(readyz.Serve("", "verbose").body,
            "[+]ping ok\n[+]informer-sync ok\n[+]reviews degraded: 9 requests waiting\n"
            "readyz check passed\n");
  EXPECT_EQ(readyz.Serve("reviews", "").status, 200);
  degraded.clear();
  EXPECT_EQ(readyz.Serve("reviews", "").body, "ok");
}

}  // namespace
}  // namespace modelmetrics::deployment
