// Tests of the Kubernetes API client and source against a loopback TLS fake API server (built on
// net::HttpServer) that serves the shared example objects on the real API paths, checks bearer
// tokens or client certificates, applies label selectors, answers unknown objects with 404 Status
// objects and answers SubjectAccessReviews. Also the kubeconfig and in-cluster loaders.
#include "kube/kube_api.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/object_file.h"
#include "kube/object_test_files.h"
#include "net/http_server.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;

using ::modelmetrics::testing::Ok;
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using ::modelmetrics::testing::ExamplePath;
using ::modelmetrics::testing::TempDir;

constexpr char kToken[] = "s3cr3t-token";
constexpr char kChatSelector[] =
    "app.kubernetes.io/name=model-deployment,app.kubernetes.io/instance=chat";

std::string TlsFile(const std::string& name) { return test_paths::Tls(name); }

std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string Base64(const std::string& data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8) | uint8_t(data[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  if (i < data.size()) {
    uint32_t v = uint8_t(data[i]) << 16;
    if (i + 1 < data.size()) v |= uint8_t(data[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < data.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// Sets an environment variable for its lifetime. Only used while no other thread runs.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Decodes %XX and '+' as a query-string value.
std::string QueryUnescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = pair.find('=');
    out[QueryUnescape(pair.substr(0, eq))] =
        eq == std::string_view::npos ? "" : QueryUnescape(pair.substr(eq + 1));
  }
  return out;
}

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    out.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

net::HttpResponse StatusResponse(int code, const std::string& reason, const std::string& message) {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  net::HttpResponse response;
  response.status = code;
  response.content_type = "application/json";
  response.body = status.dump();
  return response;
}

net::HttpResponse JsonResponse(const json& body) {
  net::HttpResponse response;
  response.content_type = "application/json";
  response.body = body.dump();
  return response;
}

// A fake kube-apiserver over TLS (server.pem, trusted by ca.pem) serving objects-example.json.
// Authenticates `Bearer kToken` or a client certificate verified by ca.pem.
class FakeKubeApi {
 public:
  FakeKubeApi() : server_(Options()) {
    json list = json::parse(ReadAll(ExamplePath()));
    for (const json& item : list.at("items")) {
      const std::string kind = item.at("kind");
      const json& meta = item.at("metadata");
      std::string key =
          meta.at("namespace").get<std::string>() + "/" + meta.at("name").get<std::string>();
      objects_[kind][key] = item;
    }
    server_.RoutePrefix("GET", "/api/", [this](const net::HttpRequest& r) { return Get(r); });
    server_.RoutePrefix("GET", "/apis/", [this](const net::HttpRequest& r) { return Get(r); });
    server_.Route("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                  [this](const net::HttpRequest& r) { return Review(r); });
    std::string error;
    if (!Ok(server_.Start(), &error)) throw std::runtime_error("fake API server: " + error);
  }

  std::string Url() const { return "https://127.0.0.1:" + std::to_string(server_.port()); }

  std::string last_query() const {
    std::lock_guard lock(mu_);
    return last_query_;
  }
  json last_review() const {
    std::lock_guard lock(mu_);
    return last_review_;
  }
  std::string last_content_type() const {
    std::lock_guard lock(mu_);
    return last_content_type_;
  }
  int requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  static net::ServerOptions Options() {
    net::ServerOptions options;
    options.tls = net::TlsOptions{.cert_file = TlsFile("server.pem"),
                                  .key_file = TlsFile("server-key.pem"),
                                  .client_ca_file = TlsFile("ca.pem")};
    return options;
  }

  static bool Authenticated(const net::HttpRequest& request) {
    if (request.headers.Get("Authorization") == std::string("Bearer ") + kToken) return true;
    return request.peer.cert_verified && request.peer.subject_cn == "test-client";
  }

  net::HttpResponse Get(const net::HttpRequest& request) {
    {
      std::lock_guard lock(mu_);
      ++requests_;
      last_query_ = request.query;
    }
    if (!Authenticated(request)) return StatusResponse(401, "Unauthorized", "Unauthorized");
    if (request.headers.Get("Accept") != "application/json") {
      return StatusResponse(406, "NotAcceptable", "expected Accept: application/json");
    }
    std::vector<std::string> parts = Split(request.path, '/');  // "", "api"/"apis", ...
    // /api/v1/namespaces/{ns}/pods
    if (parts.size() == 6 && parts[1] == "api" && parts[2] == "v1" && parts[3] == "namespaces" &&
        parts[5] == "pods") {
      return ListPods(parts[4], ParseQuery(request.query)["labelSelector"]);
    }
    // /apis/{group}/{version}/namespaces/{ns}/{resource}/{name}
    if (parts.size() == 8 && parts[1] == "apis" && parts[4] == "namespaces") {
      std::string group_version = parts[2] + "/" + parts[3];
      const std::string& resource = parts[6];
      const char* kind = nullptr;
      std::string qualified;
      if (group_version == "worker.gpustack.ai/v1alpha1" && resource == "modeldeployments") {
        kind = "ModelDeployment";
        qualified = "modeldeployments.worker.gpustack.ai";
      } else if (group_version == "apps/v1" && resource == "replicasets") {
        kind = "ReplicaSet";
        qualified = "replicasets.apps";
      } else if (group_version == "apps/v1" && resource == "deployments") {
        kind = "Deployment";
        qualified = "deployments.apps";
      }
      if (kind != nullptr) {
        if (parts[5] == "broken") {  // a proxy in the way answering plain text
          net::HttpResponse response = net::HttpResponse::Text(502, "upstream went away\n");
          return response;
        }
        auto& by_key = objects_[kind];
        auto it = by_key.find(parts[5] + "/" + parts[7]);
        if (it == by_key.end()) {
          return StatusResponse(404, "NotFound", qualified + " \"" + parts[7] + "\" not found");
        }
        return JsonResponse(it->second);
      }
    }
    return StatusResponse(404, "NotFound", "the server could not find the requested resource");
  }

  // Applies an equality selector `k=v,...` (the only form the client should send); anything
  // else is a 400, as a strict server would make it.
  net::HttpResponse ListPods(const std::string& ns, const std::string& selector) {
    std::vector<std::pair<std::string, std::string>> terms;
    if (!selector.empty()) {
      for (const std::string& term : Split(selector, ',')) {
        size_t eq = term.find('=');
        if (eq == std::string::npos || eq == 0) {
          return StatusResponse(400, "BadRequest", "unable to parse requirement: " + term);
        }
        terms.emplace_back(term.substr(0, eq), term.substr(eq + 1));
      }
    }
    json items = json::array();
    for (const auto& [key, pod] : objects_["Pod"]) {
      if (pod["metadata"]["namespace"] != ns) continue;
      const json& labels = pod["metadata"].value("labels", json::object());
      bool matches = true;
      for (const auto& [k, v] : terms) matches = matches && labels.value(k, "\x01") == v;
      if (!matches) continue;
      json item = pod;
      item.erase("kind");  // list items carry no kind/apiVersion in the real API
      item.erase("apiVersion");
      items.push_back(std::move(item));
    }
    return JsonResponse({{"apiVersion", "v1"},
                         {"kind", "PodList"},
                         {"metadata", {{"resourceVersion", "4242"}}},
                         {"items", std::move(items)}});
  }

  net::HttpResponse Review(const net::HttpRequest& request) {
    if (!Authenticated(request)) return StatusResponse(401, "Unauthorized", "Unauthorized");
    json review = json::parse(request.body, nullptr, false);
    {
      std::lock_guard lock(mu_);
      last_review_ = review;
      last_content_type_ = std::string(request.headers.Get("Content-Type"));
    }
    if (!review.is_object() || review.value("kind", "") != "SubjectAccessReview" ||
        review.value("apiVersion", "") != "authorization.k8s.io/v1") {
      return StatusResponse(400, "BadRequest", "not a SubjectAccessReview");
    }
    const json spec = review.value("spec", json::object());
    const json attributes = spec.value("resourceAttributes", json::object());
    bool allowed =
        spec.value("user", "") == "alice" &&
        attributes == json{{"namespace", "team"},           {"verb", "get"},
                           {"group", "worker.gpustack.ai"}, {"resource", "modeldeployments"},
                           {"subresource", "metrics"},      {"name", "chat"}};
    json answer = review;
    answer["status"] = allowed ? json{{"allowed", true}}
                               : json{{"allowed", false}, {"reason", "no RBAC policy matched"}};
    net::HttpResponse response = JsonResponse(answer);
    response.status = 201;  // the API server answers a create with 201 Created
    return response;
  }

  mutable std::mutex mu_;
  std::string last_query_;
  json last_review_;
  std::string last_content_type_;
  int requests_ = 0;
  std::map<std::string, std::map<std::string, json>> objects_;  // kind -> ns/name -> object
  net::HttpServer server_;  // last: stops (joining handlers) before the state above goes
};

// A kubeconfig whose current context points at `server` with the given cluster/user fields
// (YAML lines, already indented by the caller's 4 spaces).
std::string Kubeconfig(const std::string& server, const std::string& cluster_fields,
                       const std::string& user_fields) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "current-context: fake\n"
         "clusters:\n"
         "- name: other\n"
         "  cluster:\n"
         "    server: https://192.0.2.1:6443\n"
         "- name: fake-cluster\n"
         "  cluster:\n"
         "    server: " +
         server + "/\n" + cluster_fields +
         "contexts:\n"
         "- name: other\n"
         "  context: {cluster: other, user: nobody}\n"
         "- name: fake\n"
         "  context:\n"
         "    cluster: fake-cluster\n"
         "    user: fake-user\n"
         "    namespace: team\n"
         "users:\n"
         "- name: nobody\n"
         "  user: {}\n"
         "- name: fake-user\n"
         "  user:\n" +
         user_fields;
}

KubeConfig MustLoad(const std::string& path, const std::string& context = "") {
  KubeConfig config;
  std::string error;
  EXPECT_OK(LoadKubeconfig(path, context, &config));
  return config;
}

std::string Describe(const Status& status) {
  return std::to_string(status.code()) + " " + status.reason() + ": " + status.message();
}

// Reads every object of the example through `source`, the way the aggregator does.
struct Read {
  ModelDeployment md;
  std::vector<Pod> pods;
  std::vector<Pod> generation_pods;
  ReplicaSet rs;
  Deployment deployment;
};

Read ReadEverything(ObjectSource& source) {
  Read read;
  Status status = source.GetModelDeployment("team", "chat", &read.md);
  EXPECT_TRUE(status.ok()) << Describe(status);
  status = source.ListPods("team", kChatSelector, &read.pods);
  EXPECT_TRUE(status.ok()) << Describe(status);
  status = source.ListPods("team", "app.kubernetes.io/component=generation", &read.generation_pods);
  EXPECT_TRUE(status.ok()) << Describe(status);
  status = source.GetReplicaSet("team", "chat-router-7c9f", &read.rs);
  EXPECT_TRUE(status.ok()) << Describe(status);
  status = source.GetDeployment("team", "chat-router", &read.deployment);
  EXPECT_TRUE(status.ok()) << Describe(status);
  return read;
}

std::vector<Pod> SortedByName(std::vector<Pod> pods) {
  std::sort(pods.begin(), pods.end(),
            [](const Pod& a, const Pod& b) { return a.metadata.name < b.metadata.name; });
  return pods;
}

void ExpectSameRead(const Read& api, const Read& file) {
  EXPECT_EQ(api.md, file.md);
  ASSERT_EQ(api.pods.size(), 3u);
  EXPECT_EQ(SortedByName(api.pods), SortedByName(file.pods));  // "in any order"
  ASSERT_EQ(api.generation_pods.size(), 1u);
  EXPECT_EQ(api.generation_pods, file.generation_pods);
  EXPECT_EQ(api.rs, file.rs);
  EXPECT_EQ(api.deployment, file.deployment);
}

Read ReadFromFile() {
  FileObjectSource file;
  std::string error;
  EXPECT_OK(file.Load(ExamplePath()));
  return ReadEverything(file);
}

TEST(KubeApiTest, SourceWithCaPathMatchesTheFileSource) {
  FakeKubeApi api;
  TempDir dir;
  dir.Write("cluster-ca.pem", ReadAll(TlsFile("ca.pem")));
  // A relative certificate-authority is relative to the kubeconfig's directory, not the cwd.
  std::string path =
      dir.Write("config", Kubeconfig(api.Url(), "    certificate-authority: cluster-ca.pem\n",
                                     std::string("    token: ") + kToken + "\n"));
  KubeConfig config = MustLoad(path);
  EXPECT_EQ(config.server, api.Url());  // the trailing slash is gone
  EXPECT_EQ(config.ca_file, dir.path() + "/cluster-ca.pem");
  EXPECT_EQ(config.token, kToken);
  EXPECT_EQ(config.namespace_, "team");

  KubeApiClient client(config);
  KubeApiSource source(&client);
  Read read = ReadEverything(source);
  ExpectSameRead(read, ReadFromFile());
  EXPECT_EQ(read.md.engine, "vllm");
  EXPECT_EQ(read.pods.size(), 3u);
}

TEST(KubeApiTest, LabelSelectorIsUrlEncoded) {
  FakeKubeApi api;
  TempDir dir;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("ca.pem");
  config.token = kToken;
  KubeApiClient client(config);
  KubeApiSource source(&client);
  std::vector<Pod> pods;
  ASSERT_TRUE(source.ListPods("team", kChatSelector, &pods).ok());
  EXPECT_EQ(api.last_query(),
            "labelSelector=app.kubernetes.io%2Fname%3Dmodel-deployment%2Capp.kubernetes.io%"
            "2Finstance%3Dchat");
  ASSERT_TRUE(
      source.ListPods("team", "modeldeployment.gpustack.ai/router=llm-d-router", &pods).ok());
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].metadata.name, "chat-router-7c9f-abcde");
  ASSERT_TRUE(source.ListPods("elsewhere", kChatSelector, &pods).ok());
  EXPECT_TRUE(pods.empty());
}

TEST(KubeApiTest, CertificateAuthorityDataAndClientCertificateData) {
  FakeKubeApi api;
  TempDir dir;
  // No token: the fake authenticates the client certificate (CN test-client, signed by ca.pem).
  std::string path = dir.Write(
      "config",
      Kubeconfig(
          api.Url(), "    certificate-authority-data: " + Base64(ReadAll(TlsFile("ca.pem"))) + "\n",
          "    client-certificate-data: " + Base64(ReadAll(TlsFile("client.pem"))) +
              "\n    client-key-data: " + Base64(ReadAll(TlsFile("client-key.pem"))) + "\n"));
  KubeConfig config = MustLoad(path);
  EXPECT_EQ(config.ca_pem, ReadAll(TlsFile("ca.pem")));
  EXPECT_TRUE(config.ca_file.empty());
  EXPECT_EQ(config.client_cert_pem, ReadAll(TlsFile("client.pem")));
  EXPECT_TRUE(config.token.empty());

  KubeApiClient client(config);
  KubeApiSource source(&client);
  ExpectSameRead(ReadEverything(source), ReadFromFile());
}

TEST(KubeApiTest, ClientCertificateFilesAndTokenFileAreRelativeToTheKubeconfig) {
  FakeKubeApi api;
  TempDir dir;
  fs::create_directory(dir.path() + "/pki");
  dir.Write("pki/ca.pem", ReadAll(TlsFile("ca.pem")));
  dir.Write("pki/client.pem", ReadAll(TlsFile("client.pem")));
  dir.Write("pki/client-key.pem", ReadAll(TlsFile("client-key.pem")));
  std::string path =
      dir.Write("config", Kubeconfig(api.Url(), "    certificate-authority: pki/ca.pem\n",
                                     "    client-certificate: pki/client.pem\n"
                                     "    client-key: pki/client-key.pem\n"));
  KubeConfig config = MustLoad(path);
  EXPECT_EQ(config.client_cert_file, dir.path() + "/pki/client.pem");
  {
    KubeApiClient client(config);
    KubeApiSource source(&client);
    ModelDeployment md;
    Status status = source.GetModelDeployment("team", "chat", &md);
    EXPECT_TRUE(status.ok()) << Describe(status);
  }

  dir.Write("token", std::string(kToken) + "\n");  // the newline is not part of the token
  path = dir.Write("config2", Kubeconfig(api.Url(), "    certificate-authority: pki/ca.pem\n",
                                         "    tokenFile: token\n"));
  config = MustLoad(path);
  EXPECT_EQ(config.token, kToken);
  EXPECT_EQ(config.token_file, dir.path() + "/token");
  KubeApiClient client(config);
  KubeApiSource source(&client);
  ModelDeployment md;
  Status status = source.GetModelDeployment("team", "chat", &md);
  EXPECT_TRUE(status.ok()) << Describe(status);
}

TEST(KubeApiTest, TokenFileIsReadWhenNoTokenIsGiven) {
  FakeKubeApi api;
  TempDir dir;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("ca.pem");
  config.token_file = dir.Write("token", std::string("  ") + kToken + "\n");
  KubeApiClient client(config);
  KubeApiSource source(&client);
  ReplicaSet rs;
  Status status = source.GetReplicaSet("team", "chat-router-7c9f", &rs);
  EXPECT_TRUE(status.ok()) << Describe(status);
}

TEST(KubeApiTest, WrongOrMissingTokenIsUnauthorized) {
  FakeKubeApi api;
  for (const char* token : {"wrong-token", ""}) {
    KubeConfig config;
    config.server = api.Url();
    config.ca_file = TlsFile("ca.pem");
    config.token = token;
    KubeApiClient client(config);
    KubeApiSource source(&client);
    ModelDeployment md;
    Status status = source.GetModelDeployment("team", "chat", &md);
    EXPECT_EQ(status.code(), 401) << Describe(status);
    EXPECT_EQ(status.reason(), "Unauthorized");
    EXPECT_EQ(status.message(), "Unauthorized");
    std::vector<Pod> pods;
    EXPECT_EQ(source.ListPods("team", kChatSelector, &pods).code(), 401);
  }
}

TEST(KubeApiTest, UnknownObjectsAreNotFoundWithTheServersMessage) {
  FakeKubeApi api;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("ca.pem");
  config.token = kToken;
  KubeApiClient client(config);
  KubeApiSource source(&client);

  ModelDeployment md;
  Status status = source.GetModelDeployment("team", "nope", &md);
  EXPECT_TRUE(status.not_found()) << Describe(status);
  EXPECT_EQ(status.reason(), "NotFound");
  EXPECT_EQ(status.message(), R"(modeldeployments.worker.gpustack.ai "nope" not found)");
  // The file source says exactly the same.
  FileObjectSource file;
  std::string error;
  ASSERT_OK(file.Load(ExamplePath()));
  EXPECT_EQ(file.GetModelDeployment("team", "nope", &md).message(), status.message());

  ReplicaSet rs;
  status = source.GetReplicaSet("team", "x", &rs);
  EXPECT_TRUE(status.not_found());
  EXPECT_EQ(status.message(), R"(replicasets.apps "x" not found)");
  Deployment deployment;
  status = source.GetDeployment("other-ns", "chat-router", &deployment);
  EXPECT_TRUE(status.not_found());
  EXPECT_EQ(status.message(), R"(deployments.apps "chat-router" not found)");

  std::string body;
  status = client.Request("GET", "/apis/nothing.example.com/v1/things", "", &body);
  EXPECT_EQ(status.code(), 404);
  EXPECT_EQ(status.message(), "the server could not find the requested resource");
}

TEST(KubeApiTest, NonStatusErrorsAndBrokenServersAreClearFailures) {
  FakeKubeApi api;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("ca.pem");
  config.token = kToken;
  KubeApiClient client(config);
  KubeApiSource source(&client);
  ModelDeployment md;
  Status status = source.GetModelDeployment("broken", "chat", &md);
  EXPECT_EQ(status.code(), 503) << Describe(status);
  EXPECT_EQ(status.reason(), "ServiceUnavailable");
  EXPECT_EQ(status.message(),
            "GET " + api.Url() +
                "/apis/worker.gpustack.ai/v1alpha1/namespaces/broken/modeldeployments/chat: "
                "HTTP 502: upstream went away");
}

TEST(KubeApiTest, ServerDownIsServiceUnavailable) {
  uint16_t port = 0;
  {
    net::HttpServer server(net::ServerOptions{});
    std::string error;
    ASSERT_OK(server.Start());
    port = server.port();
  }  // stopped: nothing listens on `port` any more
  KubeConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(port);
  config.ca_file = TlsFile("ca.pem");
  config.token = kToken;
  KubeApiClient client(config);
  KubeApiSource source(&client);
  std::vector<Pod> pods;
  Status status = source.ListPods("team", kChatSelector, &pods);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), 503) << Describe(status);
  EXPECT_EQ(status.reason(), "ServiceUnavailable");
  EXPECT_NE(status.message().find("GET " + config.server + "/api/v1/namespaces/team/pods?"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("(connection_refused)"), std::string::npos) << status.message();
}

TEST(KubeApiTest, UntrustedServerCertificateFails) {
  FakeKubeApi api;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("untrusted-ca.pem");
  config.token = kToken;
  KubeApiClient client(config);
  KubeApiSource source(&client);
  ModelDeployment md;
  Status status = source.GetModelDeployment("team", "chat", &md);
  EXPECT_EQ(status.code(), 500) << Describe(status);
  EXPECT_NE(status.message().find("(tls)"), std::string::npos) << status.message();
  EXPECT_EQ(api.requests(), 0);  // the token never left the client
}

TEST(KubeApiTest, SubjectAccessReviewPostsTheRequestAndReadsAllowed) {
  FakeKubeApi api;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("ca.pem");
  config.token = kToken;
  KubeApiClient client(config);

  AccessRequest request;
  request.user = "alice";
  request.groups = {"system:authenticated", "devs"};
  request.ns = "team";
  request.name = "chat";
  bool allowed = false;
  Status status = SubjectAccessReview(&client, request, &allowed);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_TRUE(allowed);
  EXPECT_EQ(api.last_content_type(), "application/json");
  json sent = api.last_review();
  EXPECT_EQ(sent["apiVersion"], "authorization.k8s.io/v1");
  EXPECT_EQ(sent["kind"], "SubjectAccessReview");
  EXPECT_EQ(sent["spec"]["user"], "alice");
  EXPECT_EQ(sent["spec"]["groups"], json({"system:authenticated", "devs"}));
  EXPECT_EQ(sent["spec"]["resourceAttributes"], json({{"namespace", "team"},
                                                      {"verb", "get"},
                                                      {"group", "worker.gpustack.ai"},
                                                      {"resource", "modeldeployments"},
                                                      {"subresource", "metrics"},
                                                      {"name", "chat"}}));

  request.user = "mallory";
  allowed = true;
  status = SubjectAccessReview(&client, request, &allowed);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_FALSE(allowed);

  request.user = "alice";
  request.ns = "other";
  status = SubjectAccessReview(&client, request, &allowed);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_FALSE(allowed);
}

TEST(KubeApiTest, SubjectAccessReviewOfAPathCarriesUidExtraAndVersion) {
  FakeKubeApi api;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("ca.pem");
  config.token = kToken;
  KubeApiClient client(config);

  AccessRequest request{.user = "alice",
                        .uid = "uid-1",
                        .groups = {"system:authenticated"},
                        .extra = {{"scopes", {"a", "b"}}},
                        .verb = "get",
                        .path = "/metrics"};
  bool allowed = false;
  ASSERT_TRUE(SubjectAccessReview(&client, request, &allowed).ok());
  json sent = api.last_review();
  EXPECT_EQ(sent["spec"]["nonResourceAttributes"], json({{"path", "/metrics"}, {"verb", "get"}}));
  EXPECT_FALSE(sent["spec"].contains("resourceAttributes"));
  EXPECT_EQ(sent["spec"]["uid"], "uid-1");
  EXPECT_EQ(sent["spec"]["extra"], json({{"scopes", {"a", "b"}}}));

  request.path.clear();
  request.version = "v1";
  request.ns = "team";
  request.name = "chat";
  ASSERT_TRUE(SubjectAccessReview(&client, request, &allowed).ok());
  EXPECT_EQ(api.last_review()["spec"]["resourceAttributes"]["version"], "v1");
}

TEST(KubeApiTest, FailedSubjectAccessReviewDenies) {
  FakeKubeApi api;
  KubeConfig config;
  config.server = api.Url();
  config.ca_file = TlsFile("ca.pem");
  config.token = "not-the-token";
  KubeApiClient client(config);
  AccessRequest request;
  request.user = "alice";
  request.ns = "team";
  request.name = "chat";
  bool allowed = true;
  Status status = SubjectAccessReview(&client, request, &allowed);
  EXPECT_EQ(status.code(), 401);
  EXPECT_FALSE(allowed);
}

TEST(KubeApiTest, PemDataGoesToPrivateTempFilesRemovedWithTheClient) {
  TempDir dir;
  ScopedEnv tmpdir("TMPDIR", dir.path());
  {
    KubeConfig config;
    config.server = "https://127.0.0.1:1";
    config.ca_pem = ReadAll(TlsFile("ca.pem"));
    config.client_cert_pem = ReadAll(TlsFile("client.pem"));
    config.client_key_pem = ReadAll(TlsFile("client-key.pem"));
    KubeApiClient client(config);
    std::vector<std::string> contents;
    for (const auto& entry : fs::directory_iterator(dir.path())) {
      struct stat st {};
      ASSERT_EQ(stat(entry.path().c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 0777, 0600u) << entry.path();
      contents.push_back(ReadAll(entry.path()));
    }
    std::sort(contents.begin(), contents.end());
    std::vector<std::string> expected = {config.ca_pem, config.client_cert_pem,
                                         config.client_key_pem};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(contents, expected);
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(KubeApiTest, UnwritableTempDirFailsEveryRequestClearly) {
  ScopedEnv tmpdir("TMPDIR", "/nonexistent/mm-no-such-dir");
  KubeConfig config;
  config.server = "https://127.0.0.1:1";
  config.ca_pem = "-----BEGIN CERTIFICATE-----\n";
  KubeApiClient client(config);
  std::string body;
  Status status = client.Request("GET", "/api", "", &body);
  EXPECT_EQ(status.code(), 500);
  EXPECT_NE(status.message().find("certificate-authority-data: cannot create a temporary file"),
            std::string::npos)
      << status.message();
}

TEST(KubeconfigTest, SelectsTheNamedContext) {
  TempDir dir;
  std::string path = dir.Write("config", Kubeconfig("https://127.0.0.1:9", "", "    token: abc\n"));
  KubeConfig config = MustLoad(path, "other");
  EXPECT_EQ(config.server, "https://192.0.2.1:6443");
  EXPECT_TRUE(config.token.empty());
  EXPECT_TRUE(config.namespace_.empty());
  config = MustLoad(path);
  EXPECT_EQ(config.server, "https://127.0.0.1:9");
  EXPECT_EQ(config.token, "abc");
}

std::string LoadError(const std::string& path, const std::string& context = "") {
  KubeConfig config;
  std::string error;
  EXPECT_FALSE(Ok(LoadKubeconfig(path, context, &config), &error));
  return error;
}

TEST(KubeconfigTest, ErrorsSayWhatIsWrong) {
  TempDir dir;
  std::string good = dir.Write("good", Kubeconfig("https://127.0.0.1:9", "", "    token: t\n"));
  EXPECT_EQ(LoadError(good, "absent"), good + ": context \"absent\" does not exist");

  std::string no_current = dir.Write("no-current", "apiVersion: v1\nkind: Config\n");
  EXPECT_EQ(LoadError(no_current), no_current + ": current-context is not set");

  std::string no_cluster = dir.Write(
      "no-cluster", "current-context: c\ncontexts:\n- name: c\n  context: {cluster: gone}\n");
  EXPECT_EQ(LoadError(no_cluster),
            no_cluster + ": cluster \"gone\" of context \"c\" does not exist");

  std::string no_user = dir.Write("no-user",
                                  "current-context: c\n"
                                  "clusters: [{name: k, cluster: {server: 'https://h:1'}}]\n"
                                  "contexts: [{name: c, context: {cluster: k, user: u}}]\n");
  EXPECT_EQ(LoadError(no_user), no_user + ": user \"u\" of context \"c\" does not exist");

  std::string no_server = dir.Write("no-server",
                                    "current-context: c\nclusters: [{name: k, cluster: {}}]\n"
                                    "contexts: [{name: c, context: {cluster: k}}]\n");
  EXPECT_EQ(LoadError(no_server), no_server + ": cluster \"k\" has no server");

  std::string exec =
      dir.Write("exec", Kubeconfig("https://h:1", "", "    exec: {command: aws, apiVersion: x}\n"));
  EXPECT_NE(LoadError(exec).find("user \"fake-user\" uses `exec`"), std::string::npos);

  std::string insecure = dir.Write(
      "insecure",
      Kubeconfig("https://h:1", "    insecure-skip-tls-verify: true\n", "    token: t\n"));
  EXPECT_NE(LoadError(insecure).find("insecure-skip-tls-verify"), std::string::npos);

  std::string bad_data = dir.Write(
      "bad-data",
      Kubeconfig("https://h:1", "    certificate-authority-data: '!!'\n", "    token: t\n"));
  EXPECT_EQ(LoadError(bad_data),
            bad_data + ": cluster \"fake-cluster\": certificate-authority-data: invalid base64");

  std::string missing_token_file =
      dir.Write("missing-token", Kubeconfig("https://h:1", "", "    tokenFile: absent\n"));
  EXPECT_NE(
      LoadError(missing_token_file).find("tokenFile: " + dir.path() + "/absent: cannot open: "),
      std::string::npos);

  std::string not_yaml = dir.Write("not-yaml", "clusters: [\n");
  EXPECT_EQ(LoadError(not_yaml).rfind(not_yaml + ": invalid YAML: line ", 0), 0u);

  EXPECT_EQ(LoadError(dir.path() + "/absent").rfind(dir.path() + "/absent: cannot open: ", 0), 0u);
}

TEST(InClusterConfigTest, ReadsTheServiceAccount) {
  TempDir dir;
  dir.Write("token", "sa-token\n");
  dir.Write("ca.crt", ReadAll(TlsFile("ca.pem")));
  dir.Write("namespace", "team\n");
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    KubeConfig config;
    std::string error;
    ASSERT_OK(LoadInClusterConfig(dir.path(), &config));
    EXPECT_EQ(config.server, "https://10.96.0.1:443");
    EXPECT_EQ(config.token, "sa-token");
    EXPECT_EQ(config.token_file, dir.path() + "/token");
    EXPECT_EQ(config.ca_file, dir.path() + "/ca.crt");
    EXPECT_EQ(config.namespace_, "team");
  }
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00::1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
    KubeConfig config;
    std::string error;
    ASSERT_OK(LoadInClusterConfig(dir.path(), &config));
    EXPECT_EQ(config.server, "https://[fd00::1]:6443");
  }
}

TEST(InClusterConfigTest, MissingEnvironmentOrTokenIsAnError) {
  TempDir dir;
  KubeConfig config;
  std::string error;
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    EXPECT_FALSE(Ok(LoadInClusterConfig(dir.path(), &config), &error));
    EXPECT_EQ(error,
              "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
              "KUBERNETES_SERVICE_PORT must be defined");
    EXPECT_FALSE(Ok(LoadInClusterConfig(&config), &error));  // the real path, same check first
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  EXPECT_FALSE(Ok(LoadInClusterConfig(dir.path(), &config), &error));
  EXPECT_EQ(
      error.rfind("in-cluster service account token: " + dir.path() + "/token: cannot open: ", 0),
      0u)
      << error;
}

TEST(InClusterConfigTest, ServiceAccountConfigTalksToTheApi) {
  FakeKubeApi api;
  TempDir dir;
  dir.Write("token", std::string(kToken) + "\n");
  dir.Write("ca.crt", ReadAll(TlsFile("ca.pem")));
  KubeConfig config;
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "127.0.0.1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", api.Url().substr(api.Url().rfind(':') + 1));
    std::string error;
    ASSERT_OK(LoadInClusterConfig(dir.path(), &config));
  }
  KubeApiClient client(config);
  KubeApiSource source(&client);
  ExpectSameRead(ReadEverything(source), ReadFromFile());
}

}  // namespace
}  // namespace modelmetrics::deployment
