// Stateless replicas on the Prometheus source: two `modelmetrics serve` processes reading the same
// real Prometheus, which scrapes a simulated deployment every second, answer the same request with
// the same JSON (the snapshot's own timestamp aside); a replica restarted from nothing answers its
// first request with windows, since the history is the store's, not the process's.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "aggregation/real_store.h"
#include "cli/cli_runner.h"
#include "net/http_client.h"
#include "sim/deployment_sim.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;

std::string TlsFile(const char* name) { return test_paths::Tls(name); }

// One `serve` replica on the store, on a port of its own choosing.
class Replica {
 public:
  Replica(const modelmetrics::testing::ScratchDir& dir, const std::string& config, int n)
      : process_({"serve", "--config", config}, dir.File(fmt::format("serve{}.out", n)),
                 dir.File(fmt::format("serve{}.err", n))) {
    const std::regex serving("serving ModelDeploymentMetrics on (https://127\\.0\\.0\\.1:[0-9]+)");
    const bool started = modelmetrics::testing::WaitUntil(
        [&] {
          std::smatch match;
          const std::string out = process_.StdoutSoFar();
          if (!std::regex_search(out, match, serving)) return false;
          base_ = match[1];
          return true;
        },
        modelmetrics::testing::kCommandDeadline);
    if (!started) ADD_FAILURE() << "serve did not start: " << process_.Wait(0ms).err;
  }
  ~Replica() {
    process_.Signal(SIGTERM);
    process_.Wait(modelmetrics::testing::kCommandDeadline);
  }

  // The deployment's snapshot, with its `timestamp` cut out.
  std::string Get(net::HttpClient& client) const {
    const std::vector<net::FetchResult> results = client.FetchAll(
        std::vector<net::FetchRequest>{
            {.url = base_ +
                    "/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat/metrics",
             .headers = {{"Authorization", "Bearer alice-token"}}}},
        SteadyClock::now() + 10s);
    EXPECT_EQ(results[0].status, 200) << results[0].message << results[0].body;
    return std::regex_replace(results[0].body, std::regex("\"timestamp\":\"[^\"]*\","), "");
  }

 private:
  modelmetrics::testing::CliProcess process_;
  std::string base_;
};

TEST(StatelessReplicas, TwoReplicasAgreeAndARestartedOneHasWindowsAtOnce) {
  modelmetrics::testing::ScratchDir dir;
  sim::DeploymentSimOptions options;
  options.name = "chat";
  options.ns = "team";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = 3}};
  options.router = "llm-d-router";
  options.requests_per_second = 30;
  options.objects_file = dir.File("objects.json");
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());
  std::vector<testing::StoreTarget> targets;
  for (const sim::SimPodInfo& pod : simulator.Pods()) targets.push_back({pod.port, pod.name});
  testing::RealStore store("prometheus", dir, targets);
  store.WaitFor([](const std::vector<int64_t>& instants) { return instants.size() >= 3; });

  for (const char* file : {"server.pem", "server-key.pem"}) {
    std::filesystem::copy_file(TlsFile(file), dir.File(file));
  }
  dir.Write("tokens.csv", "alice-token,alice,uid-alice\n");
  dir.Write("policy.yaml",
            "rules:\n  - {users: [alice], namespaces: [team], verbs: [get], "
            "resources: [\"modeldeployments/metrics\"]}\n");
  const std::string config = dir.Write(
      "serve.yaml", fmt::format("port: 0\ntls_cert_file: server.pem\ntls_key_file: server-key.pem\n"
                                "token_file: tokens.csv\npolicy_file: policy.yaml\n"
                                "objects_file: objects.json\nsnapshot_reuse_ms: 0\n"
                                "source: prometheus\nprometheus:\n  url: {}\n",
                                store.url()));
  net::ClientOptions client_options;
  client_options.ca_file = TlsFile("ca.pem");
  net::HttpClient client(client_options);

  auto a = std::make_unique<Replica>(dir, config, 1);
  Replica b(dir, config, 2);
  // A scrape can land between the two reads; then both move to the next scrape. Two answers
  // read between the same two scrapes must be identical.
  bool agreed = false;
  std::string answer;
  for (int attempt = 0; attempt < 10 && !agreed; ++attempt) {
    answer = a->Get(client);
    agreed = answer == b.Get(client);
  }
  EXPECT_TRUE(agreed) << answer;
  EXPECT_NE(answer.find("\"latency\":[{"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"partial\":false"), std::string::npos) << answer;

  // A replica started from nothing: its first answer has windows, and equals the other's.
  a.reset();
  Replica restarted(dir, config, 3);
  const std::string first = restarted.Get(client);
  EXPECT_NE(first.find("\"latency\":[{"), std::string::npos) << first;
  EXPECT_EQ(first.find("awaiting a second counter sample"), std::string::npos) << first;
  agreed = first == b.Get(client);
  for (int attempt = 0; attempt < 10 && !agreed; ++attempt)
    agreed = restarted.Get(client) == b.Get(client);
  EXPECT_TRUE(agreed);
}

}  // namespace
}  // namespace modelmetrics::deployment
