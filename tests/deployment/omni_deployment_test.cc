// The vLLM-Omni deployment view end to end: a simulated vllm-omni deployment whose Pods each run
// the pipeline simulator is read twice by the aggregator over HTTP, with every pipeline held
// still during each read; each per-stage, per-stage-replica, per-edge and per-reason entry of the
// second snapshot must equal what the simulators' own registries (their instruments' values, not
// their text) moved by between the two reads.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "aggregation/aggregator.h"
#include "aggregation/baseline_store.h"
#include "aggregation/exporter_profile.h"
#include "kube/object_file.h"
#include "modelmetrics/metrics.h"
#include "sim/deployment_sim.h"
#include "sim/pipeline_sim.h"
#include "status_matchers.h"
#include "test_deadlines.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;

struct Totals {
  double sum = 0;
  double count = 0;  // a counter's or gauge's value
};
// scope -> totals of one family in one registry.
using Scoped = std::map<std::string, Totals>;

// The family's children grouped as the profile row splits them, from the instruments.
Scoped Read(const Registry& registry, std::string_view family, Split split,
            std::string_view split_label = "") {
  Scoped out;
  for (const metrics_internal::FamilyBase* f : registry.Families()) {
    if (f->options().name != family) continue;
    const std::vector<std::string>& labels = f->options().labels;
    for (const CollectedChild& child : f->Collect()) {
      std::vector<std::string> values;
      for (std::string_view label : ExporterProfile::SplitLabels(split, split_label)) {
        const auto at = std::find(labels.begin(), labels.end(), label);
        EXPECT_NE(at, labels.end()) << family << " has no label " << label;
        values.push_back(child.label_values.at(static_cast<size_t>(at - labels.begin())));
      }
      const std::string scope =
          split == Split::kNone ? "" : ExporterProfile::SplitScope(split, split_label, values);
      Totals& totals = out[scope];
      if (f->type() == MetricType::kHistogram) {
        totals.sum += child.sum;
        totals.count += static_cast<double>(child.count);
      } else {
        totals.count += child.value;
      }
    }
  }
  return out;
}

struct Row {
  std::string_view key;  // the snapshot's window name
  std::string_view family;
  Split split;
  std::string_view split_label = "";
  bool histogram = true;
};

constexpr Row kRows[] = {
    {"stage-gen-time", "vllm_omni:stage_gen_time_s", Split::kStage},
    {"audio-ttfp", "vllm_omni:audio_ttfp_s", Split::kStageReplica},
    {"audio-rtf", "vllm_omni:audio_rtf", Split::kStageReplica},
    {"transfer-size", "vllm_omni:transfer_size_bytes", Split::kEdge},
    {"transfer-tx", "vllm_omni:transfer_tx_s", Split::kEdge},
    {"transfer-rx", "vllm_omni:transfer_rx_s", Split::kEdge},
    {"transfer-in-flight", "vllm_omni:transfer_in_flight_s", Split::kEdge},
    {"requests-failed", "vllm_omni:requests_failed", Split::kLabel, "reason", false},
    {"requests-succeeded", "vllm_omni:requests_success", Split::kLabel, "finished_reason", false},
};

// Every Pod's registry read while all pipelines are held still, around one aggregator read.
struct HeldRead {
  Snapshot snapshot;
  std::map<std::string, std::map<std::string_view, Scoped>> pods;  // pod -> row key -> scopes
  std::map<std::string, Scoped> underrun, continuity, stage_running;
};

HeldRead ReadHeld(sim::DeploymentSim& sim, Aggregator& aggregator) {
  HeldRead read;
  const std::vector<std::string> pods = sim.PodNames();
  for (const std::string& pod : pods) sim.Pipeline(pod)->Pause();
  const Status status = aggregator.Get("default", "voice", &read.snapshot);
  EXPECT_EQ(status.code(), 200) << status.message();
  for (const std::string& pod : pods) {
    const Registry& registry = sim.Pipeline(pod)->registry();
    for (const Row& row : kRows) {
      read.pods[pod][row.key] = Read(registry, row.family, row.split, row.split_label);
    }
    read.underrun[pod] = Read(registry, "vllm_omni:audio_underrun_s", Split::kStageReplica);
    read.continuity[pod] = Read(registry, "vllm_omni:audio_continuity_ok", Split::kStageReplica);
    read.stage_running[pod] = Read(registry, "vllm:num_requests_running", Split::kStageReplica);
  }
  for (const std::string& pod : pods) sim.Pipeline(pod)->Resume();
  return read;
}

const Window* Find(const Snapshot& s, std::string_view pod, std::string_view name,
                   std::string_view scope) {
  for (const std::vector<Window>* area : {&s.latency, &s.traffic, &s.transfer}) {
    for (const Window& w : *area) {
      if (w.pod == pod && w.name == name && w.scope == scope) return &w;
    }
  }
  return nullptr;
}

// A group not created yet counts zero.
double CountOf(const Scoped& scoped, const std::string& scope) {
  const auto found = scoped.find(scope);
  return found == scoped.end() ? 0 : found->second.count;
}

bool Near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

TEST(OmniDeployment, PerStageAndPerEdgeEntriesEqualThePipelineSimulatorsOwnCounters) {
  sim::DeploymentSimOptions options;
  options.name = "voice";
  options.engine = "vllm-omni";
  options.model = "Qwen/Qwen2.5-Omni-7B";
  options.roles = {{"server", deployment::RoleKind::kServer, 2, 1, {}}};
  options.requests_per_second = 12;  // 6 speech requests/s per Pod
  sim::DeploymentSim sim(options);
  std::string error;
  ASSERT_OK(sim.Start());
  modelmetrics::testing::LetTimePass(1500ms);  // traffic on every stage; more only adds to it

  FileObjectSource source;
  source.Set(sim.Objects());
  BaselineStore store;
  AggregatorOptions aggregator_options;
  aggregator_options.baselines = &store;
  Aggregator aggregator(&source, aggregator_options);

  const HeldRead first = ReadHeld(sim, aggregator);
  modelmetrics::testing::LetTimePass(5s);  // the window compared; its length is read, not assumed
  const HeldRead second = ReadHeld(sim, aggregator);
  const Snapshot& s = second.snapshot;

  size_t compared = 0;
  for (const std::string& pod : sim.PodNames()) {
    for (const Row& row : kRows) {
      const Scoped& before = first.pods.at(pod).at(row.key);
      for (const auto& [scope, after] : second.pods.at(pod).at(row.key)) {
        const auto old = before.find(scope);
        const Totals from = old == before.end() ? Totals{} : old->second;  // new: from zero
        const double count = after.count - from.count;
        const Window* w = Find(s, pod, row.key, scope);
        if (row.histogram && count == 0) {
          EXPECT_EQ(w, nullptr) << pod << " " << row.key << " " << scope;
          continue;
        }
        ASSERT_NE(w, nullptr) << pod << " " << row.key << " " << scope;
        EXPECT_EQ(w->samples, count) << pod << " " << row.key << " " << scope;
        const double expected =
            row.histogram ? (after.sum - from.sum) / count : count / w->window_seconds;
        EXPECT_TRUE(Near(w->value, expected))
            << pod << " " << row.key << " " << scope << ": " << w->value << " vs " << expected;
        ++compared;
      }
    }
    // The continuity-ok ratio per code2wav replica.
    for (const auto& [scope, after] : second.underrun.at(pod)) {
      const double finished = after.count - CountOf(first.underrun.at(pod), scope);
      const double ok =
          CountOf(second.continuity.at(pod), scope) - CountOf(first.continuity.at(pod), scope);
      const Window* w = Find(s, pod, "continuity-ok-ratio", scope);
      if (finished == 0) continue;
      ASSERT_NE(w, nullptr) << pod << " " << scope;
      EXPECT_EQ(w->samples, finished);
      EXPECT_TRUE(Near(w->value, ok / finished)) << w->value << " vs " << ok / finished;
      ++compared;
    }
  }
  // The stage-replica running gauges, summed over the Pods.
  std::map<std::string, double> running;
  for (const auto& [pod, scoped] : second.stage_running) {
    for (const auto& [scope, totals] : scoped) running[scope] += totals.count;
  }
  ASSERT_FALSE(running.empty());
  for (const auto& [scope_name, value] : running) {
    const std::string& scope = scope_name;  // (clang 14 cannot capture a structured binding)
    const auto gauge = std::find_if(s.processing.begin(), s.processing.end(), [&](const Gauge& g) {
      return g.name == "stage-running" && g.scope == scope;
    });
    ASSERT_NE(gauge, s.processing.end()) << scope;
    EXPECT_EQ(gauge->value, value) << scope;
    EXPECT_EQ(gauge->pod_count, 2);
  }
  // Enough of the pipeline moved for the comparison to mean something: every stage, both
  // code2wav replicas and all four physical edges of the speech pipeline, on some Pod (a Pod's
  // requests pick their replicas at random, so one Pod may miss an edge in a window).
  EXPECT_GE(compared, 3u + 2 + 4 * 4);
  for (std::string_view edge :
       {"edge/0.0->1.0", "edge/0.1->1.0", "edge/1.0->2.0", "edge/1.0->2.1"}) {
    bool seen = false;
    for (const std::string& pod : sim.PodNames()) {
      seen = seen || Find(s, pod, "transfer-in-flight", edge) != nullptr;
    }
    EXPECT_TRUE(seen) << edge;
  }
}

}  // namespace
}  // namespace modelmetrics::deployment
