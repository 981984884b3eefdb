// The exporters as users run them today (../shared/spec/reference/upstream-changes-2026-09.md §3):
// bodies written from each exporter's current collector code, read into the snapshot a careful
// SRE expects. Each body names the upstream file and commit its lines follow.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/exporters/builtin.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using testing::CurrentLlmdRouterBody;
using testing::FindGauge;
using testing::FindWindow;
using testing::GpuStackMissing;
using testing::LlmdTraffic;
using testing::M;
using testing::MergeMetricsWindow;
using testing::MergeReads;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;
using testing::MetricsPDModelDeployment;
using testing::MetricsRouterPod;
using testing::MetricsServerPod;
using testing::Parse;
using testing::SGLangPriorityPDResponse;
using testing::SGLangRank;
using testing::SGLangSchedulersBody;
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

// An SGLang engine of two attention-DP groups of two TP ranks each (tp_size 4, dp_size 2 with
// DP attention): group 0 runs 3 requests and has 2 waiting, group 1 runs 5 with 1 waiting.
std::vector<SGLangRank> TwoGroups(bool every_rank) {
  std::vector<SGLangRank> ranks;
  for (int tp = 0; tp < 4; ++tp) {
    if (!every_rank && tp % 2 != 0) continue;  // only attention-TP rank 0 writes by default
    const int dp = tp / 2;
    ranks.push_back({.tp_rank = tp,
                     .dp_rank = dp,
                     .running = dp == 0 ? 3 : 5,
                     .waiting = dp == 0 ? 2 : 1,
                     .input_tokens = dp == 0 ? 100 : 60,
                     .device_hits = dp == 0 ? 40 : 20});
  }
  return ranks;
}

Pod SglangPod(bool all_schedulers) {
  std::vector<std::string> command = {"python3",   "-m", "sglang.launch_server", "--tp-size", "4",
                                      "--dp-size", "2",  "--enable-dp-attention"};
  if (all_schedulers) command.emplace_back("--enable-metrics-for-all-schedulers");
  return MetricsServerPod("sglang-0", command);
}

PodMetrics ParseFrom(const std::string& body, const Pod& pod) {
  PodMetrics read;
  std::string error;
  EXPECT_OK(ParsePodMetrics(body, &exporters::kSglang, &read, &pod));
  return read;
}

// With the flag every rank writes its group's batch: the snapshot reads one copy per group and
// sums the groups, the numbers SGLang writes without the flag.
TEST(SglangAllSchedulers, EachGroupsBatchIsReadOnce) {
  const PodMetrics every_rank =
      ParseFrom(SGLangSchedulersBody(TwoGroups(true), 9), SglangPod(true));
  const PodMetrics rank_zero =
      ParseFrom(SGLangSchedulersBody(TwoGroups(false), 9), SglangPod(false));
  EXPECT_EQ(every_rank.gauges.at("running"), 8);
  EXPECT_EQ(every_rank.gauges.at("waiting"), 3);
  EXPECT_EQ(every_rank.cache.at("device-prefix").hits, 60);
  EXPECT_EQ(every_rank.cache.at("device-prefix").queries, 220);
  EXPECT_EQ(every_rank.windows.at("ttft").count, 9);  // the tokenizer's, written once
  EXPECT_EQ(every_rank.gauges, rank_zero.gauges);
  EXPECT_EQ(every_rank.windows.at("ttft").sum, rank_zero.windows.at("ttft").sum);
  for (const char* scope : {"device-prefix", "host-prefix", "storage-prefix"}) {
    EXPECT_EQ(every_rank.cache.at(scope).hits, rank_zero.cache.at(scope).hits) << scope;
    EXPECT_EQ(every_rank.cache.at(scope).queries, rank_zero.cache.at(scope).queries) << scope;
  }
}

// The Pod's arguments decide: without the flag every series is its own scheduler's and summed
// (a body from a Pod without it never holds two ranks of one group), so a flag set another way
// (a --config file) is not seen; docs/deployment-metrics.md says so.
TEST(SglangAllSchedulers, ThePodsArgumentsDecide) {
  const PodMetrics read = ParseFrom(SGLangSchedulersBody(TwoGroups(true), 9), SglangPod(false));
  EXPECT_EQ(read.gauges.at("running"), 16);
  const PodMetrics rank_zero =
      ParseFrom(SGLangSchedulersBody(TwoGroups(false), 9), SglangPod(true));
  EXPECT_EQ(rank_zero.gauges.at("running"), 8);  // the mode reads a flag-off body unchanged
}

// With priority scheduling too, each rank's copy holds the priority="" total beside its parts:
// one copy per group, then the total.
TEST(SglangAllSchedulers, WithPrioritiesReadsOneCopyOfEachTotal) {
  std::string body;
  for (int tp = 0; tp < 2; ++tp) {
    for (const auto& [priority, value] : {std::pair{"", 7}, {"0", 3}, {"5", 4}}) {
      body += fmt::format(
          "sglang:num_running_reqs{{model_name=\"m\",moe_ep_rank=\"{0}\",priority=\"{1}\","
          "tp_rank=\"{0}\"}} {2}\n",
          tp, priority, value);
    }
  }
  const PodMetrics read =
      ParseFrom("# TYPE sglang:num_running_reqs gauge\n" + body, SglangPod(true));
  EXPECT_EQ(read.gauges.at("running"), 7);
}

// SGLang's queue gauges know their labels: one SGLang adds later that splits the series (here an
// attention context-parallel rank whose copies repeat the batch) leaves the gauge unread, with a
// reason naming it, rather than a sum that counts each request twice; a constant label (SGLang's
// --extra-metric-labels) splits nothing and is read.
TEST(SglangUnknownLabels, ASplitByAnUnknownLabelIsNamedNotSummed) {
  std::string copies = "# TYPE sglang:num_running_reqs gauge\n";
  for (int cp = 0; cp < 2; ++cp) {
    copies += fmt::format(
        "sglang:num_running_reqs{{attn_cp_rank=\"{}\",model_name=\"m\",priority=\"\","
        "team=\"search\",tp_rank=\"0\"}} 4\n",
        cp);
  }
  const Pod pod = MetricsServerPod("sglang-0");
  const PodMetrics read = ParseFrom(copies, pod);
  EXPECT_FALSE(read.gauges.contains("running"));
  EXPECT_EQ(read.unknown_split.at("running"), "attn_cp_rank");
  ModelDeployment md = MetricsModelDeployment();
  md.engine = "sglang";
  const Snapshot s = MergeMetricsWindow(md, pod, read, read);
  const auto entry = std::find_if(s.missing.begin(), s.missing.end(), [](const Missing& m) {
    return m.source == "sglang:num_running_reqs";
  });
  ASSERT_NE(entry, s.missing.end());
  EXPECT_EQ(entry->reason,
            "metric not read: its series are split by `attn_cp_rank`, a label the exporter's "
            "profile does not know (parts, a total beside them or copies: a sum could count "
            "twice)");
  EXPECT_TRUE(s.partial);

  const PodMetrics constant = ParseFrom(testing::DropLines(copies, "attn_cp_rank=\"1\""), pod);
  EXPECT_EQ(constant.gauges.at("running"), 4);
}

ModelDeployment LlmdDeployment() {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router", .replicas = 1};
  return md;
}

// Two reads of one router, 30 s apart.
Snapshot LlmdWindow(const LlmdTraffic& first, const LlmdTraffic& second) {
  return MergeMetricsWindow(LlmdDeployment(),
                            MetricsRouterPod("chat-router", "router-uid", "llm-d-router"),
                            Parse(CurrentLlmdRouterBody(first), exporters::kLlmdRouter),
                            Parse(CurrentLlmdRouterBody(second), exporters::kLlmdRouter));
}

// The router's first streaming requests come between two reads: the request counter's delta
// proves the previous read, so TTFT and TPOT are windowed from zero then, not awaiting a second
// sample (and partial) for one read.
TEST(LlmdRouterTtft, TheFirstStreamingRequestsAreWindowedFromZero) {
  const Snapshot s = LlmdWindow({.non_streamed = 20}, {.streamed = 10, .non_streamed = 30});
  EXPECT_EQ(s.missing, (std::vector<Missing>{M("chat-router", "llm_d_epp_request_error_total",
                                               reason::kLabeledCounterUnexported)}));
  EXPECT_FALSE(s.partial);
  const Window* ttft = FindWindow(s.latency, "chat-router", "ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->samples, 10);
  EXPECT_NEAR(ttft->value, 0.038, 1e-12);
  EXPECT_EQ(ttft->window_seconds, 30);
  ASSERT_NE(FindWindow(s.latency, "chat-router", "tpot"), nullptr);
  EXPECT_EQ(FindWindow(s.latency, "chat-router", "tpot")->samples, 10);
}

// A mixed workload: TTFT is the streaming requests' first-token latency, 0.038 s, not 0.27 s
// with the non-streaming requests' whole durations mixed in.
TEST(LlmdRouterTtft, ReadsStreamingRequestsOnly) {
  const Snapshot mixed =
      LlmdWindow({.streamed = 10, .non_streamed = 10}, {.streamed = 40, .non_streamed = 40});
  const Window* ttft = FindWindow(mixed.latency, "chat-router", "ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_NEAR(ttft->value, 0.038, 1e-12);
  EXPECT_EQ(ttft->samples, 30);
  EXPECT_NEAR(FindWindow(mixed.latency, "chat-router", "tpot")->value, 0.01, 1e-12);
  EXPECT_EQ(FindWindow(mixed.traffic, "chat-router", "requests")->samples, 60);
  EXPECT_FALSE(mixed.partial);
}

// A router that has served only non-streaming requests exports no streaming TTFT series and no
// TPOT family: both absent, for a reason that says so, and not partial (it was before: TPOT read
// as an absent required source, for ever).
TEST(LlmdRouterTtft, ANonStreamingRouterIsNotPartial) {
  const Snapshot snapshot = LlmdWindow({.non_streamed = 10}, {.non_streamed = 40});
  EXPECT_TRUE(snapshot.latency.empty());
  EXPECT_EQ(FindWindow(snapshot.traffic, "chat-router", "requests")->samples, 30);
  EXPECT_EQ(
      snapshot.missing,
      (std::vector<Missing>{
          M("chat-router", "llm_d_epp_request_error_total", reason::kLabeledCounterUnexported),
          M("chat-router", "llm_d_epp_request_streaming_tpot_seconds",
            reason::kLlmdNoStreamingRequest),
          M("chat-router", "llm_d_epp_request_ttft_seconds", reason::kLlmdNoStreamingRequest)}));
  EXPECT_FALSE(snapshot.partial);
}

// A broken value in a series the row does not read (a non-streaming TTFT) is not the row's: the
// row is absent for its own reason, not "no valid value".
TEST(LlmdRouterTtft, AnInvalidValueTheRowDoesNotReadIsNotItsReason) {
  const std::string body = CurrentLlmdRouterBody({.non_streamed = 4});
  const std::string broken = testing::SetSample(body, "llm_d_epp_request_ttft_seconds_sum", "NaN");
  ASSERT_NE(broken, body);
  const PodMetrics read = Parse(broken, exporters::kLlmdRouter);
  EXPECT_FALSE(read.windows.contains("ttft"));
  EXPECT_FALSE(read.invalid.contains("ttft"));
}

// A router from before the `streaming` label: its TTFT series carry none, and are read.
TEST(LlmdRouterTtft, ARouterWithoutTheLabelIsReadAsBefore) {
  const std::string labelled = CurrentLlmdRouterBody({.streamed = 4});
  std::string unlabelled = labelled;
  for (size_t at; (at = unlabelled.find(",streaming=\"true\"")) != std::string::npos;) {
    unlabelled.erase(at, std::string_view(",streaming=\"true\"").size());
  }
  ASSERT_NE(unlabelled, labelled);
  EXPECT_EQ(Parse(unlabelled, exporters::kLlmdRouter).windows.at("ttft").count, 4);
}

// A process's first error appears between two reads, beside a request counter that moved: it is
// counted from zero over the request counter's window, as the labelled-counter rule says it was
// zero at the first read; not "awaiting a second counter sample", not partial.
TEST(LlmdRouterErrors, AProcesssFirstErrorIsCountedFromZero) {
  const Snapshot first_error = LlmdWindow({.streamed = 10}, {.streamed = 40, .errors = 3});
  const Window* errors = FindWindow(first_error.traffic, "chat-router", "request-errors");
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->samples, 3);
  EXPECT_EQ(errors->value, 0.1);  // 3 errors in the requests' 30 s window
  EXPECT_EQ(errors->window_seconds,
            FindWindow(first_error.traffic, "chat-router", "requests")->window_seconds);
  EXPECT_EQ(first_error.missing, std::vector<Missing>{});
  EXPECT_FALSE(first_error.partial);

  // Before it, the unexported counter is the reference's not-partial case (§4.1 case 23).
  const Snapshot no_error = LlmdWindow({.streamed = 10}, {.streamed = 40});
  EXPECT_EQ(no_error.missing,
            (std::vector<Missing>{M("chat-router", "llm_d_epp_request_error_total",
                                    reason::kLabeledCounterUnexported)}));
  EXPECT_FALSE(no_error.partial);

  // Without a request counter that moved, nothing proves the first read was this process's.
  const Snapshot first_read = MergeMetricsWindow(
      LlmdDeployment(), MetricsRouterPod("chat-router", "router-uid", "llm-d-router"),
      Parse("", exporters::kLlmdRouter),
      Parse(CurrentLlmdRouterBody({.streamed = 40, .errors = 3}), exporters::kLlmdRouter));
  EXPECT_TRUE(first_read.partial);
}

}  // namespace
}  // namespace modelmetrics::deployment

namespace modelmetrics::deployment {
namespace {

using testing::Fixture;
using testing::MetricsServerPod;
using testing::OlderLlmdRouterBody;
using testing::OlderVllmBody;

// vLLM before 0.9.2 reads by its older names: the same numbers as the fixture by today's names.
TEST(OlderNames, VllmBeforeTheRenamesReadsTheSameNumbers) {
  const Pod pod = MetricsServerPod("server");
  const std::string first = Fixture("vllm_server_busy_first.prom");
  const std::string second = Fixture("vllm_server_busy_second.prom");
  const Snapshot today =
      MergeMetricsWindow(MetricsModelDeployment(), pod, Parse(first, exporters::kVllm),
                         Parse(second, exporters::kVllm));
  const Snapshot older = MergeMetricsWindow(MetricsModelDeployment(), pod,
                                            Parse(OlderVllmBody(first), exporters::kVllm),
                                            Parse(OlderVllmBody(second), exporters::kVllm));
  ASSERT_NE(FindWindow(older.latency, "server", "itl"), nullptr);
  EXPECT_EQ(FindWindow(older.latency, "server", "itl")->samples, 11210);  // the reference's golden
  EXPECT_EQ(FindWindow(older.latency, "server", "itl")->value,
            FindWindow(today.latency, "server", "itl")->value);
  EXPECT_EQ(FindWindow(older.latency, "server", "itl")->source, "vllm:inter_token_latency_seconds");
  ASSERT_EQ(older.cache_hits.size(), today.cache_hits.size());
  for (size_t i = 0; i < older.cache_hits.size(); ++i) {
    EXPECT_EQ(older.cache_hits[i].scope, today.cache_hits[i].scope);
    EXPECT_EQ(older.cache_hits[i].rate, today.cache_hits[i].rate);
    EXPECT_EQ(older.cache_hits[i].hits, today.cache_hits[i].hits);
  }
  EXPECT_EQ(older.missing, today.missing);
  EXPECT_EQ(older.partial, today.partial);
}

// vLLM 0.11 writes the ITL histogram under both names: the current one is read, once.
TEST(OlderNames, BothNamesAreReadOnceByTheCurrentOne) {
  const std::string body = Fixture("vllm_server_busy_first.prom");
  const std::string with_twin =
      body +
      "# TYPE vllm:time_per_output_token_seconds histogram\n"
      "vllm:time_per_output_token_seconds_sum{engine=\"0\",model_name=\"m\"} 999\n"
      "vllm:time_per_output_token_seconds_count{engine=\"0\",model_name=\"m\"} 9\n"
      "# TYPE vllm:gpu_prefix_cache_hits counter\n"
      "vllm:gpu_prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 1\n"
      "# TYPE vllm:gpu_prefix_cache_queries counter\n"
      "vllm:gpu_prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1\n";
  const PodMetrics today = Parse(body, exporters::kVllm);
  const PodMetrics read = Parse(with_twin, exporters::kVllm);
  EXPECT_EQ(read.windows.at("itl").sum, today.windows.at("itl").sum);
  EXPECT_EQ(read.windows.at("itl").count, today.windows.at("itl").count);
  EXPECT_EQ(read.cache.at("local-prefix").hits, today.cache.at("local-prefix").hits);
  EXPECT_EQ(read.cache.at("local-prefix").queries, today.cache.at("local-prefix").queries);
}

// Neither name: the reason names every family looked for, so a rename is told from a broken Pod.
TEST(OlderNames, NeitherNameIsReportedByEveryNameLookedFor) {
  const Pod pod = MetricsServerPod("server");
  auto body = [](const char* name) {
    return testing::DropLines(Fixture(name), "vllm:inter_token_latency_seconds");
  };
  const Snapshot s = MergeMetricsWindow(
      MetricsModelDeployment(), pod, Parse(body("vllm_server_busy_first.prom"), exporters::kVllm),
      Parse(body("vllm_server_busy_second.prom"), exporters::kVllm));
  EXPECT_EQ(GpuStackMissing(s),
            (std::vector<Missing>{M("server", "external-store", reason::kVllmNoKvConnector),
                                  M("server", "vllm:inter_token_latency_seconds",
                                    "metric is absent: looked for "
                                    "vllm:inter_token_latency_seconds, then "
                                    "vllm:time_per_output_token_seconds (vLLM before "
                                    "0.11)")}));
  EXPECT_TRUE(s.partial);
}

// An llm-d router from before June 2026 (or a Gateway API Inference Extension EPP) writes only
// the inference_objective_ and inference_pool_ names: every row reads, the error ratio too.
TEST(OlderNames, LlmdRouterBeforeTheLlmdEppNames) {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router", .replicas = 1};
  const Pod router = MetricsRouterPod("chat-router", "router-uid", "llm-d-router");
  const Snapshot s =
      MergeMetricsWindow(md, router, Parse(OlderLlmdRouterBody(10, 0), exporters::kLlmdRouter),
                         Parse(OlderLlmdRouterBody(70, 3), exporters::kLlmdRouter));
  ASSERT_NE(FindGauge(s.processing, "router-running", "router"), nullptr);
  EXPECT_EQ(FindGauge(s.processing, "router-running", "router")->value, 1);
  ASSERT_NE(FindGauge(s.processing, "router-backends", "router"), nullptr);
  EXPECT_EQ(FindGauge(s.processing, "router-backends", "router")->value, 2);
  ASSERT_NE(FindWindow(s.traffic, "chat-router", "requests"), nullptr);
  EXPECT_EQ(FindWindow(s.traffic, "chat-router", "requests")->value, 2);  // 60 requests in 30 s
  ASSERT_NE(FindWindow(s.traffic, "chat-router", "request-errors"), nullptr);
  EXPECT_EQ(FindWindow(s.traffic, "chat-router", "request-errors")->value, 0.1);
}

}  // namespace
}  // namespace modelmetrics::deployment
