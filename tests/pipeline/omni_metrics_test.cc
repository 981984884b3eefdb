// OmniMetrics against the upstream acceptance cases of
// shared/spec/reference/pipeline-metrics-behaviour.md §7: tests/metrics/test_prometheus.py,
// test_emit_calls.py, test_transfer.py and the failure-reason parts of test_metrics_utils.py,
// with the same inputs and expected values, asserted on the rendered text exposition. Suites are
// named after the upstream files, tests after the upstream cases. Plus the gating rule.
#include "pipeline/omni_metrics.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "modelmetrics/metrics.h"
#include "pipeline/fixture_text.h"

namespace modelmetrics::pipeline {
namespace {

using ::modelmetrics::testing::Contains;

constexpr std::string_view kModel = "test-model";

struct Fixture {
  explicit Fixture(bool enabled = true, std::vector<int> layout = {1, 2, 1},
                   ReplicaResolver resolver = {})
      : registry(RegistryOptions{.enabled = enabled}),
        metrics(registry, OmniMetrics::Options{.model_name = std::string(kModel),
                                               .replicas_per_stage = std::move(layout),
                                               .clock = [this] { return now; },
                                               .replica_resolver = std::move(resolver),
                                               .log_sink = nullptr,
                                               .on_finalize = {}}) {}
  std::string Text() const { return registry.Render(Format::kText); }
  double now = 1000.0;
  Registry registry;
  OmniMetrics metrics;
};

bool HasLine(const std::string& text, std::string_view line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

StageMessage Message(uint64_t id, std::string rid, int stage, std::optional<int> replica,
                     std::string stage_type, std::string unit_type, bool final_stage) {
  StageMessage m;
  m.message_id = id;
  m.stage_type = std::move(stage_type);
  m.final_stage = final_stage;
  m.stats.request_id = std::move(rid);
  m.stats.stage_id = stage;
  m.stats.replica_id = replica;
  m.stats.output_unit_type = std::move(unit_type);
  return m;
}

#define EXPECT_LINE(text, line) EXPECT_TRUE(HasLine(text, line)) << "missing: " << (line)
#define EXPECT_NO_SUBSTR(text, s) EXPECT_FALSE(Contains(text, s)) << "unexpected: " << (s)

// ---- tests/metrics/test_prometheus.py ----

TEST(TestPrometheus, SuccessFailureCountersGaugesAndE2eCount) {
  Fixture f;
  f.metrics.prometheus().RequestSucceeded(1.5, "stop");
  f.metrics.prometheus().RequestSucceeded(2.0, "stop");
  f.metrics.prometheus().RequestSucceeded(3.0, "length");
  f.metrics.prometheus().RequestFailed();
  f.metrics.prometheus().SetRunning(5);
  f.metrics.prometheus().SetWaiting(2);
  const std::string text = f.Text();
  for (const char* help :
       {"# HELP vllm_omni:num_requests_running ", "# HELP vllm_omni:num_requests_waiting ",
        "# HELP vllm_omni:requests_success_total ", "# HELP vllm_omni:e2e_request_latency_s "}) {
    EXPECT_TRUE(Contains(text, help)) << help;
  }
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="stop",model_name="test-model"} 2.0)");
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="length",model_name="test-model"} 1.0)");
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="abort",model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_requests_running{model_name="test-model"} 5.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_requests_waiting{model_name="test-model"} 2.0)");
  // The failure does not observe e2e.
  EXPECT_LINE(text, R"(vllm_omni:e2e_request_latency_s_count{model_name="test-model"} 3.0)");
}

TEST(TestPrometheus, EveryLineCarriesModelNameNoEngineLabelNoLegacyNames) {
  Fixture f;
  f.metrics.prometheus().RequestSucceeded(1.0);
  f.metrics.prometheus().ObserveStageGenTime(0, "llm", 0.5);
  const std::string text = f.Text();
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("vllm_omni:", 0) == 0) {
      EXPECT_TRUE(Contains(l, "model_name=\"")) << l;
    }
  }
  EXPECT_NO_SUBSTR(text, "engine=\"");
  EXPECT_NO_SUBSTR(text, "request_queue_time_seconds");
  EXPECT_NO_SUBSTR(text, "e2e_request_latency_seconds");
  EXPECT_NO_SUBSTR(text, "_total_total");
}

TEST(TestPrometheus, GaugeRaceCounterBackToZeroAfterCleanup) {
  Fixture f;
  f.metrics.OnRequestAdded("r1");
  f.metrics.OnRequestDispatched("r1");
  EXPECT_EQ(f.metrics.running_counter(), 1);
  auto result = f.metrics.OnStageMessage(Message(1, "r1", 0, 0, "llm", "text", true));
  EXPECT_TRUE(result.finalized);
  f.metrics.OnRequestCleanup("r1");
  EXPECT_EQ(f.metrics.running_counter(), 0);
  EXPECT_EQ(f.metrics.num_request_states(), 0u);
  const std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:num_requests_running{model_name="test-model"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_requests_waiting{model_name="test-model"} 0.0)");
  // A finished request is not a failure.
  EXPECT_NO_SUBSTR(text, "requests_failed_total{");
}

TEST(TestPrometheus, GaugeRaceTwoInFlightOneFinalizedAndCleanedUp) {
  Fixture f;
  for (const char* rid : {"r1", "r2"}) {
    f.metrics.OnRequestAdded(rid);
    f.metrics.OnRequestDispatched(rid);
  }
  f.metrics.OnStageMessage(Message(1, "r1", 0, 0, "llm", "text", true));
  f.metrics.OnRequestCleanup("r1");
  const std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:num_requests_running{model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_requests_waiting{model_name="test-model"} 0.0)");
}

// §4.15, bug #6547: requests queued inside the diffusion scheduler count as waiting.
TEST(TestPrometheus, EnginesWaitingCorrectionIssue6547) {
  Fixture f(true, {1});
  for (int i = 0; i < 10; ++i) {
    std::string rid = "r" + std::to_string(i);
    f.metrics.OnRequestAdded(rid);
    f.metrics.OnRequestDispatched(rid);
  }
  f.metrics.OnWaitingSnapshot(0, 0, 9);
  const std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:num_requests_running{model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_requests_waiting{model_name="test-model"} 9.0)");
}

// ---- tests/metrics/test_emit_calls.py ----

TEST(TestEmitCalls, FailureTaxonomy) {
  for (std::string_view r : {"client_abort", "client_disconnect", "stage_error", "unknown"}) {
    EXPECT_EQ(NormalizeFailureReason(r), r);
  }
  EXPECT_EQ(NormalizeFailureReason("timeout for request req-1"), "unknown");
  EXPECT_EQ(NormalizeFailureReason(""), "unknown");
  EXPECT_EQ(NormalizeFailureReason(std::nullopt), "unknown");
}

TEST(TestEmitCalls, RecordRequestFailureOnceCallsBoth) {
  Fixture f;
  f.metrics.OnRequestAdded("req-1");
  f.metrics.OnRequestFailure("req-1", "client_disconnect");
  const std::string text = f.Text();
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="abort",model_name="test-model"} 1.0)");
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_failed_total{model_name="test-model",reason="client_disconnect"} 1.0)");
}

TEST(TestEmitCalls, FreeTextReasonNormalisedToUnknown) {
  Fixture f;
  f.metrics.OnRequestAdded("req-1");
  f.metrics.OnRequestFailure("req-1", "CUDA error for req-1");
  EXPECT_LINE(f.Text(),
              R"(vllm_omni:requests_failed_total{model_name="test-model",reason="unknown"} 1.0)");
}

TEST(TestEmitCalls, AlreadySucceededRequestRecordsNoFailure) {
  Fixture f;
  f.metrics.OnRequestAdded("req-1");
  f.metrics.OnStageMessage(Message(1, "req-1", 0, 0, "llm", "text", true));
  f.metrics.OnRequestFailure("req-1", "client_abort");
  const std::string text = f.Text();
  EXPECT_NO_SUBSTR(text, "requests_failed_total{");
  EXPECT_NO_SUBSTR(text, "finished_reason=\"abort\"");
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="stop",model_name="test-model"} 1.0)");
}

TEST(TestEmitCalls, MissingRequestStateNoCalls) {
  Fixture f;
  f.metrics.OnRequestFailure("nope", "client_abort");
  f.metrics.OnRequestCleanup("nope");
  EXPECT_NO_SUBSTR(f.Text(), "requests_failed_total{");
}

TEST(TestEmitCalls, FailureThenCleanupRecordsOneFailureWithFirstReason) {
  Fixture f;
  f.metrics.OnRequestAdded("req-1");
  f.metrics.OnRequestFailure("req-1", "client_disconnect");
  f.metrics.OnRequestCleanup("req-1", "stage_error");
  const std::string text = f.Text();
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_failed_total{model_name="test-model",reason="client_disconnect"} 1.0)");
  EXPECT_NO_SUBSTR(text, "reason=\"stage_error\"");
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="abort",model_name="test-model"} 1.0)");
}

TEST(TestEmitCalls, CleanupDefaultReasonOnUnfinishedRequestIsStageError) {
  Fixture f;
  f.metrics.OnRequestAdded("req-1");
  f.metrics.OnRequestCleanup("req-1");
  EXPECT_LINE(
      f.Text(),
      R"(vllm_omni:requests_failed_total{model_name="test-model",reason="stage_error"} 1.0)");
}

TEST(TestEmitCalls, LogStatsFalseEveryObserveIsANoOp) {
  Fixture f(/*enabled=*/false);
  f.metrics.prometheus().RequestSucceeded(1.0, "stop");
  f.metrics.prometheus().RequestFailed();
  f.metrics.prometheus().IncRequestsFailed("stage_error");
  f.metrics.prometheus().SetRunning(3);
  f.metrics.prometheus().ObserveTokens(5, 7);
  f.metrics.prometheus().ObserveStageGenTime(0, "llm", 0.25);
  f.metrics.prometheus().ObserveQueueWait(0.1);
  f.metrics.prometheus().SetStageWaitingRequests(1, 4);
  f.metrics.prometheus().ObserveStageInQueue(1, 0.0);
  f.metrics.prometheus().ObserveNumInferenceSteps(20);
  f.metrics.prometheus().IncImageCount(2);
  f.metrics.prometheus().ObserveImagePixels(1024 * 1024);
  f.metrics.prometheus().SetPeakMemory(1, 2048);
  f.metrics.prometheus().ObserveKvWait("x", 0.5);
  f.metrics.diffusion().ObserveDiffusionExec(1, 0, 1.25);
  f.metrics.diffusion().ObserveImageTtfp(1, 0, 0.25);
  f.metrics.transfer().ObserveTransferSize({0, 0, 1, 0}, 2048);
  f.metrics.OnRequestAdded("r1");
  f.metrics.OnStageMessage(Message(1, "r1", 0, 0, "diffusion", "image", true));
  const std::string text = f.Text();
  // Eager children render zeros.
  EXPECT_LINE(text, R"(vllm_omni:num_requests_running{model_name="test-model"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:e2e_request_latency_s_count{model_name="test-model"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:prompt_tokens_total{model_name="test-model"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:image_count_total{model_name="test-model"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:image_pixels_count{model_name="test-model"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:request_queue_wait_s_count{model_name="test-model"} 0.0)");
  // Lazy children never appear.
  for (const char* lazy :
       {"requests_success_total{", "requests_failed_total{", "stage_gen_time_s_count{",
        "stage_waiting_requests{", "stage_in_queue_s_count{", "peak_memory_mb{", "kv_wait_s_count{",
        "diffusion_exec_s_count{", "image_ttfp_s_count{", "transfer_size_bytes_count{"}) {
    EXPECT_NO_SUBSTR(text, lazy);
  }
}

TEST(TestEmitCalls, ObserveStageGenTimeByStageType) {
  Fixture f;
  f.metrics.prometheus().ObserveStageGenTime(0, "llm", 0.25);
  f.metrics.prometheus().ObserveStageGenTime(1, "diffusion", 1.5);
  const std::string text = f.Text();
  EXPECT_LINE(
      text,
      R"(vllm_omni:stage_gen_time_s_count{model_name="test-model",stage="0",stage_type="llm"} 1.0)");
  EXPECT_LINE(
      text,
      R"(vllm_omni:stage_gen_time_s_count{model_name="test-model",stage="1",stage_type="diffusion"} 1.0)");
}

TEST(TestEmitCalls, ImageCountAndRequestsFailedNoDoubleTotal) {
  Fixture f;
  f.metrics.prometheus().IncImageCount(2);
  f.metrics.prometheus().IncRequestsFailed("stage_error");
  const std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:image_count_total{model_name="test-model"} 2.0)");
  EXPECT_LINE(
      text, R"(vllm_omni:requests_failed_total{model_name="test-model",reason="stage_error"} 1.0)");
  EXPECT_NO_SUBSTR(text, "_total_total");
}

TEST(TestEmitCalls, ExtractQueueWaitS) {
  const Timings zero{{"queue_wait_ms", 0.0}};
  EXPECT_EQ(ExtractQueueWaitS(&zero, nullptr), 0.0);
  const Timings orch{{"queue_wait_ms", 131.0}};
  const Timings sched{{"scheduler_queue_wait_s", 135.0}};
  EXPECT_DOUBLE_EQ(*ExtractQueueWaitS(&orch, &sched), 135.131);
  EXPECT_EQ(ExtractQueueWaitS(nullptr, &sched), 135.0);
  const Timings pre{{"preprocess_ms", 2.0}};
  EXPECT_EQ(ExtractQueueWaitS(&pre, nullptr), std::nullopt);
  EXPECT_EQ(ExtractQueueWaitS(nullptr, nullptr), std::nullopt);
  const Timings sched_zero{{"scheduler_queue_wait_s", 0.0}};
  EXPECT_EQ(ExtractQueueWaitS(nullptr, &sched_zero), 0.0);
}

TEST(TestEmitCalls, ObserveStageInQueueZeroIsCounted) {
  Fixture f;
  f.metrics.prometheus().ObserveStageInQueue(1, 0.0);
  EXPECT_LINE(f.Text(),
              R"(vllm_omni:stage_in_queue_s_count{model_name="test-model",stage="1"} 1.0)");
}

TEST(TestEmitCalls, WorkloadScope) {
  struct Case {
    const char* stage_type;
    const char* unit;
    bool steps, pixels;
  };
  for (const Case& c :
       {Case{"diffusion", "image", true, true}, Case{"diffusion", "video", true, false},
        Case{"llm", "text", false, false}, Case{"llm", "image", false, true}}) {
    SCOPED_TRACE(std::string(c.stage_type) + "+" + c.unit);
    Fixture f;
    f.metrics.OnRequestAdded("r1");
    StageMessage m = Message(1, "r1", 0, 0, c.stage_type, c.unit, false);
    m.stats.num_inference_steps = 50;
    m.stats.image_pixels = 1024 * 1024;
    m.stats.output_unit_count = 2;
    f.metrics.OnStageMessage(m);
    const std::string text = f.Text();
    auto count = [](bool yes) { return yes ? std::string(" 1.0") : std::string(" 0.0"); };
    EXPECT_LINE(text,
                R"(vllm_omni:num_inference_steps_count{model_name="test-model"})" + count(c.steps));
    EXPECT_LINE(text, R"(vllm_omni:image_pixels_count{model_name="test-model"})" + count(c.pixels));
    EXPECT_LINE(text, std::string(R"(vllm_omni:image_count_total{model_name="test-model"})") +
                          (c.pixels ? " 2.0" : " 0.0"));
    if (c.steps) {
      EXPECT_LINE(text, R"(vllm_omni:num_inference_steps_sum{model_name="test-model"} 50.0)");
    }
    if (c.pixels) {
      EXPECT_LINE(text, R"(vllm_omni:image_pixels_bucket{le="10.0",model_name="test-model"} 0.0)");
      // prometheus_client's default buckets (upstream's): a 1024x1024 image lands in +Inf only.
      EXPECT_LINE(text, R"(vllm_omni:image_pixels_bucket{le="+Inf",model_name="test-model"} 1.0)");
    }
  }
}

TEST(TestEmitCalls, SameFinishedImageMessageProcessedTwiceCountsOnce) {
  Fixture f;
  f.metrics.OnRequestAdded("r1");
  StageMessage m = Message(7, "r1", 1, 0, "diffusion", "image", false);
  m.stats.num_inference_steps = 20;
  m.stats.image_pixels = 512 * 512;
  m.stats.output_unit_count = 1;
  m.stats.image_time_to_first_output_ms = 250;
  m.stats.pipeline_timings = {{"queue_wait_ms", 131.0}};
  m.engine_metrics = {{"scheduler_queue_wait_ms", 100.0}};
  m.peak_memory_mb = 2048.0;
  auto first = f.metrics.OnStageMessage(m);
  auto second = f.metrics.OnStageMessage(m);
  EXPECT_TRUE(first.consumed);
  EXPECT_FALSE(second.consumed);
  ASSERT_TRUE(first.queue_wait_ms.has_value());
  EXPECT_DOUBLE_EQ(*first.queue_wait_ms, 231.0);
  EXPECT_EQ(f.metrics.aggregator().stage_events("r1").size(), 1u);  // on_stage_metrics once
  const std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:image_count_total{model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:image_pixels_count{model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_inference_steps_count{model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_inference_steps_sum{model_name="test-model"} 20.0)");
  EXPECT_LINE(text, R"(vllm_omni:stage_in_queue_s_count{model_name="test-model",stage="1"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:stage_in_queue_s_sum{model_name="test-model",stage="1"} 0.1)");
  EXPECT_LINE(text, R"(vllm_omni:peak_memory_mb{model_name="test-model",stage="1"} 2048.0)");
  EXPECT_LINE(text,
              R"(vllm_omni:image_ttfp_s_count{model_name="test-model",replica="0",stage="1"} 1.0)");
  EXPECT_LINE(text,
              R"(vllm_omni:image_ttfp_s_sum{model_name="test-model",replica="0",stage="1"} 0.25)");

  // Peak memory 0.0 is never set.
  Fixture g;
  g.metrics.OnRequestAdded("r1");
  m.peak_memory_mb = 0.0;
  g.metrics.OnStageMessage(m);
  EXPECT_NO_SUBSTR(g.Text(), "peak_memory_mb{");
}

TEST(TestEmitCalls, FinalDiffusionStageQueueWaitIncludesSchedulerWait) {
  Fixture f;
  f.metrics.OnRequestAdded("r1");
  StageMessage m = Message(1, "r1", 1, 0, "diffusion", "image", true);
  m.stats.pipeline_timings = {{"queue_wait_ms", 131.0}};
  m.engine_metrics = {{"scheduler_queue_wait_ms", 135000.0}};
  auto result = f.metrics.OnStageMessage(m);
  ASSERT_TRUE(result.queue_wait_ms.has_value());
  EXPECT_DOUBLE_EQ(*result.queue_wait_ms, 135131.0);
  const std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:request_queue_wait_s_count{model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:request_queue_wait_s_sum{model_name="test-model"} 135.131)");
}

TEST(TestEmitCalls, StageWaitingSumsLatestReplicaSnapshots) {
  Fixture f;
  f.metrics.OnWaitingSnapshot(1, 0, 3);
  f.metrics.OnWaitingSnapshot(1, 1, 5);
  EXPECT_LINE(f.Text(),
              R"(vllm_omni:stage_waiting_requests{model_name="test-model",stage="1"} 8.0)");
}

TEST(TestEmitCalls, StageWaitingZeroReplacesPreviousValue) {
  Fixture f;
  f.metrics.OnWaitingSnapshot(1, 0, 3);
  f.metrics.OnWaitingSnapshot(2, 0, 7);
  f.metrics.OnWaitingSnapshot(1, 0, 0);
  const std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:stage_waiting_requests{model_name="test-model",stage="1"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:stage_waiting_requests{model_name="test-model",stage="2"} 7.0)");
  EXPECT_EQ(f.metrics.waiting_snapshot(2, 0), 7);
}

TEST(TestEmitCalls, StageWaitingDeadReplicaRemoved) {
  Fixture f;
  f.metrics.OnWaitingSnapshot(1, 0, 3);
  f.metrics.OnWaitingSnapshot(1, 1, 5);
  f.metrics.OnReplicaDead(1, 1);
  EXPECT_LINE(f.Text(),
              R"(vllm_omni:stage_waiting_requests{model_name="test-model",stage="1"} 3.0)");
  EXPECT_EQ(f.metrics.waiting_snapshot(1, 1), std::nullopt);
}

TEST(TestEmitCalls, ZeroGuardsKeepEagerCountsAtZero) {
  Fixture f;
  f.metrics.prometheus().ObserveImagePixels(0);
  f.metrics.prometheus().ObserveNumInferenceSteps(0);
  std::string text = f.Text();
  EXPECT_LINE(text, R"(vllm_omni:image_pixels_count{model_name="test-model"} 0.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_inference_steps_count{model_name="test-model"} 0.0)");
  f.metrics.prometheus().ObserveImagePixels(512);
  EXPECT_LINE(f.Text(), R"(vllm_omni:image_pixels_count{model_name="test-model"} 1.0)");
}

TEST(TestEmitCalls, KvWaitNoStartTimestampNoOutput) {
  Fixture f;
  EXPECT_EQ(f.metrics.OnKvWaitExtracted("req-1", std::nullopt, 10.0), std::nullopt);
  EXPECT_NO_SUBSTR(f.Text(), "kv_wait_s_count{");
}

TEST(TestEmitCalls, KvWaitEmittedOnExtractionWithUnknownConnector) {
  Fixture f;
  const double now = 500.0;
  f.metrics.OnKvWaitStart("req-1", now - 0.25);
  auto wait = f.metrics.OnKvWaitExtracted("req-1", ConnectorTypeOrUnknown(std::nullopt), now);
  ASSERT_TRUE(wait.has_value());
  EXPECT_GT(*wait, 0.0);
  EXPECT_LT(*wait, 1.0);
  EXPECT_FALSE(f.metrics.kv_wait_timers().contains("req-1"));  // popped
  EXPECT_LINE(f.Text(),
              R"(vllm_omni:kv_wait_s_count{connector_type="unknown",model_name="test-model"} 1.0)");
}

TEST(TestEmitCalls, KvWaitConnectorTypeFromConfig) {
  Fixture f;
  f.metrics.OnKvWaitStart("req-1", 1.0);
  f.metrics.OnKvWaitExtracted("req-1", ConnectorTypeOrUnknown("SharedMemoryConnector"), 1.5);
  EXPECT_LINE(
      f.Text(),
      R"(vllm_omni:kv_wait_s_sum{connector_type="SharedMemoryConnector",model_name="test-model"} 0.5)");
}

TEST(TestEmitCalls, KvWaitFinishRequestsDropsOnlyThoseStarts) {
  Fixture f;
  f.metrics.OnKvWaitStart("req-1", 1.0);
  f.metrics.OnKvWaitStart("req-2", 1.0);
  const std::vector<std::string> aborted = {"req-1"};
  f.metrics.OnKvWaitDiscard(aborted);
  EXPECT_FALSE(f.metrics.kv_wait_timers().contains("req-1"));
  EXPECT_TRUE(f.metrics.kv_wait_timers().contains("req-2"));
  // Discarded timers never emit a partial wait.
  EXPECT_EQ(f.metrics.OnKvWaitExtracted("req-1", std::nullopt, 2.0), std::nullopt);

  KvWaitTimers timers;
  const std::vector<std::string> unknown = {"nope"};
  timers.Discard(unknown);
  EXPECT_EQ(timers.size(), 0u);
}

// ---- tests/metrics/test_transfer.py ----

TEST(TestTransfer, FamiliesPresentLegacyNamesAbsent) {
  Fixture f;
  const TransferEdge e{0, 0, 1, 0};
  f.metrics.transfer().ObserveTransferSize(e, 1);
  f.metrics.transfer().ObserveTransferTxTime(e, 0.001);
  f.metrics.transfer().ObserveTransferRxTime(e, 0.001);
  f.metrics.transfer().ObserveTransferInFlightTime(e, 0.001);
  const std::string text = f.Text();
  for (const char* name : {"vllm_omni:transfer_size_bytes", "vllm_omni:transfer_tx_s",
                           "vllm_omni:transfer_rx_s", "vllm_omni:transfer_in_flight_s"}) {
    EXPECT_TRUE(Contains(text, std::string("# TYPE ") + name + " histogram")) << name;
  }
  EXPECT_NO_SUBSTR(text, "omni_transfer_tx_time_ms");
  EXPECT_NO_SUBSTR(text, "omni_transfer_rx_decode_time_ms");
  EXPECT_NO_SUBSTR(text, "omni_transfer_in_flight_time_ms");
}

TEST(TestTransfer, ObservedValuesPerEdge) {
  Fixture f;
  f.metrics.transfer().ObserveTransferSize({2, 0, 3, 1}, 65536);
  f.metrics.transfer().ObserveTransferTxTime({2, 1, 3, 0}, 0.0125);
  f.metrics.transfer().ObserveTransferRxTime({3, 0, 4, 0}, 0.0042);
  f.metrics.transfer().ObserveTransferInFlightTime({3, 0, 4, 0}, 0.0017);
  f.metrics.transfer().ObserveTransferSize({5, 0, 6, 0}, 100);
  f.metrics.transfer().ObserveTransferSize({5, 0, 6, 1}, 200);
  f.metrics.transfer().ObserveTransferSize({5, 1, 6, 0}, 300);
  f.metrics.transfer().ObserveTransferSize({7, 0, 8, 0}, 10);
  f.metrics.transfer().ObserveTransferTxTime({7, 0, 8, 0}, 0.0001);
  const std::string text = f.Text();
  const std::string m = R"(model_name="test-model")";
  EXPECT_LINE(text, R"(vllm_omni:transfer_size_bytes_sum{from_replica="0",from_stage="2",)" + m +
                        R"(,to_replica="1",to_stage="3"} 65536.0)");
  EXPECT_LINE(text, R"(vllm_omni:transfer_tx_s_sum{from_replica="1",from_stage="2",)" + m +
                        R"(,to_replica="0",to_stage="3"} 0.0125)");
  EXPECT_LINE(text, R"(vllm_omni:transfer_rx_s_sum{from_replica="0",from_stage="3",)" + m +
                        R"(,to_replica="0",to_stage="4"} 0.0042)");
  EXPECT_LINE(text, R"(vllm_omni:transfer_in_flight_s_sum{from_replica="0",from_stage="3",)" + m +
                        R"(,to_replica="0",to_stage="4"} 0.0017)");
  EXPECT_LINE(text, R"(vllm_omni:transfer_size_bytes_sum{from_replica="0",from_stage="5",)" + m +
                        R"(,to_replica="0",to_stage="6"} 100.0)");
  EXPECT_LINE(text, R"(vllm_omni:transfer_size_bytes_sum{from_replica="0",from_stage="5",)" + m +
                        R"(,to_replica="1",to_stage="6"} 200.0)");
  EXPECT_LINE(text, R"(vllm_omni:transfer_size_bytes_sum{from_replica="1",from_stage="5",)" + m +
                        R"(,to_replica="0",to_stage="6"} 300.0)");
  EXPECT_TRUE(Contains(
      text,
      R"(vllm_omni:transfer_size_bytes_bucket{from_replica="0",from_stage="7",le="1024.0",model_name=)"));
  EXPECT_TRUE(Contains(
      text, R"(vllm_omni:transfer_tx_s_bucket{from_replica="0",from_stage="7",le="0.001",)"));
}

// Records the emitter calls, as the upstream tests' mock emitter does.
struct RecordingEmitter : TransferEmitter {
  std::vector<std::string> calls;
  void Add(const char* what, const TransferEdge& e, double v) {
    std::ostringstream s;
    s << what << "(" << e.from_stage << "," << e.to_stage << "," << e.from_replica << ","
      << e.to_replica << "," << v << ")";
    calls.push_back(s.str());
  }
  void ObserveTransferSize(const TransferEdge& e, double v) override { Add("size", e, v); }
  void ObserveTransferTxTime(const TransferEdge& e, double v) override { Add("tx", e, v); }
  void ObserveTransferRxTime(const TransferEdge& e, double v) override { Add("rx", e, v); }
  void ObserveTransferInFlightTime(const TransferEdge& e, double v) override {
    Add("in_flight", e, v);
  }
};

std::optional<int> Resolver01(int stage, std::string_view) {
  if (stage == 0) return 1;
  if (stage == 1) return 0;
  return std::nullopt;
}

OrchestratorAggregator MakeAggregator(TransferEmitter* emitter, ReplicaResolver resolver) {
  return OrchestratorAggregator(OrchestratorAggregator::Options{.num_stages = 2,
                                                                .log_stats = true,
                                                                .wall_start_ts = 0,
                                                                .clock = [] { return 1.0; },
                                                                .emitter = emitter,
                                                                .replica_resolver = resolver,
                                                                .sink = nullptr});
}

TEST(TestTransfer, AggregatorTxEmitsSizeAndTxTime) {
  RecordingEmitter emitter;
  auto agg = MakeAggregator(&emitter, Resolver01);
  agg.RecordTransferTx(0, 1, "r1", 2048, 7.5, false);
  EXPECT_EQ(emitter.calls, (std::vector<std::string>{"size(0,1,1,0,2048)", "tx(0,1,1,0,0.0075)"}));
}

TEST(TestTransfer, AggregatorWithoutEmitterStillAccumulates) {
  auto agg = MakeAggregator(nullptr, Resolver01);
  agg.RecordTransferTx(0, 1, "r1", 128, 1.0, false);
  auto evt = agg.transfer(0, 1, "r1");
  ASSERT_TRUE(evt.has_value());
  EXPECT_EQ(evt->size_bytes, 128);
  EXPECT_EQ(evt->tx_time_ms, 1.0);
}

TEST(TestTransfer, AggregatorResolverNoneForEitherSideNoCalls) {
  for (ReplicaResolver resolver :
       {ReplicaResolver([](int s, std::string_view) -> std::optional<int> {
          return s == 0 ? std::optional<int>() : 0;
        }),
        ReplicaResolver([](int s, std::string_view) -> std::optional<int> {
          return s == 1 ? std::optional<int>() : 0;
        })}) {
    RecordingEmitter emitter;
    auto agg = MakeAggregator(&emitter, resolver);
    agg.RecordTransferTx(0, 1, "r1", 2048, 7.5, false);
    EXPECT_TRUE(emitter.calls.empty());
    EXPECT_EQ(agg.transfer(0, 1, "r1")->size_bytes, 2048);  // accumulation unaffected
  }
}

TEST(TestTransfer, AggregatorRxEmitsRxAndInFlight) {
  RecordingEmitter emitter;
  auto agg = MakeAggregator(&emitter, Resolver01);
  StageRequestStats stats;
  stats.request_id = "r1";
  stats.stage_id = 1;
  stats.rx_decode_time_ms = 4.2;
  stats.rx_in_flight_time_ms = 1.7;
  agg.RecordTransferRx(stats);
  EXPECT_EQ(emitter.calls,
            (std::vector<std::string>{"rx(0,1,1,0,0.0042)", "in_flight(0,1,1,0,0.0017)"}));
  // Stage 0 has no inbound edge.
  emitter.calls.clear();
  stats.stage_id = 0;
  agg.RecordTransferRx(stats);
  EXPECT_TRUE(emitter.calls.empty());
}

TEST(TestTransfer, AggregatorRxWithoutEmitterAccumulates) {
  auto agg = MakeAggregator(nullptr, Resolver01);
  StageRequestStats stats;
  stats.request_id = "r1";
  stats.stage_id = 1;
  stats.rx_decode_time_ms = 1.0;
  stats.rx_in_flight_time_ms = 0.5;
  agg.RecordTransferRx(stats);
  auto evt = agg.transfer(0, 1, "r1");
  ASSERT_TRUE(evt.has_value());
  EXPECT_EQ(evt->rx_decode_time_ms, 1.0);
  EXPECT_EQ(evt->in_flight_time_ms, 0.5);
}

// Through OmniMetrics: the forward's size is observed, an unknown size (0) is not (deliberate
// difference), and the RX side observes the size the TX side did not know.
TEST(TestTransfer, ForwardThroughOmniMetricsUnknownSizeNotObservedAsZero) {
  Fixture f(true, {1, 2}, Resolver01);
  f.metrics.OnRequestAdded("r1");
  f.metrics.OnForward(0, 1, "r1", 0, 2.0, false);
  std::string text = f.Text();
  EXPECT_NO_SUBSTR(text, "transfer_size_bytes_count{");
  EXPECT_TRUE(Contains(text, R"(vllm_omni:transfer_tx_s_count{from_replica="1",from_stage="0")"));
  StageMessage m = Message(1, "r1", 1, 0, "llm", "text", false);
  m.stats.rx_transfer_bytes = 4096;
  m.stats.rx_decode_time_ms = 1.0;
  f.metrics.OnStageMessage(m);
  text = f.Text();
  EXPECT_LINE(
      text,
      R"(vllm_omni:transfer_size_bytes_sum{from_replica="1",from_stage="0",model_name="test-model",to_replica="0",to_stage="1"} 4096.0)");
  EXPECT_LINE(
      text,
      R"(vllm_omni:transfer_rx_s_sum{from_replica="1",from_stage="0",model_name="test-model",to_replica="0",to_stage="1"} 0.001)");
}

// ---- tests/metrics/test_metrics_utils.py (failure reasons, finished_reason) ----

TEST(TestMetricsUtilsReasons, FinishedReasonDefaultsToStop) {
  EXPECT_EQ(FinishedReasonOrDefault(std::nullopt), "stop");
  EXPECT_EQ(FinishedReasonOrDefault(""), "stop");
  EXPECT_EQ(FinishedReasonOrDefault("length"), "length");
  Fixture f;
  f.metrics.OnRequestAdded("a");
  f.metrics.OnStageMessage(Message(1, "a", 0, 0, "llm", "text", true));
  f.metrics.OnRequestAdded("b");
  StageMessage m = Message(2, "b", 0, 0, "llm", "text", true);
  m.stats.finish_reason = "length";
  f.now += 2.0;
  f.metrics.OnStageMessage(m);
  const std::string text = f.Text();
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="stop",model_name="test-model"} 1.0)");
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="length",model_name="test-model"} 1.0)");
  EXPECT_LINE(text, R"(vllm_omni:e2e_request_latency_s_sum{model_name="test-model"} 2.0)");
}

TEST(TestMetricsUtilsReasons, NormalizeFailureReasonBoundedSet) {
  EXPECT_EQ(NormalizeFailureReason("client_abort"), "client_abort");
  EXPECT_EQ(NormalizeFailureReason("CLIENT_ABORT"), "unknown");
  EXPECT_EQ(NormalizeFailureReason("stage_error "), "unknown");
}

// ---- Diffusion breakdown at finalize (§4.17) ----

TEST(OmniMetricsDiffusion, FinalizeObservesBreakdownZeroVersusMissing) {
  Fixture f;
  f.metrics.OnRequestAdded("r1");
  StageMessage m = Message(1, "r1", 1, 1, "diffusion", "image", true);
  m.stats.num_inference_steps = 50;
  m.engine_metrics = {{"preprocess_time_ms", 50.0},
                      {"diffusion_engine_exec_time_ms", 1200.0},
                      {"postprocess_time_ms", 0.0},
                      {"forward_time_ms", 1000.0}};
  f.metrics.OnStageMessage(m);
  const std::string text = f.Text();
  const std::string l = R"({model_name="test-model",replica="1",stage="1"})";
  EXPECT_LINE(text, "vllm_omni:diffusion_exec_s_sum" + l + " 1.2");
  EXPECT_LINE(text, "vllm_omni:diffusion_exec_per_step_s_sum" + l + " 0.024");
  EXPECT_LINE(text, "vllm_omni:diffusion_preprocess_s_sum" + l + " 0.05");
  EXPECT_LINE(text, "vllm_omni:diffusion_postprocess_s_count" + l + " 1.0");  // zero observed
  EXPECT_LINE(text, "vllm_omni:diffusion_forward_s_sum" + l + " 1.0");
  EXPECT_LINE(text, "vllm_omni:denoise_step_latency_s_sum" + l + " 0.02");
  // Missing sources emit nothing.
  EXPECT_NO_SUBSTR(text, "vae_decode_s_count{");
  EXPECT_NO_SUBSTR(text, "diffusion_kv_load_s_count{");
}

// test_modality.py, diffusion part: direct observations sum per (stage, replica); a log_stats=False
// instance creates no series.
TEST(TestModalityTestDiffusion, DiffusionSumsAndGatedOffNoSeries) {
  Fixture f;
  f.metrics.diffusion().ObserveDiffusionExec(1, 0, 1.25);
  f.metrics.diffusion().ObserveDiffusionPreprocess(1, 0, 0.03);
  f.metrics.diffusion().ObserveDiffusionPostprocess(1, 0, 0.8);
  f.metrics.diffusion().ObserveDiffusionExecPerStep(1, 0, 0.078);
  const std::string text = f.Text();
  const std::string l = R"({model_name="test-model",replica="0",stage="1"})";
  EXPECT_LINE(text, "vllm_omni:diffusion_exec_s_sum" + l + " 1.25");
  EXPECT_LINE(text, "vllm_omni:diffusion_preprocess_s_sum" + l + " 0.03");
  EXPECT_LINE(text, "vllm_omni:diffusion_postprocess_s_sum" + l + " 0.8");
  EXPECT_LINE(text, "vllm_omni:diffusion_exec_per_step_s_sum" + l + " 0.078");
  Fixture off(false);
  off.metrics.diffusion().ObserveDiffusionExec(1, 0, 1.25);
  off.metrics.diffusion().ObserveDiffusionExecPerStep(1, 0, 0.078);
  EXPECT_NO_SUBSTR(off.Text(), "diffusion_exec_s_count{");
  EXPECT_NO_SUBSTR(off.Text(), "diffusion_exec_per_step_s_count{");
}

// test_modality.py finalize: no steps -> no per-step; no diffusion dict -> nothing.
TEST(TestModalityTestDiffusion, FinalizeWithoutStepsOrDiffusionDict) {
  Fixture f;
  StageRequestStats no_steps;
  no_steps.stage_id = 1;
  no_steps.replica_id = 0;
  no_steps.diffusion_metrics =
      Timings{{"diffusion_engine_exec_time_s", 1.2}, {"preprocess_time_s", 0.05}};
  f.metrics.diffusion().ObserveFinalize(no_steps);
  StageRequestStats none;
  none.stage_id = 1;
  none.replica_id = 1;
  f.metrics.diffusion().ObserveFinalize(none);
  const std::string text = f.Text();
  EXPECT_LINE(
      text,
      R"(vllm_omni:diffusion_exec_s_count{model_name="test-model",replica="0",stage="1"} 1.0)");
  EXPECT_NO_SUBSTR(text, "diffusion_exec_per_step_s_count{");
  EXPECT_NO_SUBSTR(text, R"(replica="1",stage="1"})");
}

// ---- Concurrency smoke: events from several threads (run under TSan by scripts/test.sh) ----

TEST(OmniMetricsThreads, ConcurrentRequestsAreCountedOnce) {
  Fixture f(true, {1, 1});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&f, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string rid = std::to_string(t) + "-" + std::to_string(i);
        f.metrics.OnRequestAdded(rid);
        f.metrics.OnRequestDispatched(rid);
        f.metrics.OnStageMessage(Message(1, rid, 0, 0, "llm", "text", false));
        f.metrics.OnStageMessage(Message(2, rid, 1, 0, "llm", "text", true));
        f.metrics.OnStageMessage(Message(2, rid, 1, 0, "llm", "text", true));  // replay
        f.metrics.OnRequestCleanup(rid);
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::string text = f.Text();
  EXPECT_LINE(
      text,
      R"(vllm_omni:requests_success_total{finished_reason="stop",model_name="test-model"} 800.0)");
  EXPECT_LINE(text, R"(vllm_omni:num_requests_running{model_name="test-model"} 0.0)");
  EXPECT_EQ(f.metrics.num_request_states(), 0u);
}

}  // namespace
}  // namespace modelmetrics::pipeline
