// The simulators' upstream variants (sim/sim_variant.h) read into the snapshot as the real
// exporters' do: the same numbers as the plain simulator at the same instant of the same seeded
// traffic, and no false partial. `modelmetrics demo` and the fleet run serve these bodies.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "aggregation/exporters/builtin.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/test_builders.h"
#include "sim/deployment_sim.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using sim::DeploymentSim;
using sim::DeploymentSimOptions;
using sim::SimVariant;

std::unique_ptr<DeploymentSim> Started(DeploymentSimOptions options) {
  auto sim = std::make_unique<DeploymentSim>(std::move(options));
  std::string error;
  EXPECT_OK(sim->Start());
  return sim;
}

Pod PodNamed(const DeploymentSim& sim, std::string_view name) {
  for (const Pod& pod : sim.Objects().pods) {
    if (pod.metadata.name == name) return pod;
  }
  ADD_FAILURE() << "no Pod " << name;
  return {};
}

// The Pod's body at `at` since the simulator's start, read by `profile` as its Pod's arguments
// say.
PodMetrics ReadAt(const DeploymentSim& sim, const std::string& name, const ExporterProfile& profile,
                  std::chrono::milliseconds at) {
  const Pod pod = PodNamed(sim, name);
  PodMetrics read;
  std::string error;
  EXPECT_OK(ParsePodMetrics(sim.MetricsAt(name, at), &profile, &read, &pod));
  return read;
}

void ExpectSameRead(const PodMetrics& a, const PodMetrics& b) {
  EXPECT_EQ(a.gauges, b.gauges);
  ASSERT_EQ(a.cache.size(), b.cache.size());
  for (const auto& [scope, pair] : a.cache) {
    EXPECT_EQ(pair.hits, b.cache.at(scope).hits) << scope;
    EXPECT_EQ(pair.queries, b.cache.at(scope).queries) << scope;
  }
  ASSERT_EQ(a.windows.size(), b.windows.size());
  for (const auto& [key, value] : a.windows) {
    EXPECT_EQ(value.sum, b.windows.at(key).sum) << key;
    EXPECT_EQ(value.count, b.windows.at(key).count) << key;
  }
}

TEST(SimulatedVariants, SglangPriorityAndAllSchedulersReadAsThePlainEngine) {
  DeploymentSimOptions options;
  options.engine = "sglang";
  options.seed = 42;
  auto plain = Started(options);
  options.variants = {SimVariant::kPriority, SimVariant::kAllSchedulers};
  auto variant = Started(options);
  const std::string body = variant->MetricsAt("chat-server-0", 2500ms);
  EXPECT_NE(body.find("priority=\"5\""), std::string::npos);
  EXPECT_NE(body.find("tp_rank=\"1\""), std::string::npos);
  ExpectSameRead(ReadAt(*plain, "chat-server-0", exporters::kSglang, 2500ms),
                 ReadAt(*variant, "chat-server-0", exporters::kSglang, 2500ms));
}

TEST(SimulatedVariants, OlderNamesReadAsTheCurrentOnes) {
  for (const char* router : {"", "llm-d-router"}) {
    SCOPED_TRACE(router);
    DeploymentSimOptions options;
    options.router = router;
    options.seed = 7;
    auto plain = Started(options);
    options.variants = {SimVariant::kOlderNames};
    auto older = Started(options);
    EXPECT_NE(older->MetricsAt("chat-server-0", 2500ms).find("vllm:gpu_prefix_cache_hits_total"),
              std::string::npos);
    ExpectSameRead(ReadAt(*plain, "chat-server-0", exporters::kVllm, 2500ms),
                   ReadAt(*older, "chat-server-0", exporters::kVllm, 2500ms));
    if (*router == '\0') continue;
    std::string name;
    for (const sim::SimPodInfo& pod : older->Pods()) {
      if (pod.router) name = pod.name;
    }
    PodMetrics today = ReadAt(*plain, name, exporters::kLlmdRouter, 2500ms);
    const PodMetrics before = ReadAt(*older, name, exporters::kLlmdRouter, 2500ms);
    // A router before llm_d_epp_ wrote no TTFT or TPOT in its core: everything else reads.
    today.windows.erase("ttft");
    today.windows.erase("tpot");
    ExpectSameRead(today, before);
    EXPECT_NE(older->MetricsAt(name, 2500ms).find("inference_pool_ready_pods"), std::string::npos);
  }
}

// A router whose clients never stream: TTFT and TPOT absent for the router's reason, not partial.
TEST(SimulatedVariants, ANonStreamingRouterIsNotPartial) {
  DeploymentSimOptions options;
  options.router = "llm-d-router";
  options.variants = {SimVariant::kNonStreaming};
  auto sim = Started(options);
  std::string name;
  for (const sim::SimPodInfo& pod : sim->Pods()) {
    if (pod.router) name = pod.name;
  }
  ModelDeployment md = sim->Objects().model_deployments.at(0);
  const Snapshot s = testing::MergeMetricsWindow(
      md, PodNamed(*sim, name), ReadAt(*sim, name, exporters::kLlmdRouter, 2500ms),
      ReadAt(*sim, name, exporters::kLlmdRouter, 5000ms));
  int no_streaming = 0;
  for (const Missing& m : s.missing) {
    if (m.pod == name) {
      EXPECT_EQ(m.reason, reason::kLlmdNoStreamingRequest) << m.source;
      ++no_streaming;
    }
  }
  EXPECT_EQ(no_streaming, 2);
  EXPECT_FALSE(s.partial);
  EXPECT_NE(testing::FindWindow(s.traffic, name, "requests"), nullptr);
}

// SGLang records ITL at every output after a request's first, streaming or not: an engine whose
// clients never stream still has its TTFT and ITL, and is complete.
TEST(SimulatedVariants, ANonStreamingSglangEngineIsComplete) {
  DeploymentSimOptions options;
  options.engine = "sglang";
  options.variants = {SimVariant::kNonStreaming};
  auto sim = Started(options);
  const Pod pod = PodNamed(*sim, "chat-server-0");
  const Snapshot s = testing::MergeMetricsWindow(
      sim->Objects().model_deployments.at(0), pod,
      ReadAt(*sim, "chat-server-0", exporters::kSglang, 2500ms),
      ReadAt(*sim, "chat-server-0", exporters::kSglang, 5000ms), 2500ms);
  EXPECT_FALSE(s.partial);
  EXPECT_NE(testing::FindWindow(s.latency, "chat-server-0", "ttft"), nullptr);
  EXPECT_NE(testing::FindWindow(s.latency, "chat-server-0", "itl"), nullptr);
  EXPECT_EQ(sim->MetricsAt("chat-server-0", 5000ms).find("is_streaming=\"true\""),
            std::string::npos);
}

}  // namespace
}  // namespace modelmetrics::deployment
