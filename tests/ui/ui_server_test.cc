// Tests for the web page's server: the access token guards every piece of data, the list and the
// detail carry the aggregator's reads, and a source that stops answering makes a deployment stale
// while its last good read stays. Also the page reading through the aggregated API (TLS, a
// bearer token, as through kube-apiserver), and refused there with a wrong token.
#include "ui/ui_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aggregation/aggregator.h"
#include "aggregation/baseline_store.h"
#include "aggregation/metrics_api_reader.h"
#include "kube/kube_api.h"
#include "kube/object_file.h"
#include "net/http_client.h"
#include "sim/deployment_sim.h"
#include "sim/loopback_api.h"
#include "status_matchers.h"
#include "test_deadlines.h"
#include "test_paths.h"

namespace modelmetrics::ui {

using ::modelmetrics::testing::Ok;
namespace {

using namespace std::chrono_literals;
using modelmetrics::testing::WaitUntil;

// The simulator's objects, with a switch that makes every object read fail.
class FlakySource : public deployment::ObjectSource {
 public:
  explicit FlakySource(deployment::ObjectSet objects) { file_.Set(std::move(objects)); }
  std::atomic<bool> failing{false};

  deployment::Status GetModelDeployment(std::string_view ns, std::string_view name,
                                        deployment::ModelDeployment* out) override {
    if (failing) return {503, "ServiceUnavailable", "the API server is down"};
    return file_.GetModelDeployment(ns, name, out);
  }
  deployment::Status ListPods(std::string_view ns, std::string_view selector,
                              std::vector<deployment::Pod>* out) override {
    return file_.ListPods(ns, selector, out);
  }
  deployment::Status GetReplicaSet(std::string_view ns, std::string_view name,
                                   deployment::ReplicaSet* out) override {
    return file_.GetReplicaSet(ns, name, out);
  }
  deployment::Status GetDeployment(std::string_view ns, std::string_view name,
                                   deployment::Deployment* out) override {
    return file_.GetDeployment(ns, name, out);
  }
  deployment::Status ListModelDeployments(std::string_view ns,
                                          std::vector<deployment::ModelDeployment>* out) override {
    return file_.ListModelDeployments(ns, out);
  }

 private:
  deployment::FileObjectSource file_;
};

net::FetchResult Get(uint16_t port, const std::string& path, const std::string& token) {
  net::HttpClient client(net::ClientOptions{});
  net::FetchRequest request{fmt::format("http://127.0.0.1:{}{}", port, path), {}};
  if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  return client.FetchAll(std::span(&request, 1), std::chrono::steady_clock::now() + 10s).at(0);
}

// team/chat, simulated; null (with a test failure) when it cannot start.
std::unique_ptr<sim::DeploymentSim> StartChat() {
  sim::DeploymentSimOptions options;
  options.name = "chat";
  options.ns = "team";
  auto simulator = std::make_unique<sim::DeploymentSim>(options);
  std::string error;
  if (!Ok(simulator->Start(), &error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  return simulator;
}

class UiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sim_ = StartChat();
    ASSERT_TRUE(sim_);
    std::string error;
    source_ = std::make_unique<FlakySource>(sim_->Objects());
    deployment::AggregatorOptions aggregator_options;
    aggregator_options.baselines = &baselines_;
    aggregator_ = std::make_unique<deployment::Aggregator>(source_.get(), aggregator_options);
    server_ = std::make_unique<UiServer>(
        source_.get(), aggregator_.get(),
        UiOptions{.ns = "team", .interval = 300ms, .token = "the-token"});
    ASSERT_OK(server_->Start());
    // The page knows a deployment from its first listing, which its poller makes after Start.
    ASSERT_TRUE(WaitUntil([&] {
      return Get(server_->port(), "/api/v1/deployments/team/chat", "the-token").status == 200;
    }));
  }

  nlohmann::json Detail() {
    const net::FetchResult r = Get(server_->port(), "/api/v1/deployments/team/chat", "the-token");
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body);
  }

  deployment::BaselineStore baselines_;
  std::unique_ptr<sim::DeploymentSim> sim_;
  std::unique_ptr<FlakySource> source_;
  std::unique_ptr<deployment::Aggregator> aggregator_;
  std::unique_ptr<UiServer> server_;
};

TEST_F(UiServerTest, EveryPieceOfDataNeedsTheToken) {
  EXPECT_EQ(server_->url(), fmt::format("http://127.0.0.1:{}/#token=the-token", server_->port()));
  for (const char* path : {"/api/v1/deployments", "/api/v1/deployments/team/chat"}) {
    const net::FetchResult absent = Get(server_->port(), path, "");
    EXPECT_EQ(absent.status, 401) << path;
    const net::FetchResult wrong = Get(server_->port(), path, "not-the-token");
    EXPECT_EQ(wrong.status, 403) << path;
    EXPECT_EQ(wrong.body.find("chat"), std::string::npos) << wrong.body;
  }
  // The page and its code hold no data and are served to anyone; with a strict policy.
  const net::FetchResult page = Get(server_->port(), "/", "");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("/assets/app.js"), std::string::npos);
  EXPECT_EQ(Get(server_->port(), "/assets/chart.min.js", "").status, 200);
  EXPECT_EQ(Get(server_->port(), "/api/v1/deployments/team", "the-token").status, 404);
  EXPECT_EQ(Get(server_->port(), "/api/v1/deployments/team/absent", "the-token").status, 404);
}

TEST_F(UiServerTest, ServesTheAggregatorsReadsAndGoesStaleWhenTheSourceFails) {
  // Two reads: the second has windows, and the history holds both.
  nlohmann::json detail;
  WaitUntil([&] {
    detail = Detail();
    return !detail["snapshot"].is_null() && detail["snapshot"].contains("latency");
  });
  ASSERT_TRUE(detail["snapshot"].contains("latency")) << detail.dump();
  EXPECT_EQ(detail["snapshot"]["kind"], "ModelDeploymentMetrics");
  EXPECT_EQ(detail["engine"], "vllm");
  EXPECT_FALSE(detail["status"]["stale"]);
  EXPECT_EQ(detail["pollIntervalMs"], 300);
  EXPECT_FALSE(detail["history"]["series"].empty());

  const net::FetchResult list = Get(server_->port(), "/api/v1/deployments", "the-token");
  ASSERT_EQ(list.status, 200);
  const nlohmann::json items = nlohmann::json::parse(list.body)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["name"], "chat");
  EXPECT_EQ(items[0]["namespace"], "team");
  EXPECT_TRUE(items[0]["running"].is_number());

  // The source stops answering: stale after two failed intervals, the last good read kept.
  const std::string last = detail["snapshot"]["timestamp"];
  source_->failing = true;
  nlohmann::json stale;
  EXPECT_TRUE(WaitUntil([&] {
    stale = Detail();
    return stale["status"]["stale"] == true;
  })) << stale.dump();
  EXPECT_NE(stale["status"]["error"].get<std::string>().find("the API server is down"),
            std::string::npos)
      << stale.dump();
  ASSERT_FALSE(stale["snapshot"].is_null());
  EXPECT_LE(stale["snapshot"]["timestamp"].get<std::string>(), last);
  // And fresh again once it answers.
  source_->failing = false;
  EXPECT_TRUE(WaitUntil([&] { return Detail()["status"]["stale"] == false; }));
}

TEST(UiServer, ListensOnLoopbackOnly) {
  deployment::FileObjectSource source;
  deployment::Aggregator aggregator(&source);
  UiServer server(&source, &aggregator, UiOptions{.address = "0.0.0.0"});
  std::string error;
  EXPECT_FALSE(Ok(server.Start(), &error));
  EXPECT_NE(error.find("loopback only"), std::string::npos) << error;
}

std::string TlsFile(const char* name) { return test_paths::Tls(name); }

// The page over the aggregated API: a simulated deployment behind a loopback `serve`-like API
// (TLS, one token), read with a kubeconfig's credentials as kube-apiserver would be.
class UiThroughTheApi : public ::testing::Test {
 protected:
  void SetUp() override {
    sim_ = StartChat();
    ASSERT_TRUE(sim_);
    std::string error;
    objects_.Set(sim_->Objects());
    sim::LoopbackApiOptions api;
    api.namespaces = {"team"};
    api.tls_cert_file = TlsFile("server.pem");
    api.tls_key_file = TlsFile("server-key.pem");
    api.aggregator.baselines = &baselines_;
    api_ = std::make_unique<sim::LoopbackApi>(&objects_, api);
    ASSERT_OK(api_->Start());
  }

  // A page whose reads carry `token`.
  void StartPage(const std::string& token) {
    deployment::KubeConfig config;
    config.server = api_->url();
    config.token = token;
    config.ca_file = TlsFile("ca.pem");
    client_ = std::make_unique<deployment::KubeApiClient>(config, 10s);
    reader_ = std::make_unique<deployment::MetricsApiReader>(client_.get());
    page_ = std::make_unique<UiServer>(&objects_, reader_.get(),
                                       UiOptions{.ns = "team", .interval = 300ms, .token = "page"});
    std::string error;
    ASSERT_OK(page_->Start());
    // The page knows a deployment from its first listing, which its poller makes after Start.
    ASSERT_TRUE(WaitUntil(
        [&] { return Get(page_->port(), "/api/v1/deployments/team/chat", "page").status == 200; }));
  }

  nlohmann::json Detail() {
    const net::FetchResult r = Get(page_->port(), "/api/v1/deployments/team/chat", "page");
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body, nullptr, false);
  }

  deployment::BaselineStore baselines_;
  std::unique_ptr<sim::DeploymentSim> sim_;
  deployment::FileObjectSource objects_;
  std::unique_ptr<sim::LoopbackApi> api_;
  std::unique_ptr<deployment::KubeApiClient> client_;
  std::unique_ptr<deployment::MetricsApiReader> reader_;
  std::unique_ptr<UiServer> page_;
};

TEST_F(UiThroughTheApi, ShowsTheServersSnapshotsWithItsWindows) {
  StartPage(api_->token());
  nlohmann::json detail;
  WaitUntil([&] {
    detail = Detail();
    return !detail["snapshot"].is_null() && detail["snapshot"].contains("latency");
  });
  // The windows are the server's: its second read of the Pods, decoded and shown as it sent them.
  ASSERT_TRUE(detail["snapshot"].contains("latency")) << detail.dump();
  EXPECT_FALSE(detail["status"]["stale"]) << detail.dump();
  const nlohmann::json& snapshot = detail["snapshot"];
  EXPECT_EQ(snapshot["metadata"]["name"], "chat");
  EXPECT_EQ(snapshot["metadata"]["namespace"], "team");
  EXPECT_FALSE(snapshot["partial"]);
  ASSERT_TRUE(snapshot.contains("processing"));
  EXPECT_EQ(snapshot["processing"][0]["scope"], "engine/server");
  EXPECT_FALSE(detail["history"]["series"].empty());
  // The same document the API serves: what the server's JSON says, field for field.
  deployment::Snapshot decoded;
  std::string error;
  ASSERT_OK(deployment::SnapshotFromJson(snapshot.dump(), &decoded));
  EXPECT_EQ(nlohmann::json::parse(deployment::SnapshotToJson(decoded)), snapshot);
}

TEST_F(UiThroughTheApi, AWrongTokenGetsTheApisRefusalAndNoData) {
  StartPage("not-the-token");
  nlohmann::json detail;
  WaitUntil([&] {
    detail = Detail();
    return !detail["status"]["error"].get<std::string>().empty();
  });
  EXPECT_TRUE(detail["status"]["stale"]);
  EXPECT_TRUE(detail["snapshot"].is_null());
  EXPECT_NE(detail["status"]["error"].get<std::string>().find("401 Unauthorized"),
            std::string::npos)
      << detail.dump();
}

}  // namespace
}  // namespace modelmetrics::ui
