// The exporters as users run them today (../shared/spec/reference/upstream-changes-2026-09.md §3):
// bodies written from each exporter's current collector code, read into the snapshot a careful
// SRE expects. Each body names the upstream file and commit its lines follow.
#include <string>

#include <gtest/gtest.h>

#include "deployment/baseline_store.h"
#include "deployment/exporters/builtin.h"
#include "deployment/metrics_parse.h"
#include "deployment/test_builders.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using testing::FindGauge;
using testing::MergeReads;
using testing::MetricsEnginePod;
using testing::MetricsPDModelDeployment;
using testing::Parse;
using testing::SGLangPriorityPDResponse;
using testing::T0;

TEST(SglangPriorityScheduling, QueueGaugesReadTheTotalOnly) {
  const PodMetrics read = Parse(SGLangPriorityPDResponse(1), exporters::kSglang);
  EXPECT_EQ(read.gauges.at("running"), 7);
  EXPECT_EQ(read.gauges.at("waiting"), 5);
  EXPECT_EQ(read.gauges.at("decode-transfer-waiting"), 2);
}

// On both halves of a P/D pair every queue gauge is the total, once: 2 x 7 running, not 2 x 14.
TEST(SglangPriorityScheduling, PrefillDecodePairCountsEachRequestOnce) {
  const ModelDeployment md = MetricsPDModelDeployment("sglang");
  const Pod prompt = MetricsEnginePod("prompt-pod", "prompt-uid", "prompt");
  const Pod generation = MetricsEnginePod("generation-pod", "generation-uid", "generation");
  BaselineStore store;
  auto read = [&](WallTime at, int step) {
    const PodMetrics body = Parse(SGLangPriorityPDResponse(step), exporters::kSglang);
    return MergeReads(md, &store, at, {{generation, body}, {prompt, body}});
  };
  read(T0(), 1);
  const Snapshot snapshot = read(T0() + 30s, 3);
  for (const char* scope : {"engine/prompt", "engine/generation"}) {
    SCOPED_TRACE(scope);
    ASSERT_NE(FindGauge(snapshot.processing, "running", scope), nullptr);
    EXPECT_EQ(FindGauge(snapshot.processing, "running", scope)->value, 7);
    ASSERT_NE(FindGauge(snapshot.queueing, "waiting", scope), nullptr);
    EXPECT_EQ(FindGauge(snapshot.queueing, "waiting", scope)->value, 5);
  }
  ASSERT_NE(FindGauge(snapshot.queueing, "decode-transfer-waiting", "engine/generation"), nullptr);
  EXPECT_EQ(FindGauge(snapshot.queueing, "decode-transfer-waiting", "engine/generation")->value, 2);
  EXPECT_FALSE(snapshot.partial);
}

// Without priority scheduling no series carries the label: every one is read, as before.
TEST(SglangPriorityScheduling, WithoutItEverySeriesIsRead) {
  const PodMetrics read = Parse(
      "# TYPE sglang:num_running_reqs gauge\n"
      "sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\",tp_rank=\"0\"} 3\n"
      "sglang:num_running_reqs{dp_rank=\"1\",model_name=\"m\",tp_rank=\"0\"} 4\n",
      exporters::kSglang);
  EXPECT_EQ(read.gauges.at("running"), 7);
}

}  // namespace
}  // namespace modelmetrics::deployment
