// Adding an exporter takes one file: toy_profile.h defines a toy engine's profile; this test
// registers it (one line) and reads its Pods through the same selector, parse and merge as the
// built-in exporters, with no other change anywhere. toy_deployment_test.cc runs it against the
// toy's simulated Pods.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aggregation/exporter_profile.h"
#include "aggregation/exporter_registry.h"
#include "aggregation/exporters/builtin.h"
#include "aggregation/merge.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/test_builders.h"
#include "aggregation/toy_profile.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using testing::FindCacheHit;
using testing::FindGauge;
using testing::FindWindow;
using testing::M;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;

using toy::kToy;

std::string ToyBody(int requests, double ttft_sum, int hits, int lookups) {
  return fmt::format(
      "# TYPE toy_active_requests gauge\n"
      "toy_active_requests{{model=\"a\"}} 2\n"
      "toy_active_requests{{model=\"b\"}} 1\n"
      "# TYPE toy_first_token_seconds histogram\n"
      "toy_first_token_seconds_bucket{{le=\"+Inf\"}} {0}\n"
      "toy_first_token_seconds_sum {1}\n"
      "toy_first_token_seconds_count {0}\n"
      "# TYPE toy_requests_total counter\n"
      "toy_requests_total {0}\n"
      "# TYPE toy_cache_hits counter\n"
      "toy_cache_hits {2}\n"
      "# TYPE toy_cache_lookups counter\n"
      "toy_cache_lookups {3}\n",
      requests, ttft_sum, hits, lookups);
}

class ToyExporter : public ::testing::Test {
 protected:
  void SetUp() override { RegisterExporter(&kToy); }
  void TearDown() override { UnregisterExporter(&kToy); }
};

TEST_F(ToyExporter, IsSelectedParsedAndMergedLikeABuiltIn) {
  ModelDeployment md = MetricsModelDeployment();
  md.engine = "ToyLLM";  // engine names compare in any case
  ASSERT_EQ(SelectExporter(md, false), &kToy);
  EXPECT_EQ(ExporterNames(PodRole::kEngine), "toyllm, vllm, sglang, vllm-omni");

  const ExporterProfile* profile = SelectExporter(md, false);
  PodMetrics first;
  PodMetrics second;
  std::string error;
  ASSERT_OK(ParsePodMetrics(ToyBody(10, 5, 30, 100), profile, &first));
  ASSERT_OK(ParsePodMetrics(ToyBody(14, 7, 60, 150), profile, &second));
  EXPECT_EQ(second.gauges.at("running"), 3);

  const Pod pod = MetricsEnginePod("chat-0", "u1");
  const Snapshot snapshot =
      testing::MergeMetricsWindow(md, pod, first, second, std::chrono::seconds(20));
  ASSERT_NE(FindGauge(snapshot.processing, "running", "engine/server"), nullptr);
  EXPECT_EQ(FindGauge(snapshot.processing, "running", "engine/server")->value, 3);
  EXPECT_EQ(FindGauge(snapshot.processing, "running", "engine/server")->source,
            "toy_active_requests");
  const Window* ttft = FindWindow(snapshot.latency, "chat-0", "ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->value, 0.5);  // 2 s over 4 requests
  EXPECT_EQ(ttft->samples, 4);
  const Window* requests = FindWindow(snapshot.traffic, "chat-0", "requests");
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->value, 0.2);  // 4 over 20 s
  const CacheHit* cache = FindCacheHit(snapshot.cache_hits, "chat-0", "local-prefix");
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->rate, 30.0 / 50.0);
  EXPECT_EQ(cache->source, "toy_cache");
  // The absent gauge is reported like any exporter's.
  EXPECT_EQ(snapshot.missing,
            (std::vector<Missing>{M("chat-0", "toy_queued_requests", reason::kAbsent)}));
  EXPECT_TRUE(snapshot.partial);
}

TEST_F(ToyExporter, UnregisteredItIsAnUnsupportedEngineAgain) {
  UnregisterExporter(&kToy);
  ModelDeployment md = MetricsModelDeployment();
  md.engine = "toyllm";
  EXPECT_EQ(SelectExporter(md, false), nullptr);
  EXPECT_EQ(UnsupportedEngineReason("toyllm"),
            "unsupported source: engine \"toyllm\" is not one the deployment metrics read "
            "(vllm, sglang, vllm-omni)");
}

// References between a profile's rows are names the compiler cannot check: every built-in
// profile, and the toy, must have none dangling...
TEST(ProfileReferences, EveryProfileIsSound) {
  for (const ExporterProfile* profile :
       {&exporters::kVllm, &exporters::kSglang, &exporters::kVllmOmni, &exporters::kLlmdRouter,
        &exporters::kVllmRouter, &exporters::kVllmRouterPd, &exporters::kSglangGateway, &kToy}) {
    EXPECT_EQ(DanglingReferences(*profile), std::vector<std::string>{}) << profile->name;
  }
}

// ... and one that has them is caught, each by its row.
TEST(ProfileReferences, DanglingOnesAreNamed) {
  ExporterProfile broken = kToy;
  broken.idle_key = "ttfb";
  broken.windows[1].pair = "tttf";
  broken.error_ratio = ErrorRatio{.requests = "requests", .errors = "errors"};
  broken.ratios = {{.key = "share",
                    .numerator = "requests",
                    .denominator = "request",
                    .no_denominator = reason::kNoObservations}};
  broken.rank_copies = RankCopies{.flag = "--all-ranks", .labels = {"tp_rank"}, .order = "rank"};
  EXPECT_EQ(
      DanglingReferences(broken),
      (std::vector<std::string>{
          "idle_key: no window `ttfb`", "windows[1].pair: no window `tttf`",
          "error_ratio.errors: no window `errors`", "ratios[0].denominator: no window `request`",
          "ratios[0].no_denominator: `no observations in the sampling window` would set "
          "partial",
          "rank_copies.order: `rank` is not a copy label"}));
}

}  // namespace
}  // namespace modelmetrics::deployment
