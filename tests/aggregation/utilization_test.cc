// KV-cache utilization (a modelmetrics extension beside GPUStack's fields): each engine Pod's own
// value read from real captures under the name its version writes, the mean and the max over a
// role's readable Pods, and an absence reported without touching GPUStack's `partial`.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/exporters/builtin.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using testing::Fixture;
using testing::GpuStackMissing;
using testing::M;
using testing::MergeOnce;
using testing::MergeReads;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;
using testing::MetricsPDModelDeployment;
using testing::MetricsServerPod;
using testing::Parse;
using testing::SetSample;
using testing::T0;
using testing::UpstreamBody;

std::string RealFixture(const std::string& name) {
  const std::string path = test_paths::Shared("fixtures/real/") + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const Utilization* Find(const Snapshot& s, std::string_view scope) {
  for (const Utilization& u : s.utilization) {
    if (u.name == kKvCacheUsage && u.scope == scope) return &u;
  }
  return nullptr;
}

// Each real capture read by its engine's profile gives the Pod's own value: the capture's, then
// (so a wrong series cannot pass by being 0 too) the value written into that series.
TEST(Utilization, RealCapturesGiveThePodsOwnValueUnderTheNameTheirVersionWrites) {
  struct Case {
    const char* file;
    const ExporterProfile& profile;
    const char* series;  // the series that holds the value
    double captured;
  };
  const Case cases[] = {
      {"vllm/kserve-llmisvc-vllm-v1-pd-nixl-tinyllama.txt", exporters::kVllm,
       "vllm:kv_cache_usage_perc", 0},
      // vLLM 0.5-0.7: the older name only.
      {"vllm/datadog-vllm-0.5-opt125m-original.txt", exporters::kVllm, "vllm:gpu_cache_usage_perc",
       0},
      {"vllm/aibrix-docs-vllm-0.7-qwen25-coder-trimmed.txt", exporters::kVllm,
       "vllm:gpu_cache_usage_perc", 0},
      {"vllm/bsc-vllm-0.6-fork-opt-2.7b-startup.txt", exporters::kVllm, "vllm:gpu_cache_usage_perc",
       0},
      // Both names: the current one is read.
      {"vllm/datadog-vllm-v0-base-plus-v1-additions.txt", exporters::kVllm,
       "vllm:kv_cache_usage_perc", 0},
      {"sglang/sglang-docs-production-metrics-llama31-8b.txt", exporters::kSglang,
       "sglang:token_usage", 0.28},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string body = RealFixture(c.file);
    const PodMetrics read = Parse(body, c.profile);
    ASSERT_TRUE(read.utilization.contains(kKvCacheUsage));
    EXPECT_DOUBLE_EQ(read.utilization.at(std::string(kKvCacheUsage)), c.captured);
    const PodMetrics set = Parse(SetSample(body, c.series, "0.625"), c.profile);
    EXPECT_DOUBLE_EQ(set.utilization.at(std::string(kKvCacheUsage)), 0.625);
  }
  // With both names written, the older one's value is not the one read.
  const std::string both = RealFixture("vllm/datadog-vllm-v0-base-plus-v1-additions.txt");
  const PodMetrics read =
      Parse(SetSample(both, "vllm:gpu_cache_usage_perc", "0.9"), exporters::kVllm);
  EXPECT_DOUBLE_EQ(read.utilization.at(std::string(kKvCacheUsage)), 0);
}

// SGLang with DP attention: each DP rank's own pool; with every scheduler logging, its copies are
// read once, and without the flag every copy still averages to the same fraction.
TEST(Utilization, DataParallelRanksAverageAndRankCopiesCountOnce) {
  const std::string body = UpstreamBody("sglang_016d8605_priority_all_schedulers.prom");
  const Pod flagged = MetricsServerPod(
      "sglang-0", {"python3", "-m", "sglang.launch_server", "--dp-size", "2",
                   "--enable-dp-attention", "--enable-metrics-for-all-schedulers"});
  PodMetrics read;
  ASSERT_OK(ParsePodMetrics(body, &exporters::kSglang, &read, &flagged));
  EXPECT_DOUBLE_EQ(read.utilization.at(std::string(kKvCacheUsage)), 0.10);  // (0.12 + 0.08) / 2
  const Pod unflagged = MetricsServerPod("sglang-1");
  ASSERT_OK(ParsePodMetrics(body, &exporters::kSglang, &read, &unflagged));
  EXPECT_DOUBLE_EQ(read.utilization.at(std::string(kKvCacheUsage)), 0.10);
}

std::string VllmBody(double usage) {
  return testing::MetricsVLLMResponse(1, 2, 1) +
         "# TYPE vllm:kv_cache_usage_perc gauge\n"
         "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} " +
         std::to_string(usage) + "\n";
}

// Per role: the mean and the max over the role's readable Pods, their count and the latest read.
TEST(Utilization, MeanAndMaxPerRoleOverItsReadablePods) {
  ModelDeployment md = MetricsPDModelDeployment("vllm");
  BaselineStore store;
  const Snapshot s = MergeReads(
      md, &store, T0(),
      {{MetricsEnginePod("decode-0", "d0", "generation"), Parse(VllmBody(0.2), exporters::kVllm)},
       {MetricsEnginePod("decode-1", "d1", "generation"), Parse(VllmBody(0.5), exporters::kVllm)},
       {MetricsEnginePod("decode-2", "d2", "generation"), Parse(VllmBody(0.8), exporters::kVllm)},
       {MetricsEnginePod("prefill-0", "p0", "prompt"), Parse(VllmBody(0.25), exporters::kVllm)}});
  ASSERT_EQ(s.utilization.size(), 2u);
  const Utilization* decode = Find(s, "engine/generation");
  ASSERT_NE(decode, nullptr);
  EXPECT_DOUBLE_EQ(decode->mean, 0.5);
  EXPECT_DOUBLE_EQ(decode->max, 0.8);
  EXPECT_EQ(decode->pod_count, 3);
  EXPECT_EQ(decode->unit, "fraction");
  EXPECT_EQ(decode->source, "vllm:kv_cache_usage_perc");
  EXPECT_EQ(decode->observed_at, T0());
  const Utilization* prefill = Find(s, "engine/prompt");
  ASSERT_NE(prefill, nullptr);
  EXPECT_DOUBLE_EQ(prefill->mean, 0.25);
  EXPECT_DOUBLE_EQ(prefill->max, 0.25);
  EXPECT_EQ(prefill->pod_count, 1);
  EXPECT_EQ(s.utilization[0].scope, "engine/generation");  // sorted by name and scope
}

// GPUStack's trimmed captures carry no KV-cache gauge: each engine Pod gets one not-partial
// missing[] entry naming the family, and every GPUStack field is what it was.
TEST(Utilization, AbsentGaugeIsNamedInMissingAndLeavesPartialUnset) {
  const Pod pod = MetricsServerPod("server");
  const Snapshot s =
      testing::MergeMetricsWindow(MetricsModelDeployment(), pod,
                                  Parse(Fixture("vllm_server_busy_first.prom"), exporters::kVllm),
                                  Parse(Fixture("vllm_server_busy_second.prom"), exporters::kVllm));
  EXPECT_TRUE(s.utilization.empty());
  EXPECT_FALSE(s.partial);
  std::vector<Missing> extension;
  for (const Missing& m : s.missing) {
    if (m.reason == reason::kUtilizationAbsent) extension.push_back(m);
  }
  EXPECT_EQ(
      extension,
      (std::vector<Missing>{M("server", "vllm:kv_cache_usage_perc", reason::kUtilizationAbsent)}));
  EXPECT_EQ(GpuStackMissing(s).size() + 1, s.missing.size());

  // A router Pod reads no utilization and reports none missing.
  ModelDeployment routed = MetricsModelDeployment();
  routed.router = Router{.name = "vllm-router", .replicas = 1};
  BaselineStore store;
  const Snapshot r =
      MergeOnce(routed, &store, T0(), testing::MetricsRouterPod("router", "r", "vllm-router"),
                Parse(Fixture("vllm_router_server_first.prom"), exporters::kVllmRouter));
  for (const Missing& m : r.missing) EXPECT_NE(m.reason, reason::kUtilizationAbsent);
}

// A value that is not a fraction a Pod can hold (NaN) is no value: named, and the role's mean
// is over the others.
TEST(Utilization, InvalidValueIsNamedAndLeftOutOfTheMean) {
  const ModelDeployment md = MetricsModelDeployment();
  BaselineStore store;
  const std::string nan_body = SetSample(VllmBody(0), "vllm:kv_cache_usage_perc", "NaN");
  const Snapshot s =
      MergeReads(md, &store, T0(),
                 {{MetricsEnginePod("a", "a"), Parse(nan_body, exporters::kVllm)},
                  {MetricsEnginePod("b", "b"), Parse(VllmBody(0.4), exporters::kVllm)}});
  const Utilization* u = Find(s, "engine/server");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->pod_count, 1);
  EXPECT_DOUBLE_EQ(u->mean, 0.4);
  bool named = false;
  for (const Missing& m : s.missing) {
    if (m.pod == "a" && m.source == "vllm:kv_cache_usage_perc") {
      named = true;
      EXPECT_NE(m.reason.str().find("NaN"), std::string::npos) << m.reason.str();
    }
  }
  EXPECT_TRUE(named);
}

// A read Pod of the role without the gauge (a build that does not write it) takes the role's
// entry away: a mean over fewer Pods would pass a KEDA location gated on `partial`, which such an
// absence leaves unset. Another role keeps its entry.
TEST(Utilization, ARoleWithAReadPodLackingTheGaugeHasNoEntry) {
  ModelDeployment md = MetricsPDModelDeployment("vllm");
  BaselineStore store;
  const std::string no_gauge = testing::MetricsVLLMResponse(1, 2, 1);  // no KV-cache gauge
  const Snapshot s = MergeReads(
      md, &store, T0(),
      {{MetricsEnginePod("decode-0", "d0", "generation"), Parse(VllmBody(0.2), exporters::kVllm)},
       {MetricsEnginePod("decode-1", "d1", "generation"), Parse(no_gauge, exporters::kVllm)},
       {MetricsEnginePod("prefill-0", "p0", "prompt"), Parse(VllmBody(0.25), exporters::kVllm)}});
  EXPECT_EQ(Find(s, "engine/generation"), nullptr);
  ASSERT_NE(Find(s, "engine/prompt"), nullptr);
  EXPECT_NE(std::find(s.missing.begin(), s.missing.end(),
                      M("decode-1", "vllm:kv_cache_usage_perc", reason::kUtilizationAbsent)),
            s.missing.end());
}

// The JSON member, its field order and its decoding.
TEST(Utilization, JsonCarriesItAfterGpuStacksFieldsAndReadsItBack) {
  const ModelDeployment md = MetricsModelDeployment();
  BaselineStore store;
  const Snapshot s = MergeOnce(md, &store, T0(), MetricsEnginePod("a", "a"),
                               Parse(VllmBody(0.375), exporters::kVllm));
  const std::string json = SnapshotToJson(s);
  EXPECT_NE(
      json.find("\"utilization\":[{\"name\":\"kv-cache-usage\",\"source\":\"vllm:kv_cache_"
                "usage_perc\",\"scope\":\"engine/server\",\"unit\":\"fraction\",\"mean\":0."
                "375,\"max\":0.375,\"podCount\":1,\"observedAt\":\"2026-11-29T16:13:15Z\"}]}"),
      std::string::npos)
      << json;
  Snapshot back;
  ASSERT_OK(SnapshotFromJson(json, &back));
  ASSERT_EQ(back.utilization.size(), 1u);
  EXPECT_DOUBLE_EQ(back.utilization[0].mean, 0.375);
  EXPECT_EQ(SnapshotToJson(back), json);
  EXPECT_NE(SnapshotToYaml(s).find("utilization:\n- name: kv-cache-usage\n"), std::string::npos);
  const std::string table = SnapshotToTable(s);
  EXPECT_NE(table.find("UTILIZATION"), std::string::npos) << table;
  EXPECT_NE(table.find("37.5%"), std::string::npos) << table;
}

}  // namespace
}  // namespace modelmetrics::deployment
