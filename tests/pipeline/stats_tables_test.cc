// The log path (§5): OrchestratorAggregator records and BuildAndLogSummary() tables, against the
// upstream acceptance cases of tests/metrics/test_stats.py and the table-formatting parts of
// test_metrics_utils.py (shared/spec/reference/pipeline-metrics-behaviour.md §7), plus gating.
#include "pipeline/stats_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "modelmetrics/metrics.h"
#include "pipeline/omni_metrics.h"

namespace modelmetrics::pipeline {
namespace {

struct Agg {
  explicit Agg(bool log_stats = true, int stages = 2)
      : agg(OrchestratorAggregator::Options{.num_stages = stages,
                                            .log_stats = log_stats,
                                            .wall_start_ts = 0.0,
                                            .clock = [this] { return now; },
                                            .emitter = nullptr,
                                            .replica_resolver = {},
                                            .sink = &sink}) {}
  double now = 0.0;
  std::ostringstream sink;
  OrchestratorAggregator agg;
};

StageRequestStats Stage(std::string rid, int stage, int64_t in, int64_t out, double gen_ms) {
  StageRequestStats s;
  s.request_id = std::move(rid);
  s.stage_id = stage;
  s.replica_id = 0;
  s.num_tokens_in = in;
  s.num_tokens_out = out;
  s.stage_gen_time_ms = gen_ms;
  return s;
}

// A two-stage request with a 1 KiB forward (test_stats.py, first case).
void TwoStageRequest(Agg& a) {
  a.now = 1.0;
  a.agg.OnStageSubmit(0);
  a.now = 1.5;
  a.agg.OnStageMetrics(Stage("r1", 0, 3, 3, 500.0));
  a.agg.OnForward(0, 1, "r1", 1024, 5.0, false);
  a.now = 2.5;
  StageRequestStats s1 = Stage("r1", 1, 0, 4, 1000.0);
  s1.rx_decode_time_ms = 2.0;
  s1.rx_in_flight_time_ms = 1.0;
  a.agg.OnStageMetrics(s1);
  a.now = 3.0;
  a.agg.OnFinalizeRequest(1, "r1", 0.5);
}

TEST(TestStats, TwoStageRequestWithForward) {
  Agg a;
  TwoStageRequest(a);
  const auto e2e = a.agg.e2e_events();
  ASSERT_EQ(e2e.size(), 1u);
  EXPECT_EQ(e2e[0].e2e_total_tokens, 10);  // 3 in + 3 out + 4 out
  const std::string text = a.agg.BuildAndLogSummary();
  const std::string expected = R"([Overall Summary]
+-----------------------------+-----------+
| Field                       |     Value |
+-----------------------------+-----------+
| e2e_requests                |         1 |
| e2e_wall_time_ms            | 3,000.000 |
| e2e_total_tokens            |        10 |
| e2e_avg_time_per_request_ms | 3,000.000 |
| e2e_avg_tokens_per_s        |     3.333 |
| e2e_stage_0_wall_time_ms    |   500.000 |
| e2e_stage_1_wall_time_ms    | 1,500.000 |
+-----------------------------+-----------+
[RequestE2EStats [request_id=r1]]
+-------------------------+-----------+
| Field                   |     Value |
+-------------------------+-----------+
| e2e_total_ms            | 2,500.000 |
| e2e_total_tokens        |        10 |
| transfers_total_kbytes  |     1.000 |
| transfers_total_time_ms |     8.000 |
+-------------------------+-----------+
[OmniTiming] req=r1 total=2.50s engine=2.50s stages=[0:0.50s,1:1.00s] transfers=[0->1=5.00ms]
[StageRequestStats [request_id=r1]]
+-------------------+---------+-----------+
| Field             |       0 |         1 |
+-------------------+---------+-----------+
| num_tokens_in     |       3 |         0 |
| num_tokens_out    |       3 |         4 |
| stage_gen_time_ms | 500.000 | 1,000.000 |
+-------------------+---------+-----------+
[TransferEdgeStats [request_id=r1]]
+-------------------+-------+
| Field             |  0->1 |
+-------------------+-------+
| in_flight_time_ms | 1.000 |
| rx_decode_time_ms | 2.000 |
| size_kbytes       | 1.000 |
| tx_time_ms        | 5.000 |
+-------------------+-------+
)";
  EXPECT_EQ(text, expected);
  EXPECT_EQ(a.sink.str(), expected);
}

TEST(TestStats, E2EOnlyRequestHasNoStageRows) {
  Agg a;
  a.now = 2.0;
  a.agg.OnFinalizeRequest(0, "r9", 1.0);
  EXPECT_TRUE(a.agg.stage_events("r9").empty());
  const std::string text = a.agg.BuildAndLogSummary();
  EXPECT_NE(text.find("[RequestE2EStats [request_id=r9]]"), std::string::npos);
  EXPECT_NE(text.find("| e2e_total_ms | 1,000.000 |"), std::string::npos) << text;
  EXPECT_EQ(text.find("StageRequestStats"), std::string::npos);
  EXPECT_EQ(text.find("TransferEdgeStats"), std::string::npos);
}

TEST(TestStats, TwoRequestsStageEntries) {
  Agg a;
  a.now = 1.0;
  a.agg.OnStageMetrics(Stage("r1", 0, 2, 2, 10.0));
  a.agg.OnStageMetrics(Stage("r1", 1, 0, 2, 10.0));
  a.agg.OnStageMetrics(Stage("r2", 0, 1, 1, 10.0));
  a.now = 2.0;
  a.agg.OnFinalizeRequest(1, "r1", 0.0);
  a.agg.OnFinalizeRequest(0, "r2", 0.0);
  EXPECT_EQ(a.agg.stage_events("r1").size(), 2u);
  EXPECT_EQ(a.agg.stage_events("r2").size(), 1u);
  const auto e2e = a.agg.e2e_events();
  ASSERT_EQ(e2e.size(), 2u);
  EXPECT_EQ(e2e[0].request_id, "r1");
  EXPECT_EQ(e2e[1].request_id, "r2");
  const std::string text = a.agg.BuildAndLogSummary();
  EXPECT_NE(text.find("| Field             |      0 |      1 |"), std::string::npos) << text;
  EXPECT_NE(text.find("| Field             |      0 |\n"), std::string::npos) << text;
  // Requests in sorted order.
  EXPECT_LT(text.find("[StageRequestStats [request_id=r1]]"),
            text.find("[StageRequestStats [request_id=r2]]"));
}

TEST(TestStats, OmniTimingHasTotalAndEngineAndStageTableTitle) {
  Agg a;
  TwoStageRequest(a);
  const std::string text = a.agg.BuildAndLogSummary();
  const size_t pos = text.find("[OmniTiming] ");
  ASSERT_NE(pos, std::string::npos);
  const std::string line = text.substr(pos, text.find('\n', pos) - pos);
  EXPECT_NE(line.find("total="), std::string::npos);
  EXPECT_NE(line.find("engine="), std::string::npos);
  EXPECT_NE(text.find("[StageRequestStats [request_id=r1]]"), std::string::npos);
}

TEST(TestStats, OmniTimingPreprocessAndAr2Diffusion) {
  Agg a;
  StageRequestStats s = Stage("r1", 0, 1, 1, 1500.0);
  s.pipeline_timings = {{"preprocess_ms", 250.0}, {"ar2diffusion_ms", 12.5}};
  a.now = 1.0;
  a.agg.OnStageMetrics(s);
  a.now = 3.0;
  a.agg.OnFinalizeRequest(0, "r1", 1.0);
  const std::string text = a.agg.BuildAndLogSummary();
  EXPECT_NE(text.find("[OmniTiming] req=r1 total=2.00s preprocess=0.25s engine=1.75s "
                      "stages=[0:1.50s] transfers=[] ar2diffusion=12.50ms\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| input_preprocess_time_ms    |   250.000 |"), std::string::npos) << text;
}

TEST(TestStats, DiffusionMetricsExpandedAndPostprocessDropped) {
  Agg a(true, 1);
  a.agg.AccumulateDiffusionMetrics(
      "diffusion", "r1",
      {{"diffusion_engine_exec_time_ms", 1200.0}, {"num_inference_steps", 20.0}});
  a.agg.AccumulateDiffusionMetrics("diffusion", "r1", {{"diffusion_engine_exec_time_ms", 50.0}});
  a.agg.AccumulateDiffusionMetrics("llm", "r1", {{"diffusion_engine_exec_time_ms", 999.0}});
  StageRequestStats s = Stage("r1", 0, 0, 0, 2000.0);
  s.postprocess_time_ms = 7.0;
  s.output_unit_type = "image";
  const StageRequestStats out = a.agg.OnStageMetrics(s);
  ASSERT_TRUE(out.diffusion_metrics.has_value());
  EXPECT_DOUBLE_EQ(out.diffusion_metrics->at("diffusion_engine_exec_time_s"), 1.25);
  EXPECT_DOUBLE_EQ(out.denoise_step_latency_ms, 100.0);  // no forward: gen 2000 ms / 20 steps
  const std::string text = a.agg.BuildAndLogSummary();
  EXPECT_NE(text.find("| diffusion_engine_exec_time_s |     1.250 |"), std::string::npos) << text;
  EXPECT_NE(text.find("| num_inference_steps          |    20.000 |"), std::string::npos) << text;
  EXPECT_NE(text.find("| output_unit_type             |     image |"), std::string::npos) << text;
  EXPECT_EQ(text.find("postprocess_time_ms"), std::string::npos) << text;
}

// ---- tests/metrics/test_metrics_utils.py: table formatting ----

TEST(TestMetricsUtilsTables, FormatTableDuplicateHeadersAndThousands) {
  Agg a(true, 1);
  a.agg.OnStageMetrics(Stage("r1", 0, 1234567, 0, 0.0));
  a.agg.OnStageMetrics(Stage("r1", 0, 1, 0, 0.0));
  const std::string text = a.agg.BuildAndLogSummary();
  EXPECT_NE(text.find(R"([StageRequestStats [request_id=r1]]
+---------------+-----------+-----+
| Field         |         0 | 0_2 |
+---------------+-----------+-----+
| num_tokens_in | 1,234,567 |   1 |
+---------------+-----------+-----+
)"),
            std::string::npos)
      << text;
}

TEST(TestMetricsUtilsTables, FormatTableRowCounts) {
  EXPECT_EQ(RenderTable("T", {"Field", "Value"}, {}), "[T] <empty>");
  EXPECT_EQ(RenderTable("T", {"Field", "Value"}, {{"x", "1"}}),
            "[T]\n+-------+-------+\n| Field | Value |\n+-------+-------+\n| x     |     1 "
            "|\n+-------+-------+");
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < 25; ++i) rows.push_back({"f" + std::to_string(i), FormatThousands(i * 1000)});
  const std::string t = RenderTable("T", {"Field", "Value"}, rows);
  EXPECT_NE(t.find("| f24   | 24,000 |"), std::string::npos) << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 29);
}

TEST(TestMetricsUtilsTables, CellFormatting) {
  EXPECT_EQ(Cell::Bool(true).Format(), "True");
  EXPECT_EQ(Cell::Int(-1234).Format(), "-1,234");
  EXPECT_EQ(Cell::Float(1234.5678).Format(), "1,234.568");
  EXPECT_EQ(Cell::Float(0.5).Format(), "0.500");
  EXPECT_EQ(Cell::List({1.0, 2.0}).Format(), "1.500 (n=2)");
  EXPECT_EQ(Cell::List({}).Format(), "");
  EXPECT_EQ(Cell::None().Format(), "None");
  EXPECT_EQ(FormatThousands(999), "999");
  EXPECT_EQ(FormatThousands(1000), "1,000");
}

// ---- Gating: stats off -> nothing retained, empty summary, sink untouched ----

TEST(StatsTablesGating, LogStatsOffTablesEmpty) {
  Agg a(/*log_stats=*/false);
  TwoStageRequest(a);
  EXPECT_EQ(a.agg.BuildAndLogSummary(), "");
  EXPECT_EQ(a.sink.str(), "");
  EXPECT_TRUE(a.agg.e2e_events().empty());
  EXPECT_FALSE(a.agg.transfer(0, 1, "r1").has_value());

  Registry registry(RegistryOptions{.enabled = false});
  std::ostringstream sink;
  OmniMetrics metrics(registry, OmniMetrics::Options{.model_name = "m",
                                                     .replicas_per_stage = {1},
                                                     .clock = {},
                                                     .replica_resolver = {},
                                                     .log_sink = &sink,
                                                     .on_finalize = {}});
  metrics.OnRequestAdded("r1");
  StageMessage m;
  m.final_stage = true;
  m.stats = Stage("r1", 0, 1, 1, 1.0);
  metrics.OnStageMessage(m);
  EXPECT_EQ(metrics.BuildAndLogSummary(), "");
  EXPECT_EQ(sink.str(), "");
}

// The tables and /metrics share one data source: a request through OmniMetrics appears in both.
TEST(StatsTablesGating, OmniMetricsFeedsTheTables) {
  Registry registry;
  std::ostringstream sink;
  double now = 10.0;
  OmniMetrics metrics(
      registry, OmniMetrics::Options{.model_name = "m",
                                     .replicas_per_stage = {1, 1},
                                     .clock = [&now] { return now; },
                                     .replica_resolver = [](int, std::string_view) { return 0; },
                                     .log_sink = &sink,
                                     .on_finalize = {}});
  metrics.OnRequestAdded("r1");
  StageMessage m0;
  m0.message_id = 1;
  m0.stats = Stage("r1", 0, 3, 3, 500.0);
  metrics.OnStageMessage(m0);
  metrics.OnForward(0, 1, "r1", 2048, 1.0, false);
  now = 11.0;
  StageMessage m1;
  m1.message_id = 2;
  m1.final_stage = true;
  m1.stats = Stage("r1", 1, 0, 4, 500.0);
  metrics.OnStageMessage(m1);
  const std::string text = metrics.BuildAndLogSummary();
  EXPECT_EQ(text, sink.str());
  EXPECT_NE(text.find("| e2e_total_tokens        |        10 |"), std::string::npos) << text;
  EXPECT_NE(text.find("| size_kbytes | 2.000 |"), std::string::npos) << text;
  const std::string prom = registry.Render(Format::kText);
  EXPECT_NE(
      prom.find(
          R"(vllm_omni:transfer_size_bytes_sum{from_replica="0",from_stage="0",model_name="m",to_replica="0",to_stage="1"} 2048.0)"),
      std::string::npos)
      << prom;
  EXPECT_NE(prom.find(R"(vllm_omni:generation_tokens_total{model_name="m"} 7.0)"),
            std::string::npos);
}

// test_stats.py: "TPOT merge = (10*3 + 20*5)/8" (§5.4 worked value 16.25).
TEST(TestStats, TpotMergeIsTokenWeighted) {
  StageRequestStats a, b;
  a.vllm_tpot_ms = 10;
  a.num_tokens_out = 4;
  b.vllm_tpot_ms = 20;
  b.num_tokens_out = 6;
  std::vector<StageRequestStats> events = {a, b};
  EXPECT_DOUBLE_EQ(MergeStageMetricEvents(events).vllm_tpot_ms, 16.25);
}

// §5.4: the other merge rules, each in one snapshot pair.
TEST(TestStats, StageSnapshotMergeRules) {
  StageRequestStats a, b;
  a.request_id = "r1";
  a.num_tokens_in = 3;
  a.num_tokens_out = 2;
  a.stage_gen_time_ms = 100;
  a.audio_generated_frames = 240;
  a.output_unit_count = 1;
  a.serving_time_to_first_output_ms = 0;  // not positive: the later value wins
  a.vllm_ttft_ms = 12;
  a.finish_reason = "length";
  a.output_unit_type = "audio";
  a.inter_output_latencies_ms = {10, 20};
  b.num_tokens_in = 1;
  b.num_tokens_out = 5;
  b.stage_gen_time_ms = 50;
  b.audio_generated_frames = 480;
  b.output_unit_count = 2;
  b.serving_time_to_first_output_ms = 30;
  b.vllm_ttft_ms = 99;  // first positive kept
  b.audio_sample_rate = 24000;
  b.inter_output_latencies_ms = {30};
  b.denoise_step_latency_ms = 7;
  std::vector<StageRequestStats> events = {a, b};
  const StageRequestStats m = MergeStageMetricEvents(events);
  EXPECT_EQ(m.request_id, "r1");
  EXPECT_EQ(m.num_tokens_in, 4);
  EXPECT_EQ(m.num_tokens_out, 7);
  EXPECT_EQ(m.stage_gen_time_ms, 150);
  EXPECT_EQ(m.audio_generated_frames, 720);
  EXPECT_EQ(m.output_unit_count, 3);
  EXPECT_EQ(m.serving_time_to_first_output_ms, 30);
  EXPECT_EQ(m.vllm_ttft_ms, 12);
  EXPECT_EQ(m.audio_sample_rate, 24000);
  EXPECT_EQ(m.finish_reason, "length");  // b has none: the last present one stays
  EXPECT_EQ(m.output_unit_type, "audio");
  EXPECT_EQ(m.denoise_step_latency_ms, 7);
  EXPECT_EQ(m.inter_output_latencies_ms, (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(m.inter_output_latency_ms, 20);
  EXPECT_EQ(m.time_per_output_unit_ms, (150.0 - 30.0) / 2);
  EXPECT_EQ(m.vllm_tpot_ms, 0);  // no positive tpot
  EXPECT_EQ(MergeStageMetricEvents({}).request_id, "");
}

}  // namespace
}  // namespace modelmetrics::pipeline
