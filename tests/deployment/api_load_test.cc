// The aggregated API under load, on loopback over TLS, against simulated deployments: many
// keep-alive clients on one deployment get only 200s (one shared read per round of requests), a
// healthy deployment keeps answering beside one with a hung Pod that 64 clients hammer, 32
// requests for 64 hung Pods are all answered within their budget, and a Pod restart seen through
// the live objects file starts a fresh baseline. Numbers for the closing note come from
// bench/deployment/api_load_bench, not from here.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aggregation/merge.h"
#include "kube/object_file.h"
#include "net/http_client.h"
#include "sim/api_load.h"
#include "sim/deployment_sim.h"
#include "sim/loopback_api.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using namespace std::chrono_literals;

std::string TlsFile(const char* name) { return test_paths::Tls(name); }

sim::DeploymentSimOptions Pods(const std::string& name, int count) {
  sim::DeploymentSimOptions options;
  options.name = name;
  options.ns = "team";
  options.engine = "vllm";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = count}};
  options.seed = 11;
  options.requests_per_second = 20;
  return options;
}

// Simulators, their objects in one source, and the TLS API over them.
class Stack {
 public:
  explicit Stack(std::vector<sim::DeploymentSimOptions> deployments,
                 ApiServerOptions api = ApiServerOptions{}) {
    ObjectSet all;
    for (sim::DeploymentSimOptions& options : deployments) {
      sims_.push_back(std::make_unique<sim::DeploymentSim>(std::move(options)));
      std::string error;
      EXPECT_OK(sims_.back()->Start());
      ObjectSet objects = sims_.back()->Objects();
      for (auto& md : objects.model_deployments) all.model_deployments.push_back(std::move(md));
      for (auto& pod : objects.pods) all.pods.push_back(std::move(pod));
    }
    source_.Set(std::move(all));
    sim::LoopbackApiOptions options;
    options.namespaces = {"team"};
    options.tls_cert_file = TlsFile("server.pem");
    options.tls_key_file = TlsFile("server-key.pem");
    options.api = std::move(api);
    api_ = std::make_unique<sim::LoopbackApi>(&source_, options);
    std::string error;
    started_ = Ok(api_->Start(), &error);
    EXPECT_TRUE(started_) << error;
  }

  bool started() const { return started_; }
  sim::LoopbackApi& api() { return *api_; }

  sim::LoadOptions Load(const std::string& name, int clients, std::chrono::milliseconds duration) {
    sim::LoadOptions load;
    load.url = api_->MetricsUrl("team", name);
    load.headers = {{"Authorization", "Bearer " + api_->token()}};
    load.clients = clients;
    load.duration = duration;
    load.ca_file = TlsFile("ca.pem");
    return load;
  }

 private:
  std::vector<std::unique_ptr<sim::DeploymentSim>> sims_;
  FileObjectSource source_;
  std::unique_ptr<sim::LoopbackApi> api_;
  bool started_ = false;
};

TEST(ApiLoad, TwoHundredKeepAliveClientsGetOnly200s) {
  Stack stack({Pods("chat", 2)});
  ASSERT_TRUE(stack.started());
  const sim::LoadReport report = sim::RunLoad(stack.Load("chat", 200, 20s));
  EXPECT_GT(report.requests, 200u);
  EXPECT_EQ(report.Non200(), 0u) << report.first_error;
}

TEST(ApiLoad, HealthyDeploymentAnswersBesideAHungOne) {
  sim::DeploymentSimOptions stuck = Pods("stuck", 2);
  stuck.faults["stuck-server-0"] = sim::PodFault::kHang;
  ApiServerOptions api;
  api.reuse_for = 0ms;  // every healthy request is a real read
  Stack stack({Pods("chat", 2), stuck}, api);
  ASSERT_TRUE(stack.started());
  net::ClientOptions client_options;
  client_options.ca_file = TlsFile("ca.pem");
  net::HttpClient client(client_options);
  const net::FetchRequest healthy{stack.api().MetricsUrl("team", "chat"),
                                  {{"Authorization", "Bearer " + stack.api().token()}}};
  auto ask = [&] {
    return client.FetchAll(std::span(&healthy, 1), std::chrono::steady_clock::now() + 10s).at(0);
  };
  ASSERT_EQ(ask().status, 200);  // warm: a baseline and a connection
  std::chrono::milliseconds alone{0};
  for (int i = 0; i < 10; ++i) {
    const net::FetchResult r = ask();
    ASSERT_EQ(r.status, 200) << r.body;
    alone = std::max(alone, r.elapsed);
  }
  sim::LoadReport hammer;
  std::thread hammering([&] { hammer = sim::RunLoad(stack.Load("stuck", 64, 8s)); });
  std::this_thread::sleep_for(500ms);  // the hammer's 64 clients under way (8 s of them)
  int answered = 0;
  std::chrono::milliseconds worst{0};
  for (int i = 0; i < 30; ++i) {
    const net::FetchResult r = ask();
    answered += r.status == 200;
    worst = std::max(worst, r.elapsed);
    std::this_thread::sleep_for(100ms);  // 30 asks spread over 3 s of the hammering
  }
  hammering.join();
  EXPECT_EQ(answered, 30);
  // A hung neighbour adds no queueing to it: queued behind a hung read, it would wait for that
  // read's 8 s budget (request_timeout). Half of that tells the two apart on a loaded machine,
  // where its own latency (`alone`, tens of ms) grows by tens of ms, not seconds.
  EXPECT_LT(worst, std::chrono::milliseconds(4000)) << "alone " << alone.count() << " ms";
  // The hung one is partial but answered, never refused.
  EXPECT_EQ(hammer.Non200(), 0u) << hammer.first_error;
}

TEST(ApiLoad, ThirtyTwoRequestsForSixtyFourHungPodsAnswerWithinTheirBudget) {
  sim::DeploymentSimOptions hung = Pods("hung", 64);
  for (int i = 0; i < 64; ++i)
    hung.faults["hung-server-" + std::to_string(i)] = sim::PodFault::kHang;
  ApiServerOptions api;
  api.reuse_for = 0ms;
  Stack stack({hung}, api);
  ASSERT_TRUE(stack.started());
  net::ClientOptions client_options;
  client_options.ca_file = TlsFile("ca.pem");
  client_options.max_in_flight = 32;
  client_options.fetch_timeout = 20s;
  net::HttpClient client(client_options);
  const std::vector<net::FetchRequest> batch(
      32, net::FetchRequest{stack.api().MetricsUrl("team", "hung"),
                            {{"Authorization", "Bearer " + stack.api().token()}}});
  const auto results = client.FetchAll(batch, std::chrono::steady_clock::now() + 30s);
  for (const net::FetchResult& r : results) {
    EXPECT_EQ(r.status, 503) << r.message << r.body;  // every Pod unreadable
    EXPECT_LE(r.elapsed, 8500ms);
  }
}

TEST(ApiLoad, RestartedPodStartsAFreshBaselineThroughTheLiveObjectsFile) {
  const std::string dir = std::filesystem::temp_directory_path() / "mm-restart-XXXXXX";
  std::string pattern = dir;
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  sim::DeploymentSimOptions options = Pods("chat", 2);
  options.objects_file = pattern + "/objects.json";
  options.requests_per_second = 40;
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());
  FileObjectSource source;
  ASSERT_OK(source.Load(options.objects_file));
  sim::LoopbackApiOptions api_options;
  api_options.namespaces = {"team"};
  api_options.api.reuse_for = 0ms;
  sim::LoopbackApi api(&source, api_options);
  ASSERT_OK(api.Start());
  net::HttpClient client;
  const net::FetchRequest request{api.MetricsUrl("team", "chat"),
                                  {{"Authorization", "Bearer " + api.token()}}};
  auto read = [&] {
    const net::FetchResult r =
        client.FetchAll(std::span(&request, 1), std::chrono::steady_clock::now() + 10s).at(0);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  };
  const std::string pod = "chat-server-0";
  const auto windows_of = [&](const std::string& body) {
    return body.find("{\"name\":\"ttft\",\"pod\":\"" + pod + "\"") != std::string::npos;
  };
  // A second of traffic between reads (at least: a loaded machine only lengthens it) gives the
  // Pod's counters a second sample, so a window.
  read();
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(windows_of(read()));
  // The Pod comes back as a new Pod: new UID, counters from zero, objects file rewritten.
  const std::string old_uid = simulator.Pods()[0].uid;
  ASSERT_TRUE(simulator.SetFault(pod, sim::PodFault::kRestart));
  ASSERT_TRUE(simulator.SetFault(pod, sim::PodFault::kNone));
  ASSERT_NE(simulator.Pods()[0].uid, old_uid);
  std::this_thread::sleep_for(1s);
  const std::string after = read();
  EXPECT_FALSE(windows_of(after)) << after;
  EXPECT_NE(after.find(R"({"pod":"chat-server-0","source":"vllm:time_to_first_token_seconds",)"
                       R"("reason":"awaiting a second counter sample"})"),
            std::string::npos)
      << after;
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(windows_of(read()));
  api.Stop();
  simulator.Stop();
  std::filesystem::remove_all(pattern);
}

}  // namespace
}  // namespace modelmetrics::deployment
