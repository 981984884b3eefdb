// The snapshot's values as named metrics (what an autoscaler reads): how each kind is made from
// the entries of a scope, and the missing-value rule, on snapshots merged from Pod reads.
#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/exporter_profile.h"
#include "aggregation/exporter_registry.h"
#include "aggregation/exporters/builtin.h"
#include "aggregation/merge.h"
#include "aggregation/snapshot_metrics.h"
#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using testing::MetricsEnginePod;
using testing::MetricsPDModelDeployment;
using testing::Parse;
using testing::T0;

const SnapshotMetric& Metric(std::string_view name) {
  const SnapshotMetric* metric = FindSnapshotMetric(name);
  EXPECT_NE(metric, nullptr) << name;
  return *metric;
}

// A vLLM body: `running`, `waiting`, KV-cache use, prefix counters and TTFT count `n` (mean
// `ttft`).
std::string Body(int running, int waiting, double kv, double hits, double queries, double n,
                 double ttft = 0.25) {
  return fmt::format(
             "# TYPE vllm:num_requests_running gauge\n"
             "vllm:num_requests_running{{engine=\"0\"}} {}\n"
             "# TYPE vllm:num_requests_waiting gauge\n"
             "vllm:num_requests_waiting{{engine=\"0\"}} {}\n"
             "# TYPE vllm:kv_cache_usage_perc gauge\n"
             "vllm:kv_cache_usage_perc{{engine=\"0\"}} {}\n"
             "# TYPE vllm:prefix_cache_hits_total counter\n"
             "vllm:prefix_cache_hits_total{{engine=\"0\"}} {}\n"
             "# TYPE vllm:prefix_cache_queries_total counter\n"
             "vllm:prefix_cache_queries_total{{engine=\"0\"}} {}\n",
             running, waiting, kv, hits, queries) +
         testing::VllmHistogram("vllm:time_to_first_token_seconds", n * ttft, n) +
         testing::VllmHistogram("vllm:request_time_per_output_token_seconds", n / 100, n) +
         testing::VllmHistogram("vllm:inter_token_latency_seconds", n / 100, n);
}

// A P/D deployment of three decode Pods and one prefill Pod, read twice 10 s apart; `second`
// replaces the second read of decode-2 (nullopt: its read failed).
Snapshot Pd(std::optional<std::string> decode2_second = Body(4, 7, 0.9, 90, 100, 20)) {
  const ModelDeployment md = MetricsPDModelDeployment("vllm");
  BaselineStore store;
  const Pod d0 = MetricsEnginePod("decode-0", "d0", "generation");
  const Pod d1 = MetricsEnginePod("decode-1", "d1", "generation");
  const Pod d2 = MetricsEnginePod("decode-2", "d2", "generation");
  const Pod p0 = MetricsEnginePod("prefill-0", "p0", "prompt");
  const auto read = [](const std::string& body) { return Parse(body, exporters::kVllm); };
  testing::MergeReads(md, &store, T0(),
                      {{d0, read(Body(1, 0, 0.1, 0, 0, 0))},
                       {d1, read(Body(1, 0, 0.1, 0, 0, 0))},
                       {d2, read(Body(1, 0, 0.1, 0, 0, 0))},
                       {p0, read(Body(1, 0, 0.1, 0, 0, 0))}});
  SnapshotBuilder builder(md, &store);
  const WallTime at = T0() + 10s;
  builder.MergePod(d0, read(Body(2, 1, 0.2, 10, 100, 10)), ReadTime::Replay(at));
  builder.MergePod(d1, read(Body(3, 2, 0.4, 50, 100, 30, 0.5)), ReadTime::Replay(at));
  if (decode2_second) {
    builder.MergePod(d2, read(*decode2_second), ReadTime::Replay(at));
  } else {
    builder.AddFailedPod(d2, "metrics endpoint returned HTTP 500");
  }
  builder.MergePod(p0, read(Body(5, 3, 0.3, 0, 40, 40)), ReadTime::Replay(at));
  return builder.Finish(at);
}

TEST(SnapshotMetrics, GaugesSumPerRoleOrOverTheDeployment) {
  const Snapshot s = Pd();
  MetricReading r;
  ASSERT_OK(ReadMetric(s, Metric("waiting"), "engine/generation", &r));
  EXPECT_EQ(r.value, 1 + 2 + 7);
  EXPECT_FALSE(r.window_seconds);
  EXPECT_EQ(r.observed_at, T0() + 10s);
  ASSERT_OK(ReadMetric(s, Metric("waiting"), "engine/prompt", &r));
  EXPECT_EQ(r.value, 3);
  ASSERT_OK(ReadMetric(s, Metric("waiting"), "", &r));
  EXPECT_EQ(r.value, 13);
  ASSERT_OK(ReadMetric(s, Metric("running"), "", &r));
  EXPECT_EQ(r.value, 2 + 3 + 4 + 5);
  // A scope with no Pods has no value, never a zero.
  EXPECT_EQ(ReadMetric(s, Metric("waiting"), "engine/nothing", &r).code(), 404);
  EXPECT_EQ(ReadMetric(s, Metric("router-running"), "", &r).code(), 404);
}

TEST(SnapshotMetrics, WindowsAreSampleWeightedMeansAndHitRatesAreHitsOverQueries) {
  const Snapshot s = Pd();
  MetricReading r;
  // TTFT: the Pods' window means 0.25, 0.5 and 0.25 s, weighted by their 10, 30 and 20 samples.
  ASSERT_OK(ReadMetric(s, Metric("ttft"), "engine/generation", &r));
  EXPECT_DOUBLE_EQ(r.value, (10 * 0.25 + 30 * 0.5 + 20 * 0.25) / 60);
  ASSERT_TRUE(r.window_seconds);
  EXPECT_DOUBLE_EQ(*r.window_seconds, 10);
  // The decode Pods' local prefix cache: (10 + 50 + 90) / (100 + 100 + 100).
  ASSERT_OK(ReadMetric(s, Metric("local-prefix-hit-rate"), "engine/generation", &r));
  EXPECT_DOUBLE_EQ(r.value, 150.0 / 300);
  ASSERT_OK(ReadMetric(s, Metric("local-prefix-hit-rate"), "engine/prompt", &r));
  EXPECT_DOUBLE_EQ(r.value, 0);
  ASSERT_OK(ReadMetric(s, Metric("local-prefix-hit-rate"), "", &r));
  EXPECT_DOUBLE_EQ(r.value, 150.0 / 340);
}

TEST(SnapshotMetrics, UtilizationIsThePodWeightedMeanOrTheMax) {
  const Snapshot s = Pd();
  MetricReading r;
  ASSERT_OK(ReadMetric(s, Metric("kv-cache-usage"), "engine/generation", &r));
  EXPECT_DOUBLE_EQ(r.value, (0.2 + 0.4 + 0.9) / 3);
  ASSERT_OK(ReadMetric(s, Metric("kv-cache-usage-max"), "engine/generation", &r));
  EXPECT_DOUBLE_EQ(r.value, 0.9);
  ASSERT_OK(ReadMetric(s, Metric("kv-cache-usage"), "", &r));
  EXPECT_DOUBLE_EQ(r.value, (0.2 + 0.4 + 0.9 + 0.3) / 4);
}

// A failed read takes that Pod's share out of every metric of its role: no number, the entry
// named; the other role keeps its values.
TEST(SnapshotMetrics, AMissingPodMakesItsRolesMetricsNotFoundAndLeavesOtherRoles) {
  const Snapshot s = Pd(std::nullopt);
  MetricReading r;
  for (const char* name :
       {"waiting", "running", "ttft", "kv-cache-usage", "local-prefix-hit-rate"}) {
    SCOPED_TRACE(name);
    const Status status = ReadMetric(s, Metric(name), "engine/generation", &r);
    EXPECT_EQ(status.code(), 404);
    EXPECT_NE(status.message().find("scrape of Pod decode-2"), std::string::npos)
        << status.message();
    EXPECT_EQ(ReadMetric(s, Metric(name), "", &r).code(), 404);  // the deployment as a whole
  }
  ASSERT_OK(ReadMetric(s, Metric("waiting"), "engine/prompt", &r));
  EXPECT_EQ(r.value, 3);
}

// A source the Pod does not write (here the KV-cache gauge) blocks only the metrics it feeds.
TEST(SnapshotMetrics, AnAbsentSourceBlocksOnlyItsOwnMetric) {
  const std::string without_kv = testing::DropLines(Body(4, 7, 0.9, 90, 100, 20), "kv_cache");
  const Snapshot s = Pd(without_kv);
  MetricReading r;
  const Status status = ReadMetric(s, Metric("kv-cache-usage"), "engine/generation", &r);
  EXPECT_EQ(status.code(), 404);
  EXPECT_NE(status.message().find("vllm:kv_cache_usage_perc of Pod decode-2"), std::string::npos)
      << status.message();
  EXPECT_EQ(ReadMetric(s, Metric("kv-cache-usage-max"), "engine/generation", &r).code(), 404);
  ASSERT_OK(ReadMetric(s, Metric("waiting"), "engine/generation", &r));
  EXPECT_EQ(r.value, 10);
  ASSERT_OK(ReadMetric(s, Metric("kv-cache-usage"), "engine/prompt", &r));
}

// Reasons that leave `partial` unset do not take a value away: the Pods without a KV connector
// have no external-store scope at all, and an idle Pod's TTFT is simply no new sample.
TEST(SnapshotMetrics, NotPartialReasonsDoNotBlockTheOthersValue) {
  const Snapshot s = Pd(Body(4, 7, 0.9, 90, 100, 0));  // decode-2 idle: TTFT count unchanged
  bool idle_listed = false;
  for (const Missing& m : s.missing) idle_listed |= m.reason == reason::kIdleWindow;
  ASSERT_TRUE(idle_listed);
  ASSERT_FALSE(s.partial);
  MetricReading r;
  ASSERT_OK(ReadMetric(s, Metric("ttft"), "engine/generation", &r));
  EXPECT_DOUBLE_EQ(r.value, (10 * 0.25 + 30 * 0.5) / 40);  // the idle Pod adds no sample
}

// A deployment-level entry: coverage names its scope and blocks that scope only.
TEST(SnapshotMetrics, CoverageBlocksItsScope) {
  Snapshot s = Pd();
  s.missing.push_back({"", "engine/generation", "2 of 3 owned metrics Pods present"});
  MetricReading r;
  EXPECT_EQ(ReadMetric(s, Metric("waiting"), "engine/generation", &r).code(), 404);
  EXPECT_EQ(ReadMetric(s, Metric("waiting"), "", &r).code(), 404);
  ASSERT_OK(ReadMetric(s, Metric("waiting"), "engine/prompt", &r));
  s.missing.push_back({"", "pod-discovery", std::string(reason::kPodLimit)});
  EXPECT_EQ(ReadMetric(s, Metric("waiting"), "engine/prompt", &r).code(), 404);
}

TEST(SnapshotMetrics, PodValuesAreEachPodsOwn) {
  const Snapshot s = Pd(std::nullopt);
  ASSERT_EQ(s.pods.size(), 4u);
  EXPECT_EQ(s.pods[0].pod, "decode-0");
  EXPECT_EQ(s.pods[2].pod, "decode-2");
  EXPECT_EQ(s.pods[2].scope, "engine/generation");  // known though its read failed
  MetricReading r;
  ASSERT_OK(ReadPodMetric(s, Metric("waiting"), "decode-1", "", &r));
  EXPECT_EQ(r.value, 2);
  EXPECT_EQ(r.observed_at, T0() + 10s);
  ASSERT_OK(ReadPodMetric(s, Metric("kv-cache-usage"), "decode-0", "engine/generation", &r));
  EXPECT_DOUBLE_EQ(r.value, 0.2);
  EXPECT_EQ(ReadPodMetric(s, Metric("kv-cache-usage"), "decode-0", "engine/prompt", &r).code(),
            404);
  EXPECT_EQ(ReadPodMetric(s, Metric("waiting"), "decode-2", "", &r).code(), 404);
  EXPECT_EQ(ReadPodMetric(s, Metric("waiting"), "nobody", "", &r).code(), 404);
  EXPECT_EQ(ReadPodMetric(s, Metric("ttft"), "decode-0", "", &r).code(), 404);  // not per Pod
}

// A ratio or a hit rate is made of two counters: an entry naming either counter's family (or a
// Pod with no cache counters at all) takes the value away, as its own "a+b" entry does.
TEST(SnapshotMetrics, ARatioOrHitRateIsBlockedByEitherCountersEntry) {
  Snapshot s;
  s.pods = {{"router-0", "router", {}, T0()}, {"router-1", "router", {}, T0()}};
  s.traffic.push_back({"error-ratio", "router-0",
                       "smg_router_requests_total+smg_router_request_errors_total", "router",
                       "ratio", 0.1, 100, 10, T0()});
  MetricReading r;
  ASSERT_OK(ReadMetric(s, Metric("error-ratio"), "router", &r));
  EXPECT_DOUBLE_EQ(r.value, 0.1);
  s.missing.push_back(
      {"router-1", "smg_router_request_errors_total", std::string(reason::kCounterReset)});
  const Status status = ReadMetric(s, Metric("error-ratio"), "router", &r);
  EXPECT_EQ(status.code(), 404);
  EXPECT_NE(status.message().find("of Pod router-1"), std::string::npos) << status.message();

  Snapshot cache = Pd();
  ASSERT_OK(ReadMetric(cache, Metric("local-prefix-hit-rate"), "engine/generation", &r));
  cache.missing.push_back({"decode-1", "cache-hit counters", "metric is absent"});
  EXPECT_EQ(ReadMetric(cache, Metric("local-prefix-hit-rate"), "engine/generation", &r).code(),
            404);
}

// Every ratio's metric lists both counters' families among its sources, every hit rate the
// no-counters source.
TEST(SnapshotMetrics, RatiosAndHitRatesListTheirCountersAsSources) {
  for (const SnapshotMetric& m : SnapshotMetrics()) {
    SCOPED_TRACE(m.name);
    const auto has = [&m](std::string_view source) {
      return std::find(m.sources.begin(), m.sources.end(), source) != m.sources.end();
    };
    if (m.kind == MetricKind::kCacheHitRate) {
      EXPECT_TRUE(has("cache-hit counters"));
    }
    for (const std::string& source : m.sources) {
      const size_t plus = source.find('+');
      if (plus == std::string::npos) continue;
      EXPECT_TRUE(has(source.substr(0, plus))) << source;
      EXPECT_TRUE(has(source.substr(plus + 1))) << source;
    }
  }
}

// A sum that overflows to infinity is no value, never a number.
TEST(SnapshotMetrics, ANonFiniteSumIsNotFound) {
  Snapshot s;
  s.processing.push_back(
      {"waiting", "vllm:num_requests_waiting", "engine/a", "requests", 1.5e308, 1, T0()});
  s.processing.push_back(
      {"waiting", "vllm:num_requests_waiting", "engine/b", "requests", 1.5e308, 1, T0()});
  MetricReading r;
  ASSERT_OK(ReadMetric(s, Metric("waiting"), "engine/a", &r));
  EXPECT_EQ(ReadMetric(s, Metric("waiting"), "", &r).code(), 404);
  s.pods = {{"a-0", "engine/a", {{"waiting", std::numeric_limits<double>::infinity()}}, T0()}};
  EXPECT_EQ(ReadPodMetric(s, Metric("waiting"), "a-0", "", &r).code(), 404);
}

// A Pod left unread by the Pod limit is not "no value" (which a pods list leaves out) but
// Unavailable, so the whole list fails rather than the HPA count that Pod as 0.
TEST(SnapshotMetrics, APodBeyondThePodLimitIsUnavailable) {
  Snapshot s = Pd();
  MetricReading r;
  EXPECT_EQ(ReadPodMetric(s, Metric("waiting"), "decode-9", "", &r).code(), 404);
  s.missing.push_back({"", "pod-discovery", std::string(reason::kPodLimit)});
  const Status unread = ReadPodMetric(s, Metric("waiting"), "decode-9", "", &r);
  EXPECT_EQ(unread.code(), 503);
  EXPECT_NE(unread.message().find("Pod count exceeds"), std::string::npos) << unread.message();
  ASSERT_OK(ReadPodMetric(s, Metric("waiting"), "decode-1", "", &r));  // read: its own value
}

// Every row of every built-in profile is a metric under its snapshot name, of one kind only.
TEST(SnapshotMetrics, EveryProfileRowIsOneMetricOfOneKind) {
  const std::vector<SnapshotMetric>& metrics = SnapshotMetrics();
  for (size_t i = 1; i < metrics.size(); ++i) EXPECT_LT(metrics[i - 1].name, metrics[i].name);
  for (const ExporterProfile* profile : BuiltinExporters()) {
    SCOPED_TRACE(profile->name);
    for (const GaugeRow& row : profile->gauges) {
      EXPECT_EQ(Metric(row.key).kind, MetricKind::kGauge) << row.key;
    }
    for (const WindowRow& row : profile->windows) {
      EXPECT_EQ(Metric(row.key).kind, MetricKind::kWindow) << row.key;
    }
    for (const CacheRow& row : profile->cache) {
      EXPECT_EQ(Metric(std::string(row.scope) + "-hit-rate").tier, row.scope);
    }
    for (const UtilizationRow& row : profile->utilization) {
      EXPECT_EQ(Metric(row.key).kind, MetricKind::kUtilizationMean);
      EXPECT_EQ(Metric(std::string(row.key) + "-max").kind, MetricKind::kUtilizationMax);
    }
  }
  EXPECT_EQ(Metric("error-ratio").kind, MetricKind::kWindow);
  EXPECT_EQ(FindSnapshotMetric("no-such-metric"), nullptr);
}

}  // namespace
}  // namespace modelmetrics::deployment
