// Tests for the vLLM-Omni profile (exporters/vllm_omni.cc) through the parser and the merge:
// split rows become per-stage, per-stage-replica, per-edge and per-reason entries; lazy families
// are reported as not yet observed without making the snapshot partial; a group that appears
// between two reads is windowed from zero; the two ratios follow the design's definitions; idle,
// reset and absent cases keep the missing[] discipline.
#include <gtest/gtest.h>

#include <string>

#include "aggregation/exporter_registry.h"
#include "aggregation/exporters/builtin.h"
#include "test_builders.h"

namespace modelmetrics::deployment {
namespace {

using testing::FindGauge;
using testing::M;
using testing::MergeMetricsWindow;
using testing::Parse;

// What an omni Pod serves, in the catalog's shapes, with the counters the tests move.
struct OmniBody {
  double e2e_count = 10, e2e_sum = 20;
  double gen0_count = 10, gen0_sum = 3;  // stage 0 (llm), stage 1 (llm)
  double gen1_count = 10, gen1_sum = 4;
  double ttfp20_count = 4, ttfp20_sum = 2;  // code2wav replica 0
  double underrun20_count = 4;
  double continuity20 = 3;
  double edge_count = 6, edge_sum = 600000;  // edge 0.1 -> 1.0 transfer size
  double failed_stage_error = 1;
  double failed_client_abort = -1;  // < 0: the series is not exported yet
  double aborted_cancelled = 1;
  double completed = 3;  // < 0: not exported yet

  std::string Render() const {
    std::string out;
    auto hist = [&out](std::string_view name, std::string_view labels, double sum, double count) {
      out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count);
      out += fmt::format("{}_count{{{}}} {}\n", name, labels, count);
      out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum);
    };
    const std::string model = "model_name=\"Qwen/Qwen2.5-Omni-7B\"";
    out += "# TYPE vllm_omni:num_requests_running gauge\n";
    out += "vllm_omni:num_requests_running{" + model + "} 3.0\n";
    out += "# TYPE vllm_omni:num_requests_waiting gauge\n";
    out += "vllm_omni:num_requests_waiting{" + model + "} 1.0\n";
    out += "# TYPE vllm_omni:e2e_request_latency_s histogram\n";
    hist("vllm_omni:e2e_request_latency_s", model, e2e_sum, e2e_count);
    out += "# TYPE vllm_omni:stage_gen_time_s histogram\n";
    hist("vllm_omni:stage_gen_time_s", model + ",stage=\"0\",stage_type=\"llm\"", gen0_sum,
         gen0_count);
    hist("vllm_omni:stage_gen_time_s", model + ",stage=\"1\",stage_type=\"llm\"", gen1_sum,
         gen1_count);
    out += "# TYPE vllm_omni:stage_waiting_requests gauge\n";
    out += "vllm_omni:stage_waiting_requests{" + model + ",stage=\"2\"} 2.0\n";
    out += "# TYPE vllm:num_requests_running gauge\n";
    out += "vllm:num_requests_running{" + model + ",replica=\"0\",stage=\"0\"} 2.0\n";
    out += "vllm:num_requests_running{" + model + ",replica=\"1\",stage=\"0\"} 1.0\n";
    out += "# TYPE vllm_omni:audio_ttfp_s histogram\n";
    hist("vllm_omni:audio_ttfp_s", model + ",replica=\"0\",stage=\"2\"", ttfp20_sum, ttfp20_count);
    out += "# TYPE vllm_omni:audio_underrun_s histogram\n";
    hist("vllm_omni:audio_underrun_s", model + ",replica=\"0\",stage=\"2\"", 0.1, underrun20_count);
    out += "# TYPE vllm_omni:audio_continuity_ok counter\n";
    out += fmt::format(
        "vllm_omni:audio_continuity_ok_total{{{},replica=\"0\",stage=\"2\",threshold_ms=\"100\"}} "
        "{}\n",
        model, continuity20);
    out += "# TYPE vllm_omni:transfer_size_bytes histogram\n";
    hist("vllm_omni:transfer_size_bytes",
         model + ",from_replica=\"1\",from_stage=\"0\",to_replica=\"0\",to_stage=\"1\"", edge_sum,
         edge_count);
    out += "# TYPE vllm_omni:requests_failed counter\n";
    out += fmt::format("vllm_omni:requests_failed_total{{{},reason=\"stage_error\"}} {}\n", model,
                       failed_stage_error);
    if (failed_client_abort >= 0) {
      out += fmt::format("vllm_omni:requests_failed_total{{{},reason=\"client_abort\"}} {}\n",
                         model, failed_client_abort);
    }
    out += "# TYPE vllm_omni:speech_stream_aborted counter\n";
    out += fmt::format("vllm_omni:speech_stream_aborted_total{{{},reason=\"cancelled\"}} {}\n",
                       model, aborted_cancelled);
    if (completed >= 0) {
      out += "# TYPE vllm_omni:speech_stream_completed counter\n";
      out += fmt::format("vllm_omni:speech_stream_completed_total{{{}}} {}\n", model, completed);
    }
    return out;
  }
};

ModelDeployment OmniDeployment() {
  ModelDeployment md = testing::MetricsModelDeployment();
  md.engine = "vLLM-Omni";  // compared like the other engine names
  return md;
}

const Window* Find(const std::vector<Window>& windows, std::string_view name,
                   std::string_view scope) {
  for (const Window& w : windows) {
    if (w.name == name && w.scope == scope) return &w;
  }
  return nullptr;
}

TEST(OmniProfile, IsSelectedByTheEngineNameInAnyCase) {
  EXPECT_EQ(SelectExporter(OmniDeployment(), false), &exporters::kVllmOmni);
  EXPECT_EQ(SelectExporter(PodRole::kEngine, "vllm-omni", false), &exporters::kVllmOmni);
  EXPECT_EQ(SelectExporter(PodRole::kEngine, "vllm_omni", false), nullptr);
}

TEST(OmniProfile, SplitsByStageReplicaEdgeAndReasonWithExactWindows) {
  OmniBody first;
  OmniBody second = first;
  second.e2e_count = 20, second.e2e_sum = 45;            // 10 requests, 2.5 s mean
  second.gen0_count = 14, second.gen0_sum = 5;           // 4 in stage 0, 0.5 s
  second.gen1_count = 12, second.gen1_sum = 4.5;         // 2 in stage 1, 0.25 s
  second.ttfp20_count = 8, second.ttfp20_sum = 4;        // 4 at 0.5 s
  second.underrun20_count = 9, second.continuity20 = 7;  // 4 of 5 continuous
  second.edge_count = 10, second.edge_sum = 1000000;     // 4 transfers of 100 kB
  second.failed_stage_error = 3;                         // 2 in 20 s
  second.failed_client_abort = 1;                        // new since the first read: 1
  second.aborted_cancelled = 2, second.completed = 6;    // 1 aborted of 1 + 3 ended

  const ExporterProfile& profile = exporters::kVllmOmni;
  const Pod pod = testing::MetricsEnginePod("voice-0", "u1");
  const Snapshot s = MergeMetricsWindow(OmniDeployment(), pod, Parse(first.Render(), profile),
                                        Parse(second.Render(), profile), std::chrono::seconds(20));

  ASSERT_NE(FindGauge(s.processing, "running", "engine/server"), nullptr);
  EXPECT_EQ(FindGauge(s.processing, "running", "engine/server")->value, 3);
  ASSERT_NE(FindGauge(s.processing, "stage-running", "stage/0.0"), nullptr);
  EXPECT_EQ(FindGauge(s.processing, "stage-running", "stage/0.0")->value, 2);
  EXPECT_EQ(FindGauge(s.processing, "stage-running", "stage/0.1")->value, 1);
  ASSERT_NE(FindGauge(s.queueing, "stage-waiting", "stage/2"), nullptr);
  EXPECT_EQ(FindGauge(s.queueing, "stage-waiting", "stage/2")->value, 2);
  EXPECT_EQ(FindGauge(s.queueing, "stage-waiting", "stage/2")->source,
            "vllm_omni:stage_waiting_requests");

  struct Expected {
    const std::vector<Window>* area;
    std::string_view name, scope;
    double value, samples;
  };
  const Expected expected[] = {
      {&s.latency, "e2e", "engine/server", 2.5, 10},
      {&s.latency, "stage-gen-time", "stage/0", 0.5, 4},
      {&s.latency, "stage-gen-time", "stage/1", 0.25, 2},
      {&s.latency, "audio-ttfp", "stage/2.0", 0.5, 4},
      {&s.transfer, "transfer-size", "edge/0.1->1.0", 100000, 4},
      {&s.traffic, "requests-failed", "reason/stage_error", 0.1, 2},
      {&s.traffic, "requests-failed", "reason/client_abort", 0.05, 1},
      {&s.traffic, "speech-streams-aborted", "reason/cancelled", 0.05, 1},
      {&s.traffic, "speech-streams-completed", "engine/server", 0.15, 3},
      {&s.traffic, "stream-interruption-ratio", "engine/server", 0.25, 4},
      {&s.traffic, "continuity-ok-ratio", "stage/2.0", 0.8, 5},
  };
  for (const Expected& e : expected) {
    const Window* w = Find(*e.area, e.name, e.scope);
    ASSERT_NE(w, nullptr) << e.name << " " << e.scope;
    EXPECT_DOUBLE_EQ(w->value, e.value) << e.name << " " << e.scope;
    EXPECT_EQ(w->samples, e.samples) << e.name << " " << e.scope;
    EXPECT_EQ(w->window_seconds, 20) << e.name << " " << e.scope;
    EXPECT_EQ(w->pod, "voice-0");
  }
  EXPECT_EQ(Find(s.traffic, "stream-interruption-ratio", "engine/server")->source,
            "vllm_omni:speech_stream_aborted+vllm_omni:speech_stream_completed");

  // The families this pipeline never exported are listed, and are not a fault.
  EXPECT_EQ(s.missing, (std::vector<Missing>{
                           M("voice-0", "vllm_omni:audio_rtf", reason::kNotYetObserved),
                           M("voice-0", "vllm_omni:image_ttfp_s", reason::kNotYetObserved),
                           M("voice-0", "vllm_omni:requests_success", reason::kNotYetObserved),
                           M("voice-0", "vllm_omni:transfer_in_flight_s", reason::kNotYetObserved),
                           M("voice-0", "vllm_omni:transfer_rx_s", reason::kNotYetObserved),
                           M("voice-0", "vllm_omni:transfer_tx_s", reason::kNotYetObserved),
                       }));
  EXPECT_FALSE(s.partial);
}

TEST(OmniProfile, AFamilyThatAppearsBetweenTwoReadsIsWindowedFromZero) {
  OmniBody first;
  first.completed = -1;  // no Speech stream has completed yet
  OmniBody second = first;
  second.e2e_count += 4;
  second.completed = 2;
  const ExporterProfile& profile = exporters::kVllmOmni;
  const Pod pod = testing::MetricsEnginePod("voice-0", "u1");
  const Snapshot s = MergeMetricsWindow(OmniDeployment(), pod, Parse(first.Render(), profile),
                                        Parse(second.Render(), profile), std::chrono::seconds(10));
  const Window* completed = Find(s.traffic, "speech-streams-completed", "engine/server");
  ASSERT_NE(completed, nullptr);
  EXPECT_EQ(completed->samples, 2);
  EXPECT_DOUBLE_EQ(completed->value, 0.2);
  EXPECT_EQ(completed->window_seconds, 10);
  const Window* ratio = Find(s.traffic, "stream-interruption-ratio", "engine/server");
  ASSERT_NE(ratio, nullptr);
  EXPECT_EQ(ratio->value, 0);  // no abort in the window, two completions
  EXPECT_EQ(ratio->samples, 2);

  // Without e2e, another window's delta (a stage's) proves the previous read.
  BaselineStore store;
  testing::MergeOnce(OmniDeployment(), &store, testing::T0(), pod,
                     Parse(testing::DropLines(first.Render(), "e2e_request"), profile));
  const Snapshot again =
      testing::MergeOnce(OmniDeployment(), &store, testing::T0() + std::chrono::seconds(10), pod,
                         Parse(testing::DropLines(second.Render(), "e2e_request"), profile));
  ASSERT_NE(Find(again.traffic, "speech-streams-completed", "engine/server"), nullptr);
  EXPECT_EQ(Find(again.traffic, "speech-streams-completed", "engine/server")->samples, 2);

  // Without any proof that the previous read was this process's (no window had a baseline),
  // it awaits.
  BaselineStore fresh;
  testing::MergeOnce(OmniDeployment(), &fresh, testing::T0(), pod, PodMetrics{});
  const Snapshot unproven =
      testing::MergeOnce(OmniDeployment(), &fresh, testing::T0() + std::chrono::seconds(10), pod,
                         Parse(second.Render(), profile));
  EXPECT_NE(std::find(unproven.missing.begin(), unproven.missing.end(),
                      M("voice-0", "vllm_omni:speech_stream_completed", reason::kAwaiting)),
            unproven.missing.end());
}

TEST(OmniProfile, AnIdleWindowIsIdleNotAFault) {
  const OmniBody body;
  const ExporterProfile& profile = exporters::kVllmOmni;
  const Pod pod = testing::MetricsEnginePod("voice-0", "u1");
  const Snapshot s = MergeMetricsWindow(OmniDeployment(), pod, Parse(body.Render(), profile),
                                        Parse(body.Render(), profile));
  for (std::string_view source :
       {"vllm_omni:e2e_request_latency_s", "vllm_omni:stage_gen_time_s (stage/0)",
        "vllm_omni:audio_ttfp_s (stage/2.0)",
        "vllm_omni:speech_stream_aborted+vllm_omni:speech_stream_completed",
        "vllm_omni:audio_continuity_ok+vllm_omni:audio_underrun_s (stage/2.0)"}) {
    EXPECT_NE(std::find(s.missing.begin(), s.missing.end(),
                        M("voice-0", std::string(source), reason::kOmniIdleWindow)),
              s.missing.end())
        << source;
  }
  // An idle pipeline transfers nothing either; a rate of zero is a value, not an absence.
  EXPECT_NE(std::find(s.missing.begin(), s.missing.end(),
                      M("voice-0", "vllm_omni:transfer_size_bytes (edge/0.1->1.0)",
                        reason::kOmniIdleWindow)),
            s.missing.end());
  ASSERT_NE(Find(s.traffic, "requests-failed", "reason/stage_error"), nullptr);
  EXPECT_EQ(Find(s.traffic, "requests-failed", "reason/stage_error")->value, 0);
  EXPECT_FALSE(s.partial);

  // Busy, a transfer edge that moved nothing is a fault, as for any engine.
  OmniBody busy = body;
  busy.e2e_count += 5;
  const Snapshot b = MergeMetricsWindow(OmniDeployment(), pod, Parse(body.Render(), profile),
                                        Parse(busy.Render(), profile));
  EXPECT_NE(std::find(b.missing.begin(), b.missing.end(),
                      M("voice-0", "vllm_omni:transfer_size_bytes (edge/0.1->1.0)",
                        reason::kNoObservations)),
            b.missing.end());
  EXPECT_TRUE(b.partial);
}

TEST(OmniProfile, ResetsAbsencesAndFirstReadsKeepTheDiscipline) {
  const ExporterProfile& profile = exporters::kVllmOmni;
  const Pod pod = testing::MetricsEnginePod("voice-0", "u1");
  OmniBody first;
  OmniBody reset = first;
  reset.e2e_count = 12, reset.e2e_sum = 24;
  reset.gen1_count = 2, reset.gen1_sum = 1;  // stage 1's series went down: a reset, that scope only
  const Snapshot s = MergeMetricsWindow(OmniDeployment(), pod, Parse(first.Render(), profile),
                                        Parse(reset.Render(), profile));
  EXPECT_NE(std::find(s.missing.begin(), s.missing.end(),
                      M("voice-0", "vllm_omni:stage_gen_time_s (stage/1)", reason::kCounterReset)),
            s.missing.end());
  EXPECT_EQ(Find(s.latency, "stage-gen-time", "stage/1"), nullptr);
  EXPECT_NE(Find(s.latency, "e2e", "engine/server"), nullptr);
  EXPECT_TRUE(s.partial);

  // The first read of a Pod awaits a second sample in every scope it has.
  BaselineStore store;
  const Snapshot once = testing::MergeOnce(OmniDeployment(), &store, testing::T0(), pod,
                                           Parse(first.Render(), profile));
  EXPECT_NE(std::find(once.missing.begin(), once.missing.end(),
                      M("voice-0", "vllm_omni:audio_ttfp_s (stage/2.0)", reason::kAwaiting)),
            once.missing.end());
  EXPECT_TRUE(once.partial);

  // An eager family's absence is a fault.
  const std::string no_e2e = testing::DropLines(first.Render(), "e2e_request_latency_s");
  const Snapshot absent =
      MergeMetricsWindow(OmniDeployment(), pod, Parse(no_e2e, profile), Parse(no_e2e, profile));
  EXPECT_NE(std::find(absent.missing.begin(), absent.missing.end(),
                      M("voice-0", "vllm_omni:e2e_request_latency_s", reason::kAbsent)),
            absent.missing.end());
  EXPECT_TRUE(absent.partial);
}

}  // namespace
}  // namespace modelmetrics::deployment
