// The aggregator against the deployment simulator with a fault on some Pods: each fault gives its
// exact missing[] reason on that Pod, the other Pods are still reported, every response arrives
// within the 8 s request limit, and no more than 32 scrapes are ever in flight.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aggregation/aggregator.h"
#include "aggregation/baseline_store.h"
#include "aggregation/merge.h"
#include "kube/object_file.h"
#include "sim/deployment_sim.h"
#include "status_matchers.h"
#include "test_deadlines.h"

namespace modelmetrics::deployment {
namespace {

using sim::PodFault;
using std::chrono::steady_clock;

sim::DeploymentSimOptions ServerPods(int count) {
  sim::DeploymentSimOptions options;
  options.name = "chat";
  options.ns = "team";
  options.engine = "vllm";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = count}};
  options.seed = 7;
  options.requests_per_second = 40;
  return options;
}

std::string PodName(int i) { return "chat-server-" + std::to_string(i); }

struct Read {
  Status status;
  Snapshot snapshot;
  std::chrono::milliseconds took{};
};

Read ReadOnce(Aggregator* aggregator) {
  Read read;
  const auto start = steady_clock::now();
  read.status = aggregator->Get("team", "chat", &read.snapshot);
  read.took = std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - start);
  return read;
}

std::vector<Missing> MissingOf(const Snapshot& snapshot, const std::string& pod) {
  std::vector<Missing> out;
  for (const Missing& m : snapshot.missing) {
    if (m.pod == pod) out.push_back(m);
  }
  return out;
}

bool HasWindows(const Snapshot& snapshot, const std::string& pod) {
  for (const Window& w : snapshot.latency) {
    if (w.pod == pod) return true;
  }
  return false;
}

TEST(FaultMatrix, EachFaultHasItsReasonAndTheOtherPodsAreReported) {
  // Pods 0..9 carry one fault each, pod 10 stays healthy. Transport faults are set before the
  // first read; counter-reset and restart need a baseline, so they are set after it.
  const std::vector<PodFault> transport = {
      PodFault::kHang,    PodFault::kSlowBody, PodFault::kOversize, PodFault::kGzipBomb,
      PodFault::kHttp500, PodFault::kRedirect, PodFault::kGarbage,  PodFault::kUntrustedTls};
  sim::DeploymentSimOptions options = ServerPods(11);
  for (size_t i = 0; i < transport.size(); ++i) options.faults[PodName(i)] = transport[i];
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());

  FileObjectSource source;
  source.Set(simulator.Objects());
  BaselineStore store;
  AggregatorOptions aggregator_options;
  aggregator_options.baselines = &store;
  Aggregator aggregator(&source, aggregator_options);

  const Read first = ReadOnce(&aggregator);
  ASSERT_TRUE(first.status.ok()) << first.status.message();
  EXPECT_LT(first.took, std::chrono::seconds(8));

  ASSERT_TRUE(simulator.SetFault(PodName(8), PodFault::kCounterReset));
  ASSERT_TRUE(simulator.SetFault(PodName(9), PodFault::kRestart));
  // Traffic between the reads: at least a second, the shortest window; longer only adds traffic.
  modelmetrics::testing::LetTimePass(std::chrono::milliseconds(1200));
  source.Set(simulator.Objects());  // the restarted Pod has a new UID
  const Read second = ReadOnce(&aggregator);
  ASSERT_TRUE(second.status.ok()) << second.status.message();
  EXPECT_LT(second.took, std::chrono::seconds(8));
  const Snapshot& snapshot = second.snapshot;
  EXPECT_TRUE(snapshot.partial);

  std::map<std::string, std::string> urls;
  for (const sim::SimPodInfo& pod : simulator.Pods()) urls[pod.name] = pod.url;
  auto scrape_reason = [&](int i) -> std::string {
    const std::vector<Missing> missing = MissingOf(snapshot, PodName(i));
    if (missing.size() != 1 || missing[0].source != "scrape") return "<not one scrape entry>";
    return missing[0].reason;
  };
  const std::string hang_url = urls[PodName(0)];
  EXPECT_EQ(scrape_reason(0), "Get \"" + hang_url +
                                  "\": context deadline exceeded (Client.Timeout exceeded while "
                                  "awaiting headers)");
  EXPECT_EQ(scrape_reason(1), "Get \"" + urls[PodName(1)] +
                                  "\": context deadline exceeded (Client.Timeout or context "
                                  "cancellation while reading body)");
  EXPECT_EQ(scrape_reason(2), "metrics response exceeds 1048576 bytes");
  EXPECT_EQ(scrape_reason(3), "metrics response exceeds 1048576 bytes");
  EXPECT_EQ(scrape_reason(4), "metrics endpoint returned HTTP 500");
  EXPECT_EQ(scrape_reason(5), "metrics endpoint returned HTTP 302");
  EXPECT_EQ(scrape_reason(6).rfind("parse Prometheus metrics: ", 0), 0u) << scrape_reason(6);
  const std::string tls_prefix =
      "Get \"" + urls[PodName(7)] + "\": tls: failed to verify certificate: ";
  EXPECT_EQ(scrape_reason(7).rfind(tls_prefix, 0), 0u) << scrape_reason(7);
  EXPECT_EQ(urls[PodName(7)].rfind("https://", 0), 0u);

  // Counter reset: every window and cache counter of that Pod went backwards.
  const std::vector<Missing> reset = MissingOf(snapshot, PodName(8));
  ASSERT_FALSE(reset.empty());
  for (const Missing& m : reset) {
    if (m.source == "external-store") continue;  // no connector: unsupported, not a reset
    EXPECT_TRUE(m.reason == reason::kCounterReset || m.reason == reason::kCacheReset)
        << m.source << ": " << m.reason;
  }
  EXPECT_FALSE(HasWindows(snapshot, PodName(8)));

  // Restart as a new Pod UID: no baseline for the new Pod, so it starts fresh.
  const std::vector<Missing> restarted = MissingOf(snapshot, PodName(9));
  ASSERT_FALSE(restarted.empty());
  for (const Missing& m : restarted) {
    if (m.source == "external-store") continue;
    EXPECT_EQ(m.reason, reason::kAwaiting) << m.source;
  }

  // The healthy Pod is reported in full, and the gauges count the readable Pods only.
  EXPECT_TRUE(HasWindows(snapshot, PodName(10)));
  for (const Missing& m : MissingOf(snapshot, PodName(10))) {
    EXPECT_EQ(m.source, "external-store");  // the only entry: no KV connector rendered
    EXPECT_EQ(m.reason, reason::kVllmNoKvConnector);
  }
  ASSERT_FALSE(snapshot.processing.empty());
  EXPECT_EQ(snapshot.processing[0].pod_count, 3);  // pods 8, 9 and 10
}

TEST(FaultMatrix, ThirtySixSlowPodsNeverExceedThirtyTwoInFlight) {
  // 36 loaded Pods each take 300 ms to answer: 32 are read at once, the other four after them.
  sim::DeploymentSimOptions options = ServerPods(36);
  for (int i = 0; i < 36; ++i) options.faults[PodName(i)] = PodFault::kSlow;
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());
  FileObjectSource source;
  source.Set(simulator.Objects());
  BaselineStore store;
  AggregatorOptions aggregator_options;
  aggregator_options.baselines = &store;
  Aggregator aggregator(&source, aggregator_options);

  const Read read = ReadOnce(&aggregator);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_LT(read.took, std::chrono::seconds(8));
  EXPECT_GE(read.took, std::chrono::milliseconds(600));  // two rounds of 300 ms
  EXPECT_EQ(simulator.ScrapesServed(), 36u);
  EXPECT_LE(simulator.PeakConcurrentScrapes(), 32u);
  for (const Missing& m : read.snapshot.missing) EXPECT_NE(m.source, "scrape") << m.reason;
  ASSERT_FALSE(read.snapshot.processing.empty());
  EXPECT_EQ(read.snapshot.processing[0].name, "running");
  EXPECT_EQ(read.snapshot.processing[0].pod_count, 36);
}

TEST(FaultMatrix, ConcurrentSnapshotsEachKeepTheirThirtyTwo) {
  // Two deployments of 36 loaded Pods read at the same time through one aggregator: the bound is
  // per request, so each runs 32 at once (not 16) and both finish in two 300 ms rounds.
  std::vector<std::unique_ptr<sim::DeploymentSim>> sims;
  ObjectSet objects;
  for (const char* name : {"chat", "talk"}) {
    sim::DeploymentSimOptions options = ServerPods(36);
    options.name = name;
    for (int i = 0; i < 36; ++i) {
      options.faults[std::string(name) + "-server-" + std::to_string(i)] = PodFault::kSlow;
    }
    sims.push_back(std::make_unique<sim::DeploymentSim>(options));
    std::string error;
    ASSERT_OK(sims.back()->Start());
    ObjectSet more = sims.back()->Objects();
    for (auto& md : more.model_deployments) objects.model_deployments.push_back(std::move(md));
    for (auto& pod : more.pods) objects.pods.push_back(std::move(pod));
  }
  FileObjectSource source;
  source.Set(std::move(objects));
  BaselineStore store;
  AggregatorOptions aggregator_options;
  aggregator_options.baselines = &store;
  Aggregator aggregator(&source, aggregator_options);
  Read talk;
  std::thread other([&] {
    const auto start = steady_clock::now();
    talk.status = aggregator.Get("team", "talk", &talk.snapshot);
    talk.took = std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - start);
  });
  const Read chat = ReadOnce(&aggregator);
  other.join();
  for (const Read* read : {&chat, static_cast<const Read*>(&talk)}) {
    ASSERT_TRUE(read->status.ok()) << read->status.message();
    EXPECT_LT(read->took, std::chrono::seconds(8));
    ASSERT_FALSE(read->snapshot.processing.empty());
    EXPECT_EQ(read->snapshot.processing[0].pod_count, 36);
  }
  for (const auto& simulator : sims) {
    EXPECT_EQ(simulator->PeakConcurrentScrapes(), 32u);
    EXPECT_EQ(simulator->ScrapesServed(), 36u);
  }
}

TEST(FaultMatrix, PodsQueuedBehindTimedOutOnesAreStillRead) {
  // 36 Pods trickle their bodies past the 2 s fetch limit and one answers at once: the four
  // queued behind the first 32 start when those time out, and the request still ends in 8 s.
  sim::DeploymentSimOptions options = ServerPods(37);
  for (int i = 0; i < 36; ++i) options.faults[PodName(i)] = PodFault::kSlowBody;
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());
  FileObjectSource source;
  source.Set(simulator.Objects());
  BaselineStore store;
  AggregatorOptions aggregator_options;
  aggregator_options.baselines = &store;
  Aggregator aggregator(&source, aggregator_options);

  const Read read = ReadOnce(&aggregator);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_LT(read.took, std::chrono::seconds(8));
  EXPECT_EQ(simulator.ScrapesServed(), 37u);
  int timed_out = 0;
  for (const Missing& m : read.snapshot.missing) {
    if (m.source == "scrape" &&
        m.reason.str().find("context deadline exceeded (Client.Timeout") != std::string::npos) {
      ++timed_out;
    }
  }
  EXPECT_EQ(timed_out, 36);
  ASSERT_FALSE(read.snapshot.processing.empty());
  EXPECT_EQ(read.snapshot.processing[0].pod_count, 1);
}

}  // namespace
}  // namespace modelmetrics::deployment
