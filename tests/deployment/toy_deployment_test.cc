// Adding an exporter, both halves: the toy's profile (deployment/toy_profile.h) and its simulated
// Pods (sim/toy_sim_exporter.h) are one file each and one registration line each; with them, a
// simulated "toyllm" deployment is read end to end by the same aggregator as the built-ins.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "aggregation/aggregator.h"
#include "aggregation/baseline_store.h"
#include "aggregation/exporter_registry.h"
#include "aggregation/test_builders.h"
#include "aggregation/toy_profile.h"
#include "kube/object_file.h"
#include "sim/deployment_sim.h"
#include "sim/exporter_registry.h"
#include "sim/toy_sim_exporter.h"
#include "status_matchers.h"
#include "test_deadlines.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

class ToyDeployment : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterExporter(&toy::kToy);
    sim::RegisterSimExporter(&sim::toy::kToySim);
  }
  void TearDown() override {
    sim::UnregisterSimExporter(&sim::toy::kToySim);
    UnregisterExporter(&toy::kToy);
  }
};

TEST_F(ToyDeployment, ItsSimulatedPodsAreReadLikeABuiltIn) {
  sim::DeploymentSimOptions options;
  options.name = "chat";
  options.ns = "team";
  options.engine = "ToyLLM";  // engine names compare in any case, in both registries
  options.roles = {{.name = "server", .kind = RoleKind::kServer, .replicas = 2}};
  options.requests_per_second = 40;
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());

  FileObjectSource source;
  source.Set(simulator.Objects());
  BaselineStore store;
  AggregatorOptions aggregator_options;
  aggregator_options.baselines = &store;
  Aggregator aggregator(&source, aggregator_options);
  Snapshot first;
  ASSERT_TRUE(aggregator.Get("team", "chat", &first).ok());
  // Traffic between the reads: at least a second, the shortest window; longer only adds traffic.
  modelmetrics::testing::LetTimePass(std::chrono::milliseconds(1200));
  Snapshot snapshot;
  const Status status = aggregator.Get("team", "chat", &snapshot);
  ASSERT_TRUE(status.ok()) << status.message();

  EXPECT_EQ(snapshot.missing, std::vector<Missing>{});
  EXPECT_FALSE(snapshot.partial);
  const Gauge* running = testing::FindGauge(snapshot.processing, "running", "engine/server");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->source, "toy_active_requests");
  EXPECT_EQ(running->pod_count, 2);
  for (const char* pod : {"chat-server-0", "chat-server-1"}) {
    EXPECT_NE(testing::FindWindow(snapshot.latency, pod, "ttft"), nullptr) << pod;
    const Window* requests = testing::FindWindow(snapshot.traffic, pod, "requests");
    ASSERT_NE(requests, nullptr) << pod;
    EXPECT_GT(requests->value, 0) << pod;
    const CacheHit* cache = testing::FindCacheHit(snapshot.cache_hits, pod, "local-prefix");
    ASSERT_NE(cache, nullptr) << pod;
    EXPECT_EQ(cache->source, "toy_cache");
    EXPECT_GT(cache->queries, 0) << pod;
  }
}

TEST_F(ToyDeployment, UnregisteredTheSimulatorRefusesTheEngine) {
  sim::UnregisterSimExporter(&sim::toy::kToySim);
  sim::DeploymentSimOptions options;
  options.engine = "toyllm";
  sim::DeploymentSim simulator(options);
  std::string error;
  EXPECT_FALSE(Ok(simulator.Start(), &error));
  EXPECT_EQ(error, "unknown engine \"toyllm\" (vllm, sglang or vllm-omni)");
}

}  // namespace
}  // namespace modelmetrics::deployment
