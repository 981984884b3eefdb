// The aggregated API server (deployment/api_server.h) over real loopback TLS: discovery, the
// authentication matrix (tokens, client certificates, front-proxy headers), authorisation by a
// policy file, DNS-1123 validation before any look-up, Status mapping, the in-flight bound, the
// serve configuration, the `modelmetrics serve` binary, and kubectl itself when installed.
// Certificates are tests/testdata/tls (ca.pem signs server and client; requestheader-ca.pem signs
// proxy-client, CN=front-proxy).
#include "apiserver/api_server.h"
#include "apiserver/serve_build.h"
#include "apiserver/serve_config.h"
#include "kube/yaml.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <curl/curl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <nlohmann/json.hpp>

#include "kube/object_test_files.h"
#include "net/http_client.h"
#include "sim/deployment_sim.h"
#include "status_matchers.h"
#include "test_certificates.h"
#include "test_deadlines.h"
#include "test_paths.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;

using ::modelmetrics::testing::Ok;
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

std::string TlsFile(const char* name) { return test_paths::Tls(name); }

using ::modelmetrics::testing::LetTimePass;
using ::modelmetrics::testing::TempDir;
using ::modelmetrics::testing::WaitUntil;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a shell command with a timeout, capturing stdout and stderr.
CommandResult RunCommand(const std::string& command, const TempDir& dir, int timeout_seconds = 30) {
  const std::string err_file = dir.path() + "/stderr.txt";
  const std::string line = fmt::format("timeout {} {} 2>{}", timeout_seconds, command, err_file);
  CommandResult run;
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::ostringstream err;
  err << in.rdbuf();
  run.err = err.str();
  return run;
}

constexpr const char* kTokens =
    "alice-token,alice,uid-alice\n"
    "bob-token,bob,uid-bob\n"
    "rita-token,rita,uid-rita,\"team-readers\"\n";

// alice and the test client read `team`; alice also `alice-ns`; team-readers read `team`.
constexpr const char* kPolicy = R"(rules:
  - users: [alice, test-client]
    namespaces: [team]
    verbs: [get]
    resources: ["modeldeployments/metrics"]
  - users: [alice]
    namespaces: [alice-ns]
    verbs: [get]
    resources: ["modeldeployments/metrics"]
  - groups: [team-readers]
    namespaces: [team]
    verbs: [get]
    resources: ["modeldeployments/metrics"]
)";

const std::string kMetricsPrefix = "/apis/worker.gpustack.ai/v1/namespaces/";

std::string MetricsPath(const std::string& ns, const std::string& name) {
  return kMetricsPrefix + ns + "/modeldeployments/" + name + "/metrics";
}

Snapshot MakeSnapshot(std::string_view ns, std::string_view name) {
  Snapshot snapshot;
  snapshot.name = std::string(name);
  snapshot.namespace_ = std::string(ns);
  snapshot.timestamp = WallTime(std::chrono::seconds(1'790'000'000));
  Gauge running;
  running.name = "running";
  running.source = "vllm:num_requests_running";
  running.scope = "engine/server";
  running.unit = "requests";
  running.value = 3;
  running.pod_count = 2;
  running.observed_at = snapshot.timestamp;
  snapshot.processing.push_back(running);
  return snapshot;
}

// The snapshot function the server calls: counts calls; some names answer errors; `slow` waits
// until released.
class FakeSnapshots {
 public:
  Status Get(std::string_view ns, std::string_view name, Snapshot* out) {
    ++calls;
    if (name == "missing") {
      return Status::NotFound(
          fmt::format("modeldeployments.worker.gpustack.ai \"{}\" not found", name));
    }
    if (name == "empty") return Status::Unavailable("ModelDeployment has no owned metrics Pods");
    if (name == "broken") return Status::Internal("list ModelDeployment Pods: boom");
    if (name == "throws") throw std::runtime_error("it threw");
    if (name == "weird") return Status{302, "Found", "not an error code"};
    if (name.starts_with("slow")) {
      std::unique_lock lock(mu_);
      ++slow_waiting_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
    }
    *out = MakeSnapshot(ns, name);
    return Status::Ok();
  }

  bool WaitForSlow(int count) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return slow_waiting_ >= count; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  std::atomic<int> calls{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int slow_waiting_ = 0;
  bool released_ = false;
};

// The configuration `modelmetrics serve` would build from, on loopback port 0.
ServeConfig TestConfig(const TempDir& dir) {
  ServeConfig config;
  config.server.port = 0;
  config.tls.cert_file = TlsFile("server.pem");
  config.tls.key_file = TlsFile("server-key.pem");
  config.authn.client_ca_file = TlsFile("ca.pem");
  config.authn.requestheader_ca_file = TlsFile("requestheader-ca.pem");
  config.authn.requestheader_allowed_names = {"front-proxy"};
  config.authn.token_file = dir.Write("tokens.csv", kTokens);
  config.authz.policy_file = dir.Write("policy.yaml", kPolicy);
  return config;
}

// The configuration's authenticator and authoriser (a test failure when they do not build).
std::unique_ptr<Authenticator> Authn(
    const ServeConfig& config, KubeApiClient* kube = nullptr,
    std::shared_ptr<const AuthenticationConfigWatcher> watcher = nullptr,
    std::shared_ptr<ServerMetrics> metrics = nullptr) {
  std::unique_ptr<Authenticator> out;
  EXPECT_OK(BuildAuthenticator(config, &out, kube, std::move(watcher), std::move(metrics)));
  return out;
}
std::unique_ptr<Authorizer> Authz(const ServeConfig& config, KubeApiClient* kube = nullptr,
                                  std::shared_ptr<ServerMetrics> metrics = nullptr) {
  std::unique_ptr<Authorizer> out;
  EXPECT_OK(BuildAuthorizer(config, kube, &out, std::move(metrics)));
  return out;
}
std::unique_ptr<Authorizer> LoadPolicy(const std::string& path) {
  std::unique_ptr<PolicyAuthorizer> out;
  EXPECT_OK(PolicyAuthorizer::Load(path, &out));
  return out;
}

class ServerUnderTest {
 public:
  explicit ServerUnderTest(const ServeConfig& config, size_t max_in_flight = 32)
      : ServerUnderTest(config, WithInFlight(BuildApiServerOptions(config), max_in_flight),
                        BuiltAuthorizer(config)) {}
  // `options` and `authorizer` in place of the configuration's.
  ServerUnderTest(const ServeConfig& config, ApiServerOptions options,
                  std::unique_ptr<Authorizer> authorizer) {
    std::string error;
    auto authenticator = Authn(config);
    server_ = std::make_unique<ApiServer>(
        options,
        [this](std::string_view ns, std::string_view name, SteadyTime, Snapshot* out) {
          return snapshots.Get(ns, name, out);
        },
        std::move(authenticator), std::move(authorizer));
    started_ = Ok(server_->Start(), &error);
    EXPECT_TRUE(started_) << error;
  }
  ~ServerUnderTest() {
    snapshots.Release();
    server_->Stop();
  }

  bool started() const { return started_; }
  uint16_t port() const { return server_->port(); }
  std::string url(const std::string& path) const { return server_->url() + path; }
  ApiServer& server() { return *server_; }

  FakeSnapshots snapshots;

 private:
  static ApiServerOptions WithInFlight(ApiServerOptions options, size_t max_in_flight) {
    options.max_in_flight = max_in_flight;
    options.worker_threads = 4;
    return options;
  }
  static std::unique_ptr<Authorizer> BuiltAuthorizer(const ServeConfig& config) {
    return Authz(config);
  }

  std::unique_ptr<ApiServer> server_;
  bool started_ = false;
};

// Who the test client is: nothing, a token, a client certificate, extra headers.
struct Credentials {
  std::string token;
  std::string cert;  // PEM file names
  std::string key;
  std::vector<std::pair<std::string, std::string>> headers;
};

net::FetchResult Fetch(const std::string& url, const Credentials& credentials = {}) {
  net::ClientOptions options;
  options.ca_file = TlsFile("ca.pem");
  options.client_cert_file = credentials.cert;
  options.client_key_file = credentials.key;
  options.fetch_timeout = std::chrono::seconds(10);
  options.connect_timeout = std::chrono::seconds(5);
  net::HttpClient client(options);
  net::FetchRequest request{url, credentials.headers};
  if (!credentials.token.empty()) {
    request.headers.emplace_back("Authorization", "Bearer " + credentials.token);
  }
  auto results = client.FetchAll(std::span(&request, 1),
                                 std::chrono::steady_clock::now() + std::chrono::seconds(15));
  return results.at(0);
}

Credentials Token(std::string token) { return Credentials{.token = std::move(token)}; }

Credentials ClientCert() {
  return Credentials{.cert = TlsFile("client.pem"), .key = TlsFile("client-key.pem")};
}

Credentials FrontProxy(std::vector<std::pair<std::string, std::string>> headers) {
  return Credentials{.cert = TlsFile("proxy-client.pem"),
                     .key = TlsFile("proxy-client-key.pem"),
                     .headers = std::move(headers)};
}

Json ParseJson(const std::string& body) {
  Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(json.is_discarded()) << body;
  return json;
}

std::string UnauthorizedBody() {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
         R"("message":"Unauthorized","reason":"Unauthorized","code":401})";
}

std::string ForbiddenBody(const std::string& user, const std::string& ns, const std::string& name) {
  return fmt::format(
      R"({{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure",)"
      R"("message":"modeldeployments.worker.gpustack.ai \"{1}\" is forbidden: User \"{0}\" )"
      R"(cannot get resource \"modeldeployments/metrics\" in API group \"worker.gpustack.ai\" )"
      R"(in the namespace \"{2}\"","reason":"Forbidden","details":{{"name":"{1}",)"
      R"("group":"worker.gpustack.ai","kind":"modeldeployments"}},"code":403}})",
      user, name, ns);
}

// ---------------------------------------------------------------------------------------------
// Discovery and health

TEST(ApiServerTest, ServesDiscoveryDocuments) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());

  net::FetchResult apis = Fetch(server.url("/apis"), Token("alice-token"));
  ASSERT_TRUE(apis.ok()) << apis.message << apis.body;
  EXPECT_EQ(apis.content_type, "application/json");
  const Json version = {{"groupVersion", "worker.gpustack.ai/v1"}, {"version", "v1"}};
  EXPECT_EQ(ParseJson(apis.body), Json({{"kind", "APIGroupList"},
                                        {"apiVersion", "v1"},
                                        {"groups",
                                         {{{"name", "worker.gpustack.ai"},
                                           {"versions", {version}},
                                           {"preferredVersion", version}}}}}));

  net::FetchResult group = Fetch(server.url("/apis/worker.gpustack.ai"), Token("bob-token"));
  ASSERT_TRUE(group.ok()) << group.body;
  EXPECT_EQ(ParseJson(group.body), Json({{"kind", "APIGroup"},
                                         {"apiVersion", "v1"},
                                         {"name", "worker.gpustack.ai"},
                                         {"versions", {version}},
                                         {"preferredVersion", version}}));

  net::FetchResult resources = Fetch(server.url("/apis/worker.gpustack.ai/v1/"), ClientCert());
  ASSERT_TRUE(resources.ok()) << resources.body;
  const Json list = ParseJson(resources.body);
  EXPECT_EQ(list["kind"], "APIResourceList");
  EXPECT_EQ(list["apiVersion"], "v1");
  EXPECT_EQ(list["groupVersion"], "worker.gpustack.ai/v1");
  ASSERT_EQ(list["resources"].size(), 2u);
  EXPECT_EQ(list["resources"][0]["name"], "modeldeploymentmetrics");
  EXPECT_EQ(list["resources"][1]["name"], "modeldeployments/metrics");
  EXPECT_EQ(list["resources"][1]["namespaced"], true);
  EXPECT_EQ(list["resources"][1]["kind"], "ModelDeploymentMetrics");
  EXPECT_EQ(list["resources"][1]["verbs"], Json({"get"}));

  // Aggregated discovery by the Accept header kube-aggregator sends, with an ETag it re-uses.
  Credentials aggregated = Token("alice-token");
  aggregated.headers = {
      {"Accept",
       "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
       "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"}};
  net::FetchResult v2 = Fetch(server.url("/apis"), aggregated);
  ASSERT_TRUE(v2.ok()) << v2.body;
  EXPECT_EQ(v2.content_type,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  EXPECT_EQ(ParseJson(v2.body)["kind"], "APIGroupDiscoveryList");
  aggregated.headers.emplace_back("If-None-Match", "\"" + DocumentHash(v2.body) + "\"");
  EXPECT_EQ(Fetch(server.url("/apis"), aggregated).status, 304);

  // Discovery is for authenticated users only (any of them, as Kubernetes' system:discovery).
  net::FetchResult anonymous = Fetch(server.url("/apis"));
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.body, UnauthorizedBody());
}

TEST(ApiServerTest, HealthEndpointsNeedNoCredentials) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  for (const char* path : {"/healthz", "/readyz", "/livez"}) {
    net::FetchResult result = Fetch(server.url(path));
    ASSERT_TRUE(result.ok()) << path << " " << result.message;
    EXPECT_EQ(result.body, "ok");
  }
  net::FetchResult version = Fetch(server.url("/version"));
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(ParseJson(version.body)["gitVersion"], "v0.1.0");
}

TEST(ApiServerTest, NamedHealthChecksInKubeApiserverFormat) {
  TempDir dir;
  ServeConfig config = TestConfig(dir);
  ApiServerOptions options = BuildApiServerOptions(config);
  std::atomic<bool> synced{false};
  options.readiness_checks = {
      {"informer-sync", [&synced] { return synced ? std::string() : "not listed yet"; }}};
  ServerUnderTest server(config, options,
                         std::make_unique<PolicyAuthorizer>(std::vector<PolicyRule>{}));
  ASSERT_TRUE(server.started());
  net::FetchResult waiting = Fetch(server.url("/readyz?verbose"));
  EXPECT_EQ(waiting.status, 500);
  EXPECT_EQ(waiting.body,
            "[+]ping ok\n[-]informer-sync failed: reason withheld\n[+]reviews ok\n"
            "[+]shutdown ok\nreadyz check failed\n");
  EXPECT_EQ(Fetch(server.url("/livez")).body, "ok");  // alive while not ready
  EXPECT_EQ(Fetch(server.url("/readyz/informer-sync")).body,
            "internal server error: not listed yet\n");
  synced = true;
  EXPECT_EQ(Fetch(server.url("/readyz")).body, "ok");
  EXPECT_EQ(Fetch(server.url("/healthz?verbose")).body,
            "[+]ping ok\n[+]informer-sync ok\n[+]reviews ok\nhealthz check passed\n");
  EXPECT_EQ(Fetch(server.url("/livez/ping")).body, "ok");
  EXPECT_EQ(Fetch(server.url("/livez/nope")).status, 404);
}

// The server's own metrics: requests by verb, path class and code, shared-read admissions and
// snapshot reads, for a user a nonResourceURLs rule allows; anyone else gets 403.
TEST(ApiServerTest, OwnMetricsCountRequestsAndReads) {
  TempDir dir;
  ServeConfig config = TestConfig(dir);
  config.authz.policy_file =
      dir.Write("metrics-policy.yaml", std::string(kPolicy) + R"(  - users: [bob]
    nonResourceURLs: ["/metrics"]
    verbs: [get]
)");
  ApiServerOptions options = BuildApiServerOptions(config);
  options.reuse_for = std::chrono::hours(1);
  ServerUnderTest server(config, options, LoadPolicy(config.authz.policy_file));
  ASSERT_TRUE(server.started());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Fetch(server.url(MetricsPath("team", "chat")), Token("alice-token")).status, 200);
  }
  EXPECT_EQ(Fetch(server.url(MetricsPath("team", "chat")), Token("bob-token")).status, 403);
  EXPECT_EQ(Fetch(server.url("/apis")).status, 401);
  EXPECT_EQ(Fetch(server.url("/readyz")).status, 200);

  net::FetchResult denied = Fetch(server.url("/metrics"), Token("alice-token"));
  EXPECT_EQ(denied.status, 403);
  EXPECT_EQ(ParseJson(denied.body)["message"],
            "forbidden: User \"alice\" cannot get path \"/metrics\"");
  net::FetchResult metrics = Fetch(server.url("/metrics"), Token("bob-token"));
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = metrics.body;
  EXPECT_THAT(text,
              HasSubstr("modelmetrics_apiserver_requests_total{code=\"200\",path=\"snapshot\","
                        "verb=\"GET\"} 3.0\n"));
  EXPECT_THAT(text,
              HasSubstr("modelmetrics_apiserver_requests_total{code=\"403\",path=\"snapshot\","
                        "verb=\"GET\"} 1.0\n"));
  EXPECT_THAT(text,
              HasSubstr("modelmetrics_apiserver_requests_total{code=\"401\",path=\"discovery\","
                        "verb=\"GET\"} 1.0\n"));
  EXPECT_THAT(text, HasSubstr("modelmetrics_apiserver_requests_total{code=\"200\",path=\"health\","
                              "verb=\"GET\"} 1.0\n"));
  EXPECT_THAT(text,
              HasSubstr("modelmetrics_shared_read_requests_total{admission=\"started\"} 1.0\n"));
  EXPECT_THAT(text,
              HasSubstr("modelmetrics_shared_read_requests_total{admission=\"reused\"} 2.0\n"));
  EXPECT_THAT(text,
              HasSubstr("modelmetrics_snapshot_read_duration_seconds_count{result=\"ok\"} 1.0\n"));
  // This request is in flight while the page renders.
  EXPECT_THAT(text, HasSubstr("modelmetrics_apiserver_requests_in_flight 1.0\n"));
  EXPECT_EQ(server.snapshots.calls, 1);
  if (access("/usr/bin/promtool", X_OK) == 0) {
    const std::string file = dir.Write("metrics.txt", text);
    CommandResult check = RunCommand("/usr/bin/promtool check metrics < " + file, dir);
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
}

// A second group: every path, document, Status and message follows the setting, and the default
// group is not served.
TEST(ApiServerTest, EveryPathAndDocumentFollowsTheGroupSetting) {
  TempDir dir;
  ServeConfig config = TestConfig(dir);
  config.api = MetricsApi{.group = "metrics.example.com", .version = "v1beta2"};
  config.authz.policy_file = dir.Write("group-policy.yaml", R"(rules:
  - users: [alice]
    namespaces: [team]
    verbs: [get]
    apiGroups: [metrics.example.com]
    resources: ["modeldeployments/metrics", modeldeploymentmetrics]
)");
  ServerUnderTest server(config);
  ASSERT_TRUE(server.started());
  const Credentials alice = Token("alice-token");

  const Json apis = ParseJson(Fetch(server.url("/apis"), alice).body);
  EXPECT_EQ(apis["groups"][0]["preferredVersion"]["groupVersion"], "metrics.example.com/v1beta2");
  EXPECT_EQ(Fetch(server.url("/apis/metrics.example.com/v1beta2"), alice).status, 200);
  EXPECT_EQ(Fetch(server.url("/apis/worker.gpustack.ai/v1"), alice).status, 404);
  EXPECT_EQ(Fetch(server.url(MetricsPath("team", "chat")), alice).status, 404);

  const std::string path = config.api.MetricsPath("team", "chat");
  net::FetchResult snapshot = Fetch(server.url(path), alice);
  ASSERT_EQ(snapshot.status, 200) << snapshot.body;
  EXPECT_EQ(ParseJson(snapshot.body)["apiVersion"], "metrics.example.com/v1beta2");
  net::FetchResult object = Fetch(server.url(config.api.ObjectPath("team", "chat")), alice);
  ASSERT_EQ(object.status, 200) << object.body;
  EXPECT_EQ(object.body, snapshot.body);

  net::FetchResult missing = Fetch(server.url(config.api.MetricsPath("team", "missing")), alice);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(ParseJson(missing.body)["details"]["group"], "metrics.example.com");
  net::FetchResult forbidden = Fetch(server.url(config.api.ObjectPath("other", "chat")), alice);
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_THAT(ParseJson(forbidden.body)["message"].get<std::string>(),
              HasSubstr("cannot get resource \"modeldeploymentmetrics\" in API group "
                        "\"metrics.example.com\""));
  EXPECT_EQ(ParseJson(forbidden.body)["details"]["kind"], "modeldeploymentmetrics");

  net::FetchResult v2 = Fetch(server.url("/openapi/v2"), alice);
  ASSERT_EQ(v2.status, 200);
  EXPECT_TRUE(ParseJson(v2.body)["paths"].contains(
      "/apis/metrics.example.com/v1beta2/namespaces/{namespace}/modeldeployments/{name}/metrics"));
  EXPECT_EQ(v2.body.find("worker.gpustack.ai"), std::string::npos);
  const Json index = ParseJson(Fetch(server.url("/openapi/v3"), alice).body);
  const std::string v3_url =
      index["paths"]["apis/metrics.example.com/v1beta2"]["serverRelativeURL"];
  net::FetchResult v3 = Fetch(server.url(v3_url), alice);
  ASSERT_EQ(v3.status, 200) << v3_url;
  EXPECT_EQ(ParseJson(v3.body)["openapi"], "3.0.0");
  EXPECT_EQ(v3.body.find("worker.gpustack.ai"), std::string::npos);
  EXPECT_EQ(Fetch(server.url("/openapi/v2")).status, 401);  // documents need a user
}

// ---------------------------------------------------------------------------------------------
// Authentication and authorisation

TEST(ApiServerTest, GoodTokenGetsTheSnapshot) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  net::FetchResult result = Fetch(server.url(MetricsPath("team", "chat")), Token("alice-token"));
  ASSERT_TRUE(result.ok()) << result.message << result.body;
  EXPECT_EQ(result.status, 200);
  EXPECT_EQ(result.content_type, "application/json");
  EXPECT_EQ(result.body, SnapshotToJson(MakeSnapshot("team", "chat")));
  EXPECT_EQ(server.snapshots.calls, 1);
  // A query string does not change the resource.
  result = Fetch(server.url(MetricsPath("team", "chat") + "?timeout=32s"), Token("alice-token"));
  EXPECT_EQ(result.status, 200);
}

TEST(ApiServerTest, WrongOrMissingCredentialsAre401) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  const std::string url = server.url(MetricsPath("team", "chat"));
  for (const Credentials& credentials :
       {Token("wrong-token"), Credentials{}, Credentials{.headers = {{"Authorization", "Basic x"}}},
        // Front-proxy headers from a client without the request-header certificate: ignored.
        Credentials{.headers = {{"X-Remote-User", "alice"}}},
        Credentials{.headers = {{"X-Remote-User", "alice"}, {"X-Remote-Group", "team-readers"}}}}) {
    net::FetchResult result = Fetch(url, credentials);
    EXPECT_EQ(result.status, 401) << credentials.token;
    EXPECT_EQ(result.content_type, "application/json");
    EXPECT_EQ(result.body, UnauthorizedBody());
  }
  EXPECT_EQ(server.snapshots.calls, 0);
}

TEST(ApiServerTest, UserWithoutTheRuleIs403WithKubernetesMessage) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  net::FetchResult result = Fetch(server.url(MetricsPath("team", "chat")), Token("bob-token"));
  EXPECT_EQ(result.status, 403);
  EXPECT_EQ(result.content_type, "application/json");
  EXPECT_EQ(result.body, ForbiddenBody("bob", "team", "chat"));
  // alice may read team, not other.
  result = Fetch(server.url(MetricsPath("other", "chat")), Token("alice-token"));
  EXPECT_EQ(result.status, 403);
  EXPECT_EQ(result.body, ForbiddenBody("alice", "other", "chat"));
  EXPECT_EQ(server.snapshots.calls, 0);  // denied before anything is read
  // Group membership from the token file grants it.
  result = Fetch(server.url(MetricsPath("team", "chat")), Token("rita-token"));
  EXPECT_EQ(result.status, 200);
}

TEST(ApiServerTest, ClientCertificateUserIsTheCn) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  net::FetchResult result = Fetch(server.url(MetricsPath("team", "chat")), ClientCert());
  ASSERT_EQ(result.status, 200) << result.message << result.body;
  EXPECT_EQ(result.body, SnapshotToJson(MakeSnapshot("team", "chat")));
  // A client-CA certificate cannot speak for alice: the headers are ignored, it stays itself.
  Credentials impersonating = ClientCert();
  impersonating.headers = {{"X-Remote-User", "alice"}};
  result = Fetch(server.url(MetricsPath("alice-ns", "chat")), impersonating);
  EXPECT_EQ(result.status, 403);
  EXPECT_EQ(result.body, ForbiddenBody("test-client", "alice-ns", "chat"));
  // Neither can a token holder.
  Credentials bob = Token("bob-token");
  bob.headers = {{"X-Remote-User", "alice"}};
  result = Fetch(server.url(MetricsPath("team", "chat")), bob);
  EXPECT_EQ(result.body, ForbiddenBody("bob", "team", "chat"));
}

// A client certificate with Organizations (groups), signed by ca.pem, written to `dir`.
Credentials GeneratedClientCert(const TempDir& dir, const char* cn,
                                std::vector<std::string> organizations) {
  const test_paths::TestCertificate made =
      test_paths::ClientCertificate(cn, std::move(organizations), 4343);
  Credentials credentials{.cert = dir.path() + "/generated.pem",
                          .key = dir.path() + "/generated-key.pem"};
  std::ofstream(credentials.cert) << made.cert_pem;
  std::ofstream(credentials.key) << made.key_pem;
  return credentials;
}

TEST(ApiServerTest, ClientCertificateOrganizationsAreGroups) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  net::FetchResult result = Fetch(server.url(MetricsPath("team", "chat")),
                                  GeneratedClientCert(dir, "dave", {"ops", "team-readers"}));
  EXPECT_EQ(result.status, 200) << result.message << result.body;
  result =
      Fetch(server.url(MetricsPath("team", "chat")), GeneratedClientCert(dir, "erin", {"ops"}));
  EXPECT_EQ(result.body, ForbiddenBody("erin", "team", "chat"));
}

TEST(ApiServerTest, FrontProxyHeadersHonouredFromTheRequestHeaderCaCert) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  const std::string team = server.url(MetricsPath("team", "chat"));
  net::FetchResult result = Fetch(team, FrontProxy({{"X-Remote-User", "alice"}}));
  EXPECT_EQ(result.status, 200) << result.message << result.body;
  result = Fetch(team, FrontProxy({{"X-Remote-User", "bob"}}));
  EXPECT_EQ(result.body, ForbiddenBody("bob", "team", "chat"));  // the header named the user
  // Repeated X-Remote-Group headers: each is a group.
  result = Fetch(team, FrontProxy({{"X-Remote-User", "carol"},
                                   {"X-Remote-Group", "ops"},
                                   {"X-Remote-Group", "team-readers"}}));
  EXPECT_EQ(result.status, 200) << result.body;
  result = Fetch(team, FrontProxy({{"X-Remote-User", "carol"}, {"X-Remote-Group", "ops"}}));
  EXPECT_EQ(result.body, ForbiddenBody("carol", "team", "chat"));
  // The proxy naming nobody is nobody (it is not a client-CA user either).
  result = Fetch(team, FrontProxy({}));
  EXPECT_EQ(result.status, 401);
  EXPECT_EQ(result.body, UnauthorizedBody());
}

TEST(ApiServerTest, FrontProxyHeadersIgnoredFromANameNotAllowed) {
  TempDir dir;
  ServeConfig config = TestConfig(dir);
  config.authn.requestheader_allowed_names = {"some-other-proxy"};
  ServerUnderTest server(config);
  ASSERT_TRUE(server.started());
  const std::string team = server.url(MetricsPath("team", "chat"));
  net::FetchResult result = Fetch(team, FrontProxy({{"X-Remote-User", "alice"}}));
  EXPECT_EQ(result.status, 401);
  EXPECT_EQ(result.body, UnauthorizedBody());
  // With its own token it is that token's user, whatever the headers say.
  Credentials with_token = FrontProxy({{"X-Remote-User", "alice"}});
  with_token.token = "bob-token";
  result = Fetch(team, with_token);
  EXPECT_EQ(result.body, ForbiddenBody("bob", "team", "chat"));
  EXPECT_EQ(server.snapshots.calls, 0);
}

TEST(ApiServerTest, FrontProxyWithEmptyAllowedNamesTrustsAnyCnOfItsCa) {
  TempDir dir;
  ServeConfig config = TestConfig(dir);
  config.authn.requestheader_allowed_names.clear();
  ServerUnderTest server(config);
  ASSERT_TRUE(server.started());
  net::FetchResult result =
      Fetch(server.url(MetricsPath("team", "chat")), FrontProxy({{"X-Remote-User", "alice"}}));
  EXPECT_EQ(result.status, 200) << result.body;
}

TEST(ApiServerTest, WithoutRequestHeaderCaProxyCertificatesAreRefused) {
  TempDir dir;
  ServeConfig config = TestConfig(dir);
  config.authn.requestheader_ca_file.clear();
  config.authn.requestheader_allowed_names.clear();
  ServerUnderTest server(config);
  ASSERT_TRUE(server.started());
  // The handshake fails: the certificate chains to no configured CA.
  net::FetchResult result =
      Fetch(server.url(MetricsPath("team", "chat")), FrontProxy({{"X-Remote-User", "alice"}}));
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.status, 200);
}

// ---------------------------------------------------------------------------------------------
// Paths, validation and Status mapping

// One request with any method over TLS, its target sent as it is (curl would otherwise normalise
// dot segments away), with a JSON body; the status, and the body and Allow header of the answer.
int RawRequest(uint16_t port, const char* method, const std::string& target,
               const std::string& token, std::string* body, std::string* allow) {
  body->clear();
  allow->clear();
  CURL* curl = curl_easy_init();
  const std::string url = fmt::format("https://127.0.0.1:{}{}", port, target);
  const std::string ca = TlsFile("ca.pem");
  curl_slist* headers = curl_slist_append(nullptr, ("Authorization: Bearer " + token).c_str());
  headers = curl_slist_append(headers, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "{}");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CAINFO, ca.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(
      curl, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t n, void* out) {
        static_cast<std::string*>(out)->append(data, size * n);
        return size * n;
      });
  long status = 0;
  if (curl_easy_perform(curl) == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_header* header = nullptr;
    if (curl_easy_header(curl, "Allow", 0, CURLH_HEADER, -1, &header) == CURLHE_OK) {
      *allow = header->value;
    }
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return static_cast<int>(status);
}

TEST(ApiServerTest, InvalidNamesAre400BeforeAnyLookup) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  const std::string long_label(64, 'a');
  const std::string long_name(254, 'a');
  struct Case {
    std::string ns;
    std::string name;
    std::string message;
  };
  const std::string label_rule =
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
      "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
      "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  const std::string subdomain_rule =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
      "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
      "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  const std::vector<Case> cases = {
      {"Team", "chat", "invalid namespace \"Team\": " + label_rule},
      {"te_am", "chat", "invalid namespace \"te_am\": " + label_rule},
      {"-team", "chat", "invalid namespace \"-team\": " + label_rule},
      {"team-", "chat", "invalid namespace \"team-\": " + label_rule},
      {"team.x", "chat", "invalid namespace \"team.x\": " + label_rule},
      {"%74eam", "chat", "invalid namespace \"%74eam\": " + label_rule},
      {"", "chat", "invalid namespace \"\": " + label_rule},
      {long_label, "chat",
       "invalid namespace \"" + long_label + "\": must be no more than 63 characters"},
      {"team", "Chat", "invalid name \"Chat\": " + subdomain_rule},
      {"team", "chat..v1", "invalid name \"chat..v1\": " + subdomain_rule},
      {"team", ".chat", "invalid name \".chat\": " + subdomain_rule},
      {"team", "chat.", "invalid name \"chat.\": " + subdomain_rule},
      {"team", "chat%2Fx", "invalid name \"chat%2Fx\": " + subdomain_rule},
      {"team", "", "invalid name \"\": " + subdomain_rule},
      {"team", long_name,
       "invalid name \"" + long_name.substr(0, 100) + "...\": must be no more than 253 characters"},
  };
  for (const Case& c : cases) {
    net::FetchResult result = Fetch(server.url(MetricsPath(c.ns, c.name)), Token("alice-token"));
    EXPECT_EQ(result.status, 400) << c.ns << "/" << c.name;
    const Json status = ParseJson(result.body);
    EXPECT_EQ(status["kind"], "Status");
    EXPECT_EQ(status["status"], "Failure");
    EXPECT_EQ(status["reason"], "BadRequest");
    EXPECT_EQ(status["code"], 400);
    EXPECT_EQ(status["message"], c.message);
    EXPECT_EQ(status["details"]["name"], c.name);
    EXPECT_EQ(status["details"]["group"], "worker.gpustack.ai");
    EXPECT_EQ(status["details"]["kind"], "modeldeployments");
  }
  // Dot segments reach the server verbatim from a raw client.
  std::string body;
  std::string allow;
  EXPECT_EQ(
      RawRequest(server.port(), "GET", MetricsPath("..", "chat"), "alice-token", &body, &allow),
      400);
  EXPECT_THAT(body, HasSubstr("invalid namespace \\\"..\\\""));
  EXPECT_EQ(
      RawRequest(server.port(), "GET", MetricsPath("team", ".."), "alice-token", &body, &allow),
      400);
  EXPECT_EQ(server.snapshots.calls, 0);  // nothing was looked up

  // Longest valid ones pass: a 63-character namespace, a dotted 253-character name.
  std::string name_253;
  while (name_253.size() < 253) name_253 += name_253.empty() ? "a" : ".a";
  ASSERT_EQ(name_253.size(), 253u);
  net::FetchResult ok =
      Fetch(server.url(MetricsPath(std::string(63, 't'), name_253)), Token("alice-token"));
  EXPECT_EQ(ok.status, 403);  // valid; alice just may not read that namespace
  ok = Fetch(server.url(MetricsPath("team", "chat.v1-2")), Token("alice-token"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(server.snapshots.calls, 1);
}

TEST(ApiServerTest, SnapshotErrorsBecomeStatusObjects) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  const auto status_body = [](int code, const std::string& reason, const std::string& message,
                              const std::string& name) {
    return fmt::format(
        R"({{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure",)"
        R"("message":"{}","reason":"{}","details":{{"name":"{}","group":"worker.gpustack.ai",)"
        R"("kind":"modeldeployments"}},"code":{}}})",
        message, reason, name, code);
  };
  net::FetchResult result = Fetch(server.url(MetricsPath("team", "missing")), Token("alice-token"));
  EXPECT_EQ(result.status, 404);
  EXPECT_EQ(result.body,
            status_body(404, "NotFound",
                        R"(modeldeployments.worker.gpustack.ai \"missing\" not found)", "missing"));
  result = Fetch(server.url(MetricsPath("team", "empty")), Token("alice-token"));
  EXPECT_EQ(result.status, 503);
  EXPECT_EQ(result.body, status_body(503, "ServiceUnavailable",
                                     "ModelDeployment has no owned metrics Pods", "empty"));
  result = Fetch(server.url(MetricsPath("team", "broken")), Token("alice-token"));
  EXPECT_EQ(result.status, 500);
  EXPECT_EQ(result.body,
            status_body(500, "InternalError", "list ModelDeployment Pods: boom", "broken"));
  result = Fetch(server.url(MetricsPath("team", "throws")), Token("alice-token"));
  EXPECT_EQ(result.status, 500);
  EXPECT_EQ(result.body, status_body(500, "InternalError", "it threw", "throws"));
  result = Fetch(server.url(MetricsPath("team", "weird")), Token("alice-token"));
  EXPECT_EQ(result.status, 500);
  EXPECT_EQ(result.body, status_body(500, "InternalError", "not an error code", "weird"));
}

TEST(ApiServerTest, UnknownPathsAre404Status) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  const std::string not_found =
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("message":"the server could not find the requested resource","reason":"NotFound",)"
      R"("details":{},"code":404})";
  for (const std::string path :
       {"/", "/api", "/apis/other.group", "/apis/worker.gpustack.ai/v2", "/apisx",
        "/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat",
        "/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat/metrics/",
        "/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat/status",
        "/apis/worker.gpustack.ai/v1/namespaces/team/pods/chat/metrics",
        "/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat/metrics/x",
        "/apis/worker.gpustack.ai/v1alpha1/namespaces/team/modeldeployments/chat/metrics"}) {
    net::FetchResult result = Fetch(server.url(path), Token("alice-token"));
    EXPECT_EQ(result.status, 404) << path;
    EXPECT_EQ(result.body, not_found) << path;
  }
  // Unauthenticated, an unknown path is still 401 (nothing is disclosed).
  EXPECT_EQ(Fetch(server.url("/nothing")).status, 401);
  EXPECT_EQ(server.snapshots.calls, 0);
}

TEST(ApiServerTest, MethodsOtherThanGetAre405Status) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  std::string body;
  std::string allow;
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    EXPECT_EQ(RawRequest(server.port(), method, MetricsPath("team", "chat"), "alice-token", &body,
                         &allow),
              405);
    EXPECT_EQ(allow, "GET");
    EXPECT_EQ(body,
              R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
              R"("message":"the server does not allow this method on the requested resource",)"
              R"("reason":"MethodNotAllowed","details":{"name":"chat",)"
              R"("group":"worker.gpustack.ai","kind":"modeldeployments"},"code":405})");
  }
  EXPECT_EQ(RawRequest(server.port(), "POST", "/apis", "alice-token", &body, &allow), 405);
  EXPECT_EQ(ParseJson(body)["reason"], "MethodNotAllowed");
  // Credentials come first.
  EXPECT_EQ(RawRequest(server.port(), "POST", MetricsPath("team", "chat"), "nope", &body, &allow),
            401);
  EXPECT_EQ(server.snapshots.calls, 0);
}

TEST(ApiServerTest, TooManyInFlightIs429) {
  TempDir dir;
  ServerUnderTest server(TestConfig(dir), /*max_in_flight=*/2);
  ASSERT_TRUE(server.started());
  // Two slow deployments hold both read slots; a third request for one of them joins its read.
  std::vector<net::FetchResult> slow;
  std::thread holder([&] {
    net::ClientOptions options;
    options.ca_file = TlsFile("ca.pem");
    options.fetch_timeout = std::chrono::seconds(20);
    net::HttpClient client(options);
    std::vector<net::FetchRequest> batch;
    for (const char* name : {"slow", "slow-two", "slow"}) {
      batch.push_back(net::FetchRequest{server.url(MetricsPath("team", name)),
                                        {{"Authorization", "Bearer alice-token"}}});
    }
    slow = client.FetchAll(batch, std::chrono::steady_clock::now() + std::chrono::seconds(25));
  });
  ASSERT_TRUE(server.snapshots.WaitForSlow(2));
  // ...so a request needing a third read is turned away at once, without being read.
  net::FetchResult busy = Fetch(server.url(MetricsPath("team", "chat")), Token("alice-token"));
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.retry_after, "1");
  EXPECT_EQ(busy.body,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"Too many requests, please try again later.","reason":"TooManyRequests",)"
            R"("details":{"name":"chat","group":"worker.gpustack.ai","kind":"modeldeployments",)"
            R"("retryAfterSeconds":1},"code":429})");
  // Cheap requests are not bounded by it.
  EXPECT_TRUE(Fetch(server.url("/apis"), Token("alice-token")).ok());
  server.snapshots.Release();
  holder.join();
  ASSERT_EQ(slow.size(), 3u);
  EXPECT_EQ(slow[0].status, 200) << slow[0].message;
  EXPECT_EQ(slow[0].body, SnapshotToJson(MakeSnapshot("team", "slow")));
  EXPECT_EQ(slow[1].body, SnapshotToJson(MakeSnapshot("team", "slow-two")));
  // The third shared the first one's read (or reused its result): two reads for three requests.
  EXPECT_EQ(slow[2].body, slow[0].body);
  EXPECT_EQ(server.snapshots.calls, 2);
  // The slots are free again.
  EXPECT_EQ(Fetch(server.url(MetricsPath("team", "chat")), Token("alice-token")).status, 200);
}

TEST(ApiServerTest, SubjectAccessReviewAuthorizerDecides) {
  TempDir dir;
  std::vector<AccessRequest> reviews;
  std::mutex mu;
  auto authorizer = std::make_unique<SubjectAccessReviewAuthorizer>(
      [&](const AccessRequest& request, bool* allowed) {
        std::lock_guard lock(mu);
        reviews.push_back(request);
        if (request.user == "bob") return Status::Unavailable("the review failed");
        *allowed = request.user == "alice";
        return Status::Ok();
      },
      SubjectAccessReviewAuthorizer::Options{});
  const ServeConfig config = TestConfig(dir);
  ServerUnderTest server(config, BuildApiServerOptions(config), std::move(authorizer));
  ASSERT_TRUE(server.started());
  const std::string url = server.url(MetricsPath("team", "chat"));
  EXPECT_EQ(Fetch(url, Token("alice-token")).status, 200);
  EXPECT_EQ(Fetch(url, Token("rita-token")).body, ForbiddenBody("rita", "team", "chat"));
  net::FetchResult failed = Fetch(url, Token("bob-token"));
  EXPECT_EQ(failed.status, 500);
  EXPECT_EQ(ParseJson(failed.body)["message"], "Internal error occurred: the review failed");
  std::lock_guard lock(mu);
  ASSERT_EQ(reviews.size(), 3u);
  EXPECT_EQ(reviews[1].user, "rita");
  EXPECT_EQ(reviews[1].groups, (std::vector<std::string>{"team-readers", "system:authenticated"}));
  EXPECT_EQ(reviews[1].ns, "team");
  EXPECT_EQ(reviews[1].name, "chat");
  EXPECT_EQ(reviews[1].resource, "modeldeployments");
  EXPECT_EQ(reviews[1].subresource, "metrics");
  EXPECT_EQ(server.snapshots.calls, 1);
}

// A slow review holds an authorisation thread, never a read slot: with more reviews stalled than
// there are read slots, another user's request is still read; and a request whose review leaves
// less than min_read_budget is answered as soon as the review ends (503, Retry-After), not read
// late and not held to its deadline.
TEST(ApiServerTest, SlowReviewsTakeNoReadSlotsAndALateOneIsAnsweredAtOnce) {
  using std::chrono::milliseconds;
  TempDir dir;
  std::atomic<int> stalled{0};
  auto authorizer = std::make_unique<SubjectAccessReviewAuthorizer>(
      [&](const AccessRequest& request, bool* allowed) {
        if (request.user == "bob") {
          ++stalled;
          LetTimePass(milliseconds(2500));  // the review's own time: what the test is about
        }
        *allowed = true;
        return Status::Ok();
      },
      SubjectAccessReviewAuthorizer::Options{});
  const ServeConfig config = TestConfig(dir);
  ApiServerOptions options = BuildApiServerOptions(config);
  options.max_in_flight = 2;  // fewer read slots than stalled reviews
  // A review starts with 1.5 s of slack (10 s - 8.5 s); after its 2.5 s less than 8.5 s is left.
  // The margins are seconds wide, where a loaded machine delays a thread by tens of ms.
  options.request_timeout = milliseconds(10000);
  options.min_read_budget = milliseconds(8500);
  ServerUnderTest server(config, options, std::move(authorizer));
  ASSERT_TRUE(server.started());
  std::vector<net::FetchResult> late;
  std::thread reviewed([&] {
    net::ClientOptions client_options;
    client_options.ca_file = TlsFile("ca.pem");
    client_options.fetch_timeout = std::chrono::seconds(20);
    net::HttpClient client(client_options);
    std::vector<net::FetchRequest> batch;
    for (const char* name : {"chat", "chat-two", "chat-three"}) {  // distinct: no cached decision
      batch.push_back(net::FetchRequest{server.url(MetricsPath("team", name)),
                                        {{"Authorization", "Bearer bob-token"}}});
    }
    late = client.FetchAll(batch, std::chrono::steady_clock::now() + std::chrono::seconds(20));
  });
  WaitUntil([&] { return stalled == 3; });
  ASSERT_EQ(stalled, 3);
  const net::FetchResult read =
      Fetch(server.url(MetricsPath("team", "chat")), Token("alice-token"));
  EXPECT_EQ(read.status, 200) << read.body;
  reviewed.join();
  ASSERT_EQ(late.size(), 3u);
  for (const net::FetchResult& r : late) {
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_EQ(r.retry_after, "1");
    EXPECT_EQ(ParseJson(r.body)["reason"], "ServiceUnavailable");
    EXPECT_LT(r.elapsed, milliseconds(6000));  // at the review's end (2.5 s), not the deadline
  }
  EXPECT_EQ(server.snapshots.calls, 1);  // only alice's request was read
}

// The in-cluster path end to end: the authoriser posts real SubjectAccessReviews through
// KubeApiClient to a loopback stand-in for the Kubernetes API.
TEST(ApiServerTest, SubjectAccessReviewThroughTheKubernetesApi) {
  std::mutex mu;
  std::vector<Json> reviews;
  std::vector<std::string> authorizations;
  net::ServerOptions kube_options;
  kube_options.tls.emplace();
  kube_options.tls->cert_file = TlsFile("server.pem");
  kube_options.tls->key_file = TlsFile("server-key.pem");
  net::HttpServer kube_api(kube_options);
  kube_api.Route("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                 [&](const net::HttpRequest& request) {
                   Json review = Json::parse(request.body, nullptr, false);
                   std::lock_guard lock(mu);
                   reviews.push_back(review);
                   authorizations.emplace_back(request.headers.Get("Authorization"));
                   review["status"] = {{"allowed", review["spec"]["user"] == "alice"}};
                   net::HttpResponse response;
                   response.status = 201;
                   response.content_type = "application/json";
                   response.body = review.dump();
                   return response;
                 });
  std::string error;
  ASSERT_OK(kube_api.Start());
  KubeConfig kube_config;
  kube_config.server = fmt::format("https://127.0.0.1:{}", kube_api.port());
  kube_config.token = "service-account-token";
  kube_config.ca_file = TlsFile("ca.pem");
  KubeApiClient kube(kube_config);

  TempDir dir;
  ServeConfig config = TestConfig(dir);
  config.authz.policy_file.clear();
  config.authz.mode = ServeConfig::Authorization::kSubjectAccessReview;
  FakeSnapshots snapshots;
  auto authorizer = Authz(config, &kube);
  ASSERT_NE(authorizer, nullptr);
  ApiServer server(
      BuildApiServerOptions(config),
      [&](std::string_view ns, std::string_view name, SteadyTime, Snapshot* out) {
        return snapshots.Get(ns, name, out);
      },
      Authn(config), std::move(authorizer));
  ASSERT_OK(server.Start());
  const std::string url = server.url() + MetricsPath("team", "chat");
  net::FetchResult allowed = Fetch(url, Token("alice-token"));
  EXPECT_EQ(allowed.status, 200) << allowed.body;
  EXPECT_EQ(Fetch(url, Token("rita-token")).body, ForbiddenBody("rita", "team", "chat"));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(reviews.size(), 2u);
    EXPECT_EQ(authorizations[0], "Bearer service-account-token");
    EXPECT_EQ(reviews[1]["kind"], "SubjectAccessReview");
    EXPECT_EQ(reviews[1]["spec"]["user"], "rita");
    EXPECT_EQ(reviews[1]["spec"]["groups"], Json({"team-readers", "system:authenticated"}));
    EXPECT_EQ(reviews[1]["spec"]["resourceAttributes"], Json({{"namespace", "team"},
                                                              {"verb", "get"},
                                                              {"group", "worker.gpustack.ai"},
                                                              {"version", "v1"},
                                                              {"resource", "modeldeployments"},
                                                              {"subresource", "metrics"},
                                                              {"name", "chat"}}));
  }
  // With the Kubernetes API gone, nothing is served: 500, never an allow.
  kube_api.Stop();
  net::FetchResult failed =
      Fetch(server.url() + MetricsPath("team", "other"), Token("alice-token"));
  EXPECT_EQ(failed.status, 500);
  EXPECT_THAT(ParseJson(failed.body)["message"].get<std::string>(),
              HasSubstr("Internal error occurred: "));
  EXPECT_EQ(snapshots.calls, 1);
  server.Stop();
}

// Delegated authentication against a stand-in kube-apiserver: trust from the ConfigMap (followed
// without a restart), bearer tokens by TokenReview (cached), decisions by SubjectAccessReview.
class DelegatingKubeApi {
 public:
  DelegatingKubeApi() : server_(Options()) {
    server_.Route("GET", std::string(kAuthenticationConfigMapPath),
                  [this](const net::HttpRequest&) {
                    std::lock_guard lock(mu_);
                    net::HttpResponse response;
                    response.content_type = "application/json";
                    if (configmap_.is_null()) {
                      response.status = 404;
                      response.body = R"({"kind":"Status","code":404,"reason":"NotFound"})";
                    } else {
                      response.body = configmap_.dump();
                    }
                    return response;
                  });
    // Answered after review_delay / access_review_delay (from a thread of its own: the
    // stand-in's one IO thread keeps answering meanwhile).
    server_.RouteAsync("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                       [this](const net::HttpRequest& request, net::Responder respond) {
                         Later(review_delay_.load(), TokenReview(request.body), std::move(respond));
                       });
    server_.RouteAsync("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                       [this](const net::HttpRequest& request, net::Responder respond) {
                         Later(access_review_delay_.load(), AccessReview(request.body),
                               std::move(respond));
                       });
    std::string error;
    if (!Ok(server_.Start(), &error)) throw std::runtime_error(error);
  }

  KubeConfig Config() const {
    KubeConfig config;
    config.server = fmt::format("https://127.0.0.1:{}", server_.port());
    config.token = "serve-sa-token";
    config.ca_file = TlsFile("ca.pem");
    return config;
  }
  void SetTrust(const char* client_ca, const char* requestheader_ca, const char* allowed_names) {
    std::lock_guard lock(mu_);
    configmap_ = {{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata",
                   {{"name", "extension-apiserver-authentication"}, {"namespace", "kube-system"}}},
                  {"data",
                   {{"client-ca-file", ReadText(TlsFile(client_ca))},
                    {"requestheader-client-ca-file", ReadText(TlsFile(requestheader_ca))},
                    {"requestheader-allowed-names", allowed_names},
                    {"requestheader-username-headers", R"(["X-Remote-User"])"},
                    {"requestheader-group-headers", R"(["X-Remote-Group"])"},
                    {"requestheader-extra-headers-prefix", R"(["X-Remote-Extra-"])"}}}};
  }
  void DeleteTrust() {
    std::lock_guard lock(mu_);
    configmap_ = nullptr;
  }
  void SetReviewDelay(std::chrono::milliseconds delay) { review_delay_ = delay; }
  void SetAccessReviewDelay(std::chrono::milliseconds delay) { access_review_delay_ = delay; }
  ~DelegatingKubeApi() {
    std::vector<std::thread> delayed;
    {
      std::lock_guard lock(mu_);
      delayed.swap(delayed_);
    }
    for (std::thread& t : delayed) t.join();
    server_.Stop();
  }
  int token_reviews() const {
    std::lock_guard lock(mu_);
    return token_reviews_;
  }
  std::vector<Json> reviews() const {
    std::lock_guard lock(mu_);
    return reviews_;
  }

 private:
  static net::ServerOptions Options() {
    net::ServerOptions options;
    options.tls.emplace();
    options.tls->cert_file = TlsFile("server.pem");
    options.tls->key_file = TlsFile("server-key.pem");
    return options;
  }
  static std::string ReadText(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Later(std::chrono::milliseconds delay, net::HttpResponse answer, net::Responder respond) {
    if (delay.count() == 0) return respond(std::move(answer));
    std::lock_guard lock(mu_);
    delayed_.emplace_back(
        [delay, answer = std::move(answer), respond = std::move(respond)]() mutable {
          std::this_thread::sleep_for(delay);
          respond(std::move(answer));
        });
  }
  net::HttpResponse AccessReview(const std::string& body) {
    Json review = Json::parse(body, nullptr, false);
    std::lock_guard lock(mu_);
    reviews_.push_back(review);
    const std::string user = review["spec"]["user"];
    // Discovery for everyone, as the default system:discovery binding.
    review["status"] = {{"allowed", user == "system:serviceaccount:team:reader" ||
                                        user == "proxied-alice" ||
                                        review["spec"].contains("nonResourceAttributes")}};
    return Created(review);
  }
  net::HttpResponse TokenReview(const std::string& body) {
    Json review = Json::parse(body, nullptr, false);
    const std::string token = review["spec"]["token"];
    std::lock_guard lock(mu_);
    ++token_reviews_;
    const auto user = tokens_.find(token);
    review["status"] = {{"authenticated", user != tokens_.end()}};
    if (user != tokens_.end()) {
      review["status"]["user"] = {{"username", user->second},
                                  {"uid", "uid-" + token},
                                  {"groups", {"system:serviceaccounts", "system:authenticated"}},
                                  {"extra", {{"authentication.kubernetes.io/pod-name", {"p-1"}}}}};
    }
    return Created(review);
  }
  static net::HttpResponse Created(const Json& body) {
    net::HttpResponse response;
    response.status = 201;
    response.content_type = "application/json";
    response.body = body.dump();
    return response;
  }

  mutable std::mutex mu_;
  Json configmap_;
  std::map<std::string, std::string> tokens_ = {
      {"sa-token", "system:serviceaccount:team:reader"},
      {"norole-token", "system:serviceaccount:team:nobody"}};
  int token_reviews_ = 0;
  std::vector<Json> reviews_;
  std::atomic<std::chrono::milliseconds> review_delay_{std::chrono::milliseconds(0)};
  std::atomic<std::chrono::milliseconds> access_review_delay_{std::chrono::milliseconds(0)};
  std::vector<std::thread> delayed_;
  net::HttpServer server_;
};

// `modelmetrics serve` as deployed: delegated authentication and SubjectAccessReviews against
// the stand-in kube-apiserver, over a fixed snapshot. The ConfigMap watch starts with
// `watch_trust` (else the test calls trust->Start()).
struct DelegatedServer {
  explicit DelegatedServer(bool watch_trust = true) {
    kube_api.SetTrust("ca.pem", "requestheader-ca.pem", R"(["front-proxy"])");
    ServeConfig config = TestConfig(dir);
    config.authn.client_ca_file.clear();
    config.authn.requestheader_ca_file.clear();
    config.authn.requestheader_allowed_names.clear();
    config.authn.token_file.clear();
    config.authz.policy_file.clear();
    config.authn.delegated = true;
    config.authz.mode = ServeConfig::Authorization::kSubjectAccessReview;
    std::unique_ptr<Authenticator> authenticator;
    std::unique_ptr<Authorizer> authorizer;
    Status built = BuildAuthenticator(config, &authenticator, &kube, trust, metrics);
    if (built.ok()) built = BuildAuthorizer(config, &kube, &authorizer, metrics);
    if (!built.ok()) throw std::runtime_error(built.message());
    ApiServerOptions options = BuildApiServerOptions(config, trust);
    options.metrics = metrics;
    server = std::make_unique<ApiServer>(
        options,
        [this](std::string_view ns, std::string_view name, SteadyTime, Snapshot* out) {
          return snapshots.Get(ns, name, out);
        },
        std::move(authenticator), std::move(authorizer));
    if (Status started = server->Start(); !started.ok()) {
      throw std::runtime_error(started.message());
    }
    if (watch_trust) trust->Start();
  }
  ~DelegatedServer() {
    server->Stop();
    trust->Stop();
  }
  // A GET of `url` by `who`, timed and printed; expects 200.
  std::chrono::steady_clock::duration Timed(const std::string& url, const Credentials& who) {
    const auto start = std::chrono::steady_clock::now();
    const int status = Fetch(url, who).status;
    const auto took = std::chrono::steady_clock::now() - start;
    std::printf("answered %d in %.1f ms while 64 reviews waited\n", status,
                std::chrono::duration<double, std::milli>(took).count());
    EXPECT_EQ(status, 200);
    return took;
  }

  DelegatingKubeApi kube_api;
  KubeApiClient kube{kube_api.Config()};
  TempDir dir;
  std::shared_ptr<AuthenticationConfigWatcher> trust =
      std::make_shared<AuthenticationConfigWatcher>(&kube, std::chrono::hours(1));
  std::shared_ptr<ServerMetrics> metrics = std::make_shared<ServerMetrics>();
  FakeSnapshots snapshots;
  std::unique_ptr<ApiServer> server;
};

// Reviews of one kind take 3 s, and 64 requests that need one arrive at once (tokens nobody knows
// for TokenReviews, a front-proxy user whose access is not decided yet for SubjectAccessReviews):
// they wait in the review queue (one client's or user's share of it; the rest are 429), while the
// front proxy and a token already reviewed and decided are answered without waiting behind them,
// and /readyz?verbose says the reviews are degraded without failing.
void SlowReviewsNeverDelayRequestsThatNeedNone(bool access_reviews) {
  DelegatedServer serve;
  const std::string url = serve.server->url() + MetricsPath("team", "chat");
  const Credentials proxy = FrontProxy({{"X-Remote-User", "proxied-alice"}});
  // Reviewed and authorised once (both answers cached).
  ASSERT_EQ(Fetch(url, Token("sa-token")).status, 200);
  ASSERT_EQ(Fetch(url, proxy).status, 200);

  if (access_reviews) {
    serve.kube_api.SetAccessReviewDelay(std::chrono::seconds(3));
  } else {
    serve.kube_api.SetReviewDelay(std::chrono::seconds(3));
  }
  std::atomic<int> busy{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 64; ++i) {
    flood.emplace_back([&, i] {
      const std::string n = std::to_string(i);
      // One noisy user (in a new group each time, so no answer is cached) or unknown tokens.
      const Credentials who =
          access_reviews ? FrontProxy({{"X-Remote-User", "someone"}, {"X-Remote-Group", "g-" + n}})
                         : Token("random-" + n);
      if (Fetch(url, who).status == 429) ++busy;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the reviews are under way
  // Far inside the 3 s a review takes: nothing waited behind the flood.
  EXPECT_LT(serve.Timed(url, proxy), std::chrono::seconds(1));
  EXPECT_LT(serve.Timed(url, Token("sa-token")), std::chrono::seconds(1));
  const net::FetchResult ready = Fetch(serve.server->url() + "/readyz?verbose");
  EXPECT_EQ(ready.status, 200);
  EXPECT_THAT(ready.body, HasSubstr("[+]reviews degraded: "));
  EXPECT_THAT(serve.metrics->Render(Format::kText),
              HasSubstr("modelmetrics_reviews_refused_total "));
  serve.server->Stop();  // drops the queued reviews; the running ones end with the stand-in
  for (std::thread& t : flood) t.join();
  EXPECT_GE(busy.load(), 64 - 32) << "one client (or user) holds at most its share of the queue";
}

TEST(ApiServerTest, SlowTokenReviewsNeverDelayRequestsThatNeedNone) {
  SlowReviewsNeverDelayRequestsThatNeedNone(/*access_reviews=*/false);
}

TEST(ApiServerTest, SlowAccessReviewsNeverDelayRequestsDecidedAlready) {
  SlowReviewsNeverDelayRequestsThatNeedNone(/*access_reviews=*/true);
}

TEST(ApiServerTest, DelegatedAuthenticationFollowsTheConfigMapAndReviewsTokens) {
  DelegatedServer serve(/*watch_trust=*/false);
  DelegatingKubeApi& kube_api = serve.kube_api;
  ApiServer& server = *serve.server;
  auto& trust = serve.trust;
  const std::string url = server.url() + MetricsPath("team", "chat");

  // Not ready until the ConfigMap is read.
  EXPECT_EQ(Fetch(server.url() + "/readyz").status, 500);
  trust->Start();
  EXPECT_EQ(Fetch(server.url() + "/readyz").status, 200);

  // A ServiceAccount token through TokenReview, reviewed once and then cached.
  EXPECT_EQ(Fetch(url, Token("sa-token")).status, 200);
  EXPECT_EQ(Fetch(url, Token("sa-token")).status, 200);
  EXPECT_EQ(kube_api.token_reviews(), 1);
  EXPECT_EQ(Fetch(url, Token("wrong-token")).status, 401);
  // Authenticated, but without the role: 403 from the SubjectAccessReview.
  net::FetchResult forbidden = Fetch(url, Token("norole-token"));
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_THAT(forbidden.body,
              HasSubstr("User \\\"system:serviceaccount:team:nobody\\\" cannot get"));
  // The TokenReview's uid and extra reach the SubjectAccessReview.
  const std::vector<Json> reviews = kube_api.reviews();
  ASSERT_FALSE(reviews.empty());
  EXPECT_EQ(reviews.back()["spec"]["uid"], "uid-norole-token");
  EXPECT_EQ(reviews.back()["spec"]["extra"]["authentication.kubernetes.io/pod-name"],
            Json({"p-1"}));

  // The front proxy with the ConfigMap's CA and name, and a client certificate of its client CA.
  const Credentials proxy = FrontProxy({{"X-Remote-User", "proxied-alice"}});
  EXPECT_EQ(Fetch(url, proxy).status, 200);
  EXPECT_EQ(Fetch(server.url() + "/apis", ClientCert()).status, 200);
  // The front-proxy CA rotates: without a restart, the old proxy certificate is refused, and
  // the certificate the new CA signed (with its name allowed) is the proxy now.
  kube_api.SetTrust("ca.pem", "ca.pem", R"(["test-client"])");
  trust->RefreshNow();
  EXPECT_EQ(Fetch(url, proxy).status, 401);
  Credentials new_proxy = ClientCert();
  new_proxy.headers = {{"X-Remote-User", "proxied-alice"}};
  EXPECT_EQ(Fetch(url, new_proxy).status, 200);
  // A deleted ConfigMap trusts no certificate at all; tokens still work.
  kube_api.DeleteTrust();
  trust->RefreshNow();
  EXPECT_EQ(Fetch(url, new_proxy).status, 401);
  EXPECT_EQ(Fetch(url, Token("sa-token")).status, 200);
  trust->Stop();
  server.Stop();
  const std::string text = serve.metrics->Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("modelmetrics_token_review_cache_total{result=\"hit\"}"));
}

TEST(ApiServerTest, StartFailsOnBadCertificate) {
  TempDir dir;
  ServeConfig config = TestConfig(dir);
  config.tls.cert_file = dir.Write("bad.pem", "not a certificate");
  std::string error;
  ApiServer server(
      BuildApiServerOptions(config),
      [](std::string_view, std::string_view, SteadyTime, Snapshot*) { return Status::Ok(); },
      Authn(config), Authz(config));
  EXPECT_FALSE(Ok(server.Start(), &error));
  EXPECT_FALSE(error.empty());
}

// ---------------------------------------------------------------------------------------------
// Serve configuration

struct ConfigFiles {
  explicit ConfigFiles(const TempDir& dir) : dir(dir) {
    dir.Write("tokens.csv", kTokens);
    dir.Write("policy.yaml", kPolicy);
    dir.Write("objects.json", R"({"kind":"List","apiVersion":"v1","items":[]})");
    dir.Write("kubeconfig", "apiVersion: v1\nkind: Config\n");
    std::filesystem::copy_file(TlsFile("server.pem"), dir.path() + "/server.pem");
    std::filesystem::copy_file(TlsFile("server-key.pem"), dir.path() + "/server-key.pem");
    std::filesystem::copy_file(TlsFile("ca.pem"), dir.path() + "/ca.pem");
  }
  const TempDir& dir;
};

const std::string kBaseConfig =
    "tls_cert_file: server.pem\n"
    "tls_key_file: server-key.pem\n"
    "token_file: tokens.csv\n"
    "policy_file: policy.yaml\n"
    "objects_file: objects.json\n";

std::string ConfigError(const TempDir& dir, const std::string& yaml) {
  ServeConfig config;
  std::string error;
  EXPECT_FALSE(Ok(ParseServeConfig(yaml, dir.path(), &config), &error)) << yaml;
  return error;
}

// The spec's read limits: `request_timeout` and the `scrape:` mapping, into the aggregator's and
// the server's options.
TEST(ServeConfigTest, TheReadLimits) {
  TempDir dir;
  ConfigFiles files(dir);
  ServeConfig config;
  std::string error;
  ASSERT_OK(ParseServeConfig(kBaseConfig + "request_timeout: 12s\n"
                                           "scrape:\n"
                                           "  pod_limit: 10\n"
                                           "  max_in_flight: 4\n"
                                           "  fetch_timeout: 3s\n"
                                           "  max_body_bytes: 65536\n",
                             dir.path(), &config));
  AggregatorOptions options;
  config.ApplyReadLimits(&options);
  EXPECT_EQ(options.request_timeout, std::chrono::seconds(12));
  EXPECT_EQ(options.pod_limit, 10u);
  EXPECT_EQ(options.max_in_flight, 4u);
  EXPECT_EQ(options.fetch_timeout, std::chrono::seconds(3));
  EXPECT_EQ(options.max_body_bytes, 65536u);
  ApiServerOptions server = BuildApiServerOptions(config);
  EXPECT_EQ(server.request_timeout, std::chrono::seconds(12));
  EXPECT_EQ(server.min_read_budget, std::chrono::seconds(2));
  // A short budget leaves a read a quarter of it to start with.
  ASSERT_OK(ParseServeConfig(kBaseConfig + "request_timeout: 4s\n", dir.path(), &config));
  EXPECT_EQ(BuildApiServerOptions(config).min_read_budget, std::chrono::seconds(1));
  // Absent: the spec's numbers, which are AggregatorOptions' defaults.
  ASSERT_OK(ParseServeConfig(kBaseConfig, dir.path(), &config));
  AggregatorOptions defaults;
  config.ApplyReadLimits(&options);
  EXPECT_EQ(options.request_timeout, defaults.request_timeout);
  EXPECT_EQ(options.pod_limit, defaults.pod_limit);
  EXPECT_EQ(options.fetch_timeout, defaults.fetch_timeout);
  EXPECT_EQ(options.max_body_bytes, defaults.max_body_bytes);

  EXPECT_EQ(ConfigError(dir, kBaseConfig + "scrape: 5\n"), "scrape: expected a mapping");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "scrape:\n  fetch_timeout: 50ms\n"),
            "scrape.fetch_timeout: `50ms` is not a duration between 100ms and 1m (e.g. 2s)");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "scrape:\n  pod_limt: 3\n"),
            "unknown setting `scrape.pod_limt`");
  // A mapping's key is one only inside it.
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "scrape.pod_limit: 3\n"),
            "unknown setting `scrape.pod_limit`");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "scrape:\n  a.b: 3\n"), "unknown setting `scrape.a.b`");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "request_timeout: 100ms\n"),
            "request_timeout: `100ms` is not a duration between 1s and 5m (e.g. 8s)");
}

// One setting from its text (the CLI's flags): the table's bounds and words.
TEST(ServeConfigTest, OneValueFromText) {
  ServeConfig config;
  std::string error;
  ASSERT_OK(SetServeConfigValue("scrape.max_body_bytes", "2048", &config));
  EXPECT_EQ(config.reads.max_body_bytes, 2048u);
  ASSERT_OK(SetServeConfigValue("request_timeout", "20s", &config));
  EXPECT_EQ(config.reads.request_timeout, std::chrono::seconds(20));
  EXPECT_FALSE(Ok(SetServeConfigValue("scrape.pod_limit", "0", &config), &error));
  EXPECT_EQ(error, "scrape.pod_limit: 0 is out of range [1, 100000]");
  EXPECT_FALSE(Ok(SetServeConfigValue("scrape.pod_limit", "ten", &config), &error));
  EXPECT_EQ(error, "scrape.pod_limit: expected an integer");
  EXPECT_FALSE(Ok(SetServeConfigValue("scrape.pod_limit", "12x", &config), &error));
  EXPECT_EQ(error, "scrape.pod_limit: expected an integer");
  EXPECT_FALSE(Ok(SetServeConfigValue("scrape", "3", &config), &error));
  EXPECT_EQ(error, "unknown setting `scrape`");
  // Each kind reads its own text (no YAML between): a flag, a comma-separated list.
  ASSERT_OK(SetServeConfigValue("tls_self_signed", "true", &config));
  EXPECT_TRUE(config.tls.self_signed);
  EXPECT_FALSE(Ok(SetServeConfigValue("tls_self_signed", "yes", &config), &error));
  EXPECT_EQ(error, "tls_self_signed: expected true or false");
  ASSERT_OK(SetServeConfigValue("tls_self_signed_hosts", "a.example,127.0.0.1", &config));
  EXPECT_EQ(config.tls.self_signed_hosts, (std::vector<std::string>{"a.example", "127.0.0.1"}));
  ASSERT_OK(SetServeConfigValue("context", "{not: yaml}", &config));
  EXPECT_EQ(config.kube.context, "{not: yaml}") << "a text setting takes the text as it is";
}

// The documented key list is the table's: the reference is valid YAML with exactly the table's
// keys, and docs/deployment-metrics.md shows it verbatim.
TEST(ServeConfigTest, TheReferenceIsTheTable) {
  const std::string reference = ServeConfigReference();
  std::vector<nlohmann::json> docs;
  std::string error;
  ASSERT_OK(ParseYaml(reference, &docs));
  ASSERT_EQ(docs.size(), 1u);
  std::vector<std::string> keys;
  for (const auto& [key, value] : docs.front().items()) {
    if (value.is_object()) {
      for (const auto& item : value.items()) keys.push_back(key + "." + item.key());
    } else {
      keys.push_back(key);
    }
  }
  std::vector<std::string> table;
  for (const ServeConfigKey& k : ServeConfigKeys()) table.emplace_back(k.key);
  std::sort(keys.begin(), keys.end());
  std::sort(table.begin(), table.end());
  EXPECT_EQ(keys, table);
  std::string manual;
  ASSERT_OK(base::ReadFile(test_paths::Source("docs/deployment-metrics.md"), &manual));
  EXPECT_NE(manual.find("```yaml\n" + reference + "```"), std::string::npos)
      << "docs/deployment-metrics.md must show `modelmetrics serve --config-keys` verbatim:\n"
      << reference;
}

TEST(ServeConfigTest, ThePrometheusSource) {
  TempDir dir;
  ConfigFiles files(dir);
  dir.Write("store-token", "s3cret\n");
  const std::string yaml = kBaseConfig +
                           "source: prometheus\n"
                           "prometheus:\n"
                           "  url: https://store.monitoring:9090/prefix\n"
                           "  window: 5m\n"
                           "  stale_after: 2m\n"
                           "  settle: 10s\n"
                           "  query_timeout: 3s\n"
                           "  namespace_label: kubernetes_namespace\n"
                           "  pod_label: kubernetes_pod_name\n"
                           "  selector: 'job=\"vllm\"'\n"
                           "  pod_limit: 2000\n"
                           "  max_in_flight: 2\n"
                           "  max_response_bytes: 1048576\n"
                           "  ca_file: ca.pem\n"
                           "  bearer_token_file: store-token\n";
  ServeConfig config;
  std::string error;
  ASSERT_OK(ParseServeConfig(yaml, dir.path(), &config));
  EXPECT_EQ(config.reads.source, SampleSource::kPrometheus);
  const PrometheusSourceOptions& p = config.reads.prometheus;
  EXPECT_EQ(p.url, "https://store.monitoring:9090/prefix");
  EXPECT_EQ(p.window, std::chrono::minutes(5));
  EXPECT_EQ(p.stale_after, std::chrono::minutes(2));
  EXPECT_EQ(p.settle, std::chrono::seconds(10));
  EXPECT_EQ(p.query_timeout, std::chrono::seconds(3));
  EXPECT_EQ(p.namespace_label, "kubernetes_namespace");
  EXPECT_EQ(p.pod_label, "kubernetes_pod_name");
  EXPECT_EQ(p.selector, "job=\"vllm\"");
  EXPECT_EQ(p.pod_limit, 2000u);
  EXPECT_EQ(p.max_in_flight, 2u);
  EXPECT_EQ(p.max_response_bytes, 1048576u);
  EXPECT_EQ(p.ca_file, dir.path() + "/ca.pem");
  EXPECT_EQ(config.reads.prometheus_bearer_token_file, dir.path() + "/store-token");
  PrometheusSourceOptions loaded = p;
  ASSERT_OK(LoadPrometheusCredentials(config.reads.prometheus_bearer_token_file, "", &loaded));
  EXPECT_EQ(loaded.bearer_token, "s3cret");

  EXPECT_EQ(ConfigError(dir, kBaseConfig + "source: thanos\n"),
            "source: `thanos` is neither `scrape` nor `prometheus`");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "source: prometheus\n"),
            "prometheus: prometheus URL \"\" is not an http:// or https:// URL");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "source: prometheus\nprometheus: {url: "
                                           "'http://a', window: soon}\n"),
            "prometheus.window: `soon` is not a positive duration (e.g. 90s, 2m)");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "prometheus: {colour: blue}\n"),
            "unknown setting `prometheus.colour`");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "source: prometheus\nprometheus: {url: 'http://a', "
                                           "bearer_token_file: store-token, "
                                           "basic_auth_username: u}\n"),
            "prometheus: bearer_token_file and basic_auth_username exclude each other");
}

TEST(ServeConfigTest, ParsesEverySettingAndResolvesRelativePaths) {
  TempDir dir;
  ConfigFiles files(dir);
  const std::string yaml =
      "address: \"::1\"\n"
      "port: 9443\n"
      "api_group: metrics.example.com\n"
      "api_version: v1alpha1\n"
      "tls_cert_file: server.pem\n"
      "tls_key_file: server-key.pem\n"
      "client_ca_file: ca.pem\n"
      "requestheader_ca_file: " +
      TlsFile("requestheader-ca.pem") +
      "\n"
      "requestheader_allowed_names: [front-proxy, aggregator]\n"
      "token_file: tokens.csv\n"
      "authorization: subjectaccessreview\n"
      "objects_file: objects.json\n"
      "kubeconfig: kubeconfig\n"
      "context: kind-kind\n"
      "pod_ca_file: ca.pem\n"
      "max_in_flight: 5\n"
      "workers: 3\n"
      "snapshot_reuse_ms: 250\n"
      "max_connections_per_address: 16\n";
  ServeConfig config;
  std::string error;
  ASSERT_OK(ParseServeConfig(yaml, dir.path(), &config));
  EXPECT_EQ(config.server.address, "::1");
  EXPECT_EQ(config.server.port, 9443);
  EXPECT_EQ(config.api, (MetricsApi{.group = "metrics.example.com", .version = "v1alpha1"}));
  EXPECT_EQ(BuildApiServerOptions(config).api, config.api);
  EXPECT_EQ(config.tls.cert_file, dir.path() + "/server.pem");
  EXPECT_EQ(config.tls.key_file, dir.path() + "/server-key.pem");
  EXPECT_EQ(config.authn.client_ca_file, dir.path() + "/ca.pem");
  EXPECT_EQ(config.authn.requestheader_ca_file, TlsFile("requestheader-ca.pem"));
  EXPECT_EQ(config.authn.requestheader_allowed_names,
            (std::vector<std::string>{"front-proxy", "aggregator"}));
  EXPECT_EQ(config.authn.token_file, dir.path() + "/tokens.csv");
  EXPECT_EQ(config.authz.mode, ServeConfig::Authorization::kSubjectAccessReview);
  EXPECT_EQ(config.kube.objects_file, dir.path() + "/objects.json");
  EXPECT_EQ(config.kube.kubeconfig, dir.path() + "/kubeconfig");
  EXPECT_EQ(config.kube.context, "kind-kind");
  EXPECT_EQ(config.reads.pod_ca_file, dir.path() + "/ca.pem");
  EXPECT_EQ(config.server.max_in_flight, 5u);
  EXPECT_EQ(config.server.workers, 3);
  EXPECT_TRUE(config.UsesKubeApi());

  const ApiServerOptions options = BuildApiServerOptions(config);
  EXPECT_EQ(options.http.address, "::1");
  EXPECT_EQ(options.http.port, 9443);
  ASSERT_TRUE(options.http.tls.has_value());
  EXPECT_EQ(options.http.tls->client_ca_file, dir.path() + "/ca.pem");
  EXPECT_FALSE(options.http.tls->require_client_cert);
  EXPECT_EQ(options.max_in_flight, 5u);
  EXPECT_EQ(options.reuse_for, std::chrono::milliseconds(250));
  EXPECT_EQ(options.http.max_connections_per_address, 16u);
}

TEST(ServeConfigTest, DefaultsAndLoadFromFile) {
  TempDir dir;
  ConfigFiles files(dir);
  const std::string path = dir.Write("serve.yaml", kBaseConfig);
  ServeConfig config;
  std::string error;
  ASSERT_OK(LoadServeConfig(path, &config));
  EXPECT_EQ(config.server.address, "127.0.0.1");
  EXPECT_EQ(config.server.port, 8443);
  EXPECT_EQ(config.authz.mode, ServeConfig::Authorization::kPolicy);
  EXPECT_EQ(config.authz.policy_file, dir.path() + "/policy.yaml");
  EXPECT_FALSE(config.UsesKubeApi());
  EXPECT_NE(Authn(config), nullptr);
  EXPECT_NE(Authz(config), nullptr);

  EXPECT_FALSE(Ok(LoadServeConfig(dir.path() + "/none.yaml", &config), &error));
  EXPECT_EQ(error, dir.path() + "/none.yaml: cannot open: No such file or directory");
  const std::string bad = dir.Write("bad.yaml", kBaseConfig + "colour: blue\n");
  EXPECT_FALSE(Ok(LoadServeConfig(bad, &config), &error));
  EXPECT_EQ(error, bad + ": unknown setting `colour`");
}

TEST(ServeConfigTest, RejectsBadConfigurationsClearly) {
  TempDir dir;
  ConfigFiles files(dir);
  EXPECT_THAT(ConfigError(dir, "port: [\n"), HasSubstr("invalid YAML"));
  EXPECT_EQ(ConfigError(dir, "- a\n"), "expected a YAML mapping of settings");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "tokens: x\n"), "unknown setting `tokens`");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "port: 70000\n"),
            "port: 70000 is out of range [0, 65535]");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "port: http\n"), "port: expected an integer");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "max_in_flight: 0\n"),
            "max_in_flight: 0 is out of range [1, 100000]");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "in_cluster: maybe\n"),
            "in_cluster: expected true or false");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "address: [a]\n"), "address: expected a string");
  EXPECT_THAT(ConfigError(dir, kBaseConfig + "api_group: metrics\n"),
              HasSubstr("api_group `metrics`: must be a domain name with at least one dot"));
  EXPECT_THAT(ConfigError(dir, kBaseConfig + "api_version: beta1\n"),
              HasSubstr("api_version `beta1`: must be a Kubernetes API version"));
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "requestheader_allowed_names: front-proxy\n"),
            "requestheader_allowed_names: expected a list of names");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "authorization: rbac\n"),
            "authorization: `rbac` is neither `policy` nor `subjectaccessreview`");
  EXPECT_EQ(ConfigError(dir,
                        "tls_key_file: server-key.pem\ntoken_file: tokens.csv\n"
                        "policy_file: policy.yaml\nobjects_file: objects.json\n"),
            "tls_cert_file and tls_key_file are required (tokens never travel in the clear), or "
            "tls_self_signed: true");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "tls_self_signed: true\n"),
            "tls_self_signed makes its own certificate: remove tls_cert_file and tls_key_file");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "tls_self_signed_hosts: []\n"),
            "tls_self_signed_hosts: expected a non-empty list of host names");
  EXPECT_EQ(ConfigError(dir,
                        "tls_cert_file: server.pem\ntls_key_file: server-key.pem\n"
                        "policy_file: policy.yaml\nobjects_file: objects.json\n"),
            "no authentication: set token_file, client_ca_file, requestheader_ca_file and/or "
            "delegated_authentication");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "delegated_authentication: true\n"),
            "delegated_authentication needs kubeconfig or in_cluster: true");
  EXPECT_THAT(
      ConfigError(dir, kBaseConfig + "delegated_authentication: true\nkubeconfig: kubeconfig\n"
                                     "client_ca_file: ca.pem\n"),
      HasSubstr("remove client_ca_file and requestheader_ca_file"));
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "authentication_refresh: 0s\n"),
            "authentication_refresh: `0s` is not a duration between 100ms and 1h (e.g. 10s)");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "token_review_cache_ttl: 1h\n"),
            "token_review_cache_ttl: `1h` is not a duration between 100ms and 10m (e.g. 10s)");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "requestheader_allowed_names: [front-proxy]\n"),
            "requestheader_allowed_names needs requestheader_ca_file");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "kubeconfig: kubeconfig\nin_cluster: true\n"),
            "kubeconfig and in_cluster: true exclude each other");
  EXPECT_EQ(ConfigError(dir,
                        "tls_cert_file: server.pem\ntls_key_file: server-key.pem\n"
                        "token_file: tokens.csv\npolicy_file: policy.yaml\n"),
            "no object source: set objects_file, kubeconfig or in_cluster: true");
  EXPECT_EQ(ConfigError(dir,
                        "tls_cert_file: server.pem\ntls_key_file: server-key.pem\n"
                        "token_file: tokens.csv\nobjects_file: objects.json\n"),
            "authorization: policy needs policy_file");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "authorization: subjectaccessreview\n"),
            "policy_file is for authorization: policy, not subjectaccessreview");
  EXPECT_EQ(ConfigError(dir,
                        "tls_cert_file: server.pem\ntls_key_file: server-key.pem\n"
                        "token_file: tokens.csv\nobjects_file: objects.json\n"
                        "authorization: subjectaccessreview\n"),
            "authorization: subjectaccessreview needs kubeconfig or in_cluster: true");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "context: x\n"), "context needs kubeconfig");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "client_ca_file: nope.pem\n"),
            "client_ca_file: no such file: " + dir.path() + "/nope.pem");
}

TEST(ServeConfigTest, ObjectsFileCapAndWhatIsNotARegularFile) {
  TempDir dir;
  ConfigFiles files(dir);
  ServeConfig config;
  std::string error;
  ASSERT_OK(ParseServeConfig(kBaseConfig, dir.path(), &config));
  EXPECT_EQ(config.kube.max_objects_bytes, size_t{4} << 20);
  ASSERT_OK(ParseServeConfig(kBaseConfig + "max_objects_bytes: 0x10000\n", dir.path(), &config));
  EXPECT_EQ(config.kube.max_objects_bytes, 65536u);
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "max_objects_bytes: 0\n"),
            "max_objects_bytes: 0 is out of range [1, 1073741824]");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "max_objects_bytes: 18446744073709551615\n"),
            "max_objects_bytes: 18446744073709551615 is out of range [1, 1073741824]");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "max_objects_bytes: 1.5\n"),
            "max_objects_bytes: expected an integer");
  // A device or a directory named by mistake would block or fail late: refused at load time.
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "pod_ca_file: /dev/zero\n"),
            "pod_ca_file: not a regular file: /dev/zero");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "client_ca_file: " + dir.path() + "\n"),
            "client_ca_file: not a regular file: " + dir.path());
}

TEST(ServeConfigTest, OneDocumentOfScalarSettings) {
  TempDir dir;
  ConfigFiles files(dir);
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "---\nport: 1\n"),
            "expected one YAML document, found 2");
  EXPECT_EQ(ConfigError(dir, ""), "expected a YAML mapping of settings");
  EXPECT_EQ(ConfigError(dir, "port: \"8443\"\n" + kBaseConfig), "port: expected an integer");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "in_cluster: yes\n"),  // YAML 1.2: not a boolean
            "in_cluster: expected true or false");
  EXPECT_EQ(ConfigError(dir, kBaseConfig + "address: 1.5\n"), "address: expected a string");
  // A name that reads as a number is still a name.
  ServeConfig config;
  std::string error;
  ASSERT_OK(ParseServeConfig(kBaseConfig + "kubeconfig: kubeconfig\ncontext: 2024\n", dir.path(),
                             &config));
  EXPECT_EQ(config.kube.context, "2024");
  EXPECT_THAT(ConfigError(dir, "port: *nowhere\n"),
              HasSubstr("invalid YAML: line 1, column 7: unknown anchor `nowhere`"));
}

TEST(ServeConfigTest, BuildReportsFilesThatDoNotLoad) {
  TempDir dir;
  ConfigFiles files(dir);
  ServeConfig config;
  std::string error;
  ASSERT_OK(ParseServeConfig(kBaseConfig, dir.path(), &config));
  dir.Write("tokens.csv", "only,two\n");
  std::unique_ptr<Authenticator> authenticator;
  EXPECT_FALSE(Ok(BuildAuthenticator(config, &authenticator), &error));
  EXPECT_EQ(authenticator, nullptr);
  EXPECT_THAT(error, HasSubstr("tokens.csv: line 1"));
  dir.Write("policy.yaml", "rules: nope\n");
  std::unique_ptr<Authorizer> authorizer;
  EXPECT_FALSE(Ok(BuildAuthorizer(config, nullptr, &authorizer), &error));
  EXPECT_EQ(authorizer, nullptr);
  EXPECT_THAT(error, HasSubstr("policy.yaml: rules: expected a list of rules"));
}

// ---------------------------------------------------------------------------------------------
// External programs: the modelmetrics binary and kubectl

std::string FindKubectl() {
  if (access("/usr/bin/kubectl", X_OK) == 0) return "/usr/bin/kubectl";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string entry;
  while (std::getline(dirs, entry, ':')) {
    const std::string candidate = entry + "/kubectl";
    if (!entry.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string Kubeconfig(const TempDir& dir, uint16_t port, const std::string& token) {
  return dir.Write("kubeconfig-" + token, fmt::format("apiVersion: v1\n"
                                                      "kind: Config\n"
                                                      "clusters:\n"
                                                      "- name: modelmetrics\n"
                                                      "  cluster:\n"
                                                      "    server: https://127.0.0.1:{}\n"
                                                      "    certificate-authority: {}\n"
                                                      "users:\n"
                                                      "- name: user\n"
                                                      "  user:\n"
                                                      "    token: {}\n"
                                                      "contexts:\n"
                                                      "- name: test\n"
                                                      "  context:\n"
                                                      "    cluster: modelmetrics\n"
                                                      "    user: user\n"
                                                      "current-context: test\n",
                                                      port, TlsFile("ca.pem"), token));
}

TEST(KubectlTest, GetRawPrintsTheSnapshotAndStatusErrors) {
  const std::string kubectl = FindKubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed; the test script installs it";
  TempDir dir;
  ServerUnderTest server(TestConfig(dir));
  ASSERT_TRUE(server.started());
  const std::string path = MetricsPath("team", "chat");
  // HOME in the temp dir: kubectl's cache stays out of the real one.
  const auto kubectl_get = [&](const std::string& token, const std::string& raw) {
    return RunCommand(fmt::format("env HOME={} {} --kubeconfig {} get --raw {}", dir.path(),
                                  kubectl, Kubeconfig(dir, server.port(), token), raw),
                      dir);
  };

  CommandResult ok = kubectl_get("alice-token", path);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  std::string out = ok.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  EXPECT_EQ(out, SnapshotToJson(MakeSnapshot("team", "chat")));

  CommandResult discovery = kubectl_get("alice-token", "/apis/worker.gpustack.ai/v1");
  EXPECT_EQ(discovery.exit_code, 0) << discovery.err;
  EXPECT_THAT(discovery.out, HasSubstr("modeldeployments/metrics"));

  CommandResult unauthorized = kubectl_get("wrong-token", path);
  EXPECT_NE(unauthorized.exit_code, 0);
  EXPECT_THAT(unauthorized.err, HasSubstr("Unauthorized"));
  EXPECT_TRUE(unauthorized.out.empty()) << unauthorized.out;

  CommandResult forbidden = kubectl_get("bob-token", path);
  EXPECT_NE(forbidden.exit_code, 0);
  EXPECT_THAT(forbidden.err, HasSubstr("Forbidden"));
  EXPECT_THAT(forbidden.err,
              HasSubstr("User \"bob\" cannot get resource \"modeldeployments/metrics\" in API "
                        "group \"worker.gpustack.ai\" in the namespace \"team\""));

  CommandResult not_found = kubectl_get("alice-token", MetricsPath("team", "missing"));
  EXPECT_NE(not_found.exit_code, 0);
  EXPECT_THAT(not_found.err, HasSubstr("NotFound"));
}

std::string ModelmetricsBinary() { return test_paths::Modelmetrics(); }

TEST(ServeCommandTest, BadConfigExits2) {
  if (access(ModelmetricsBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "modelmetrics is not built: " << ModelmetricsBinary();
  }
  TempDir dir;
  ConfigFiles files(dir);
  const std::string config = dir.Write("serve.yaml", kBaseConfig + "colour: blue\n");
  CommandResult run = RunCommand(ModelmetricsBinary() + " serve --config " + config, dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("unknown setting `colour`"));
  dir.Write("tokens.csv", "only,two\n");
  const std::string bad_tokens = dir.Write("serve2.yaml", kBaseConfig);
  run = RunCommand(ModelmetricsBinary() + " serve --config " + bad_tokens, dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("tokens.csv: line 1"));
  run = RunCommand(ModelmetricsBinary() + " serve --config " + dir.path() + "/none.yaml", dir);
  EXPECT_EQ(run.exit_code, 2);
}

TEST(ServeCommandTest, StopsCleanlyOnSigterm) {
  if (access(ModelmetricsBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "modelmetrics is not built: " << ModelmetricsBinary();
  }
  TempDir dir;
  ConfigFiles files(dir);
  const std::string config = dir.Write("serve.yaml", kBaseConfig + "port: 0\n");
  // No --duration: only the signal (sent by `timeout` after 2 s) stops it; exit 0. One SIGTERM,
  // as Kubernetes sends: without --foreground, timeout also signals its whole process group,
  // and that second copy can land after serve has finished and restored its signal mask.
  CommandResult run = RunCommand("timeout --foreground --preserve-status -s TERM 2 " +
                                     ModelmetricsBinary() + " serve --config " + config,
                                 dir);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("serving ModelDeploymentMetrics on https://127.0.0.1:"));
  EXPECT_THAT(run.err, HasSubstr("SIGTERM, stopping"));
}

TEST(ServeCommandTest, ServesFromAnObjectsFileUntilTheDurationEnds) {
  if (access(ModelmetricsBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "modelmetrics is not built: " << ModelmetricsBinary();
  }
  TempDir dir;
  ConfigFiles files(dir);
  const std::string clean =
      dir.Write("serve-clean.yaml",
                "port: 0\n"
                "tls_cert_file: server.pem\n"
                "tls_key_file: server-key.pem\n"
                "token_file: tokens.csv\n"
                "policy_file: policy.yaml\n"
                "objects_file: " +
                    test_paths::Shared("fixtures/deployment/objects-example.json") + "\n");
  const std::string command =
      fmt::format("{} serve --config {} --duration 4s", ModelmetricsBinary(), clean);
  FILE* pipe = popen((command + " 2>" + dir.path() + "/serve.err").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[512];
  ASSERT_NE(fgets(line, sizeof line, pipe), nullptr);
  const std::string first(line);
  EXPECT_THAT(first, HasSubstr("serving ModelDeploymentMetrics on https://127.0.0.1:"));
  const size_t colon = first.rfind(':');
  const std::string base =
      "https://127.0.0.1:" + std::to_string(std::stoi(first.substr(colon + 1)));
  EXPECT_TRUE(Fetch(base + "/apis", Token("alice-token")).ok());
  net::FetchResult unknown = Fetch(base + MetricsPath("team", "no-such"), Token("alice-token"));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(ParseJson(unknown.body)["message"],
            "modeldeployments.worker.gpustack.ai \"no-such\" not found");
  EXPECT_EQ(Fetch(base + MetricsPath("team", "no-such")).status, 401);
  while (fgets(line, sizeof line, pipe) != nullptr) {
  }
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The acceptance case end to end: `modelmetrics serve` follows the simulator's objects file, so a
// Pod that restarts as a new Pod (new UID, counters from zero) gets a fresh baseline, never a
// window across the two processes.
TEST(ServeCommandTest, RestartedPodGetsAFreshBaselineThroughTheObjectsFile) {
  if (access(ModelmetricsBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "modelmetrics is not built: " << ModelmetricsBinary();
  }
  TempDir dir;
  ConfigFiles files(dir);
  sim::DeploymentSimOptions options;
  options.name = "chat";
  options.ns = "team";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = 2}};
  options.requests_per_second = 40;
  options.objects_file = dir.path() + "/live-objects.json";
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());
  const std::string config = dir.Write("serve-live.yaml",
                                       "port: 0\n"
                                       "tls_cert_file: server.pem\n"
                                       "tls_key_file: server-key.pem\n"
                                       "token_file: tokens.csv\n"
                                       "policy_file: policy.yaml\n"
                                       "snapshot_reuse_ms: 0\n"
                                       "objects_file: live-objects.json\n");
  const std::string command =
      fmt::format("{} serve --config {} --duration 8s", ModelmetricsBinary(), config);
  FILE* pipe = popen((command + " 2>" + dir.path() + "/serve.err").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[512];
  ASSERT_NE(fgets(line, sizeof line, pipe), nullptr);
  const std::string first(line);
  ASSERT_THAT(first, HasSubstr("serving ModelDeploymentMetrics on https://127.0.0.1:"));
  const std::string url =
      "https://127.0.0.1:" + std::to_string(std::stoi(first.substr(first.rfind(':') + 1))) +
      MetricsPath("team", "chat");
  const std::string pod = "chat-server-0";
  const auto read = [&] {
    const net::FetchResult r = Fetch(url, Token("alice-token"));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  };
  const auto has_ttft_window = [&](const std::string& body) {
    return body.find("{\"name\":\"ttft\",\"pod\":\"" + pod + "\"") != std::string::npos;
  };
  // A second of traffic between reads (at least: a loaded machine only lengthens it) gives the
  // Pod's counters a second sample, so a window.
  const auto traffic = [] { LetTimePass(std::chrono::seconds(1)); };
  read();
  traffic();
  EXPECT_TRUE(has_ttft_window(read()));
  const std::string old_uid = simulator.Pods()[0].uid;
  ASSERT_TRUE(simulator.SetFault(pod, sim::PodFault::kRestart));
  ASSERT_TRUE(simulator.SetFault(pod, sim::PodFault::kNone));
  ASSERT_NE(simulator.Pods()[0].uid, old_uid);
  traffic();
  const std::string after = read();
  EXPECT_FALSE(has_ttft_window(after)) << after;
  EXPECT_THAT(after,
              HasSubstr(R"({"pod":"chat-server-0","source":"vllm:time_to_first_token_seconds",)"
                        R"("reason":"awaiting a second counter sample"})"));
  traffic();
  EXPECT_TRUE(has_ttft_window(read()));
  while (fgets(line, sizeof line, pipe) != nullptr) {
  }
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace modelmetrics::deployment
