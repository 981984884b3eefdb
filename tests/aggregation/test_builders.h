// The upstream test builders of the deployment metrics handler (reference §4.1), in C++:
// metricsModelDeployment, metricsEnginePod, metricsServerPod, metricsVLLMFixture,
// metricsVLLMResponse, metricsSGLangFixture, mergeMetricsWindow, plus fixture loading and small
// look-up helpers shared by the deployment tests.
#ifndef MODELMETRICS_TESTS_DEPLOYMENT_TEST_BUILDERS_H_
#define MODELMETRICS_TESTS_DEPLOYMENT_TEST_BUILDERS_H_

#include <chrono>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/exporters/builtin.h"
#include "aggregation/merge.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/reasons.h"
#include "aggregation/snapshot.h"
#include "kube/objects.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::deployment {

// Readable gtest failure messages for the snapshot's entries.
inline void PrintTo(const Missing& m, std::ostream* os) {
  *os << "{pod=\"" << m.pod << "\" source=\"" << m.source << "\" reason=\"" << m.reason << "\"}";
}

namespace testing {

// A snapshot's missing[] as GPUStack writes it: without the entries of the utilization extension
// (reason::kUtilizationAbsent, not partial), which GPUStack's trimmed fixtures and the bodies
// transcribed from its tests produce for every engine Pod, as they carry no KV-cache gauge.
inline std::vector<Missing> GpuStackMissing(const Snapshot& snapshot) {
  std::vector<Missing> out;
  for (const Missing& m : snapshot.missing) {
    if (m.reason != reason::kUtilizationAbsent) out.push_back(m);
  }
  return out;
}

// 2026-11-29T16:13:15Z: the start of every test's fake clock.
inline WallTime T0() {
  using namespace std::chrono;
  return WallTime(sys_days{year{2026} / 11 / 29}) + hours(16) + minutes(13) + seconds(15);
}

// metricsModelDeployment(): team/chat, UID md-one, engine vllm, one role `server`.
inline ModelDeployment MetricsModelDeployment() {
  ModelDeployment md;
  md.metadata.name = "chat";
  md.metadata.namespace_ = "team";
  md.metadata.uid = "md-one";
  md.engine = "vllm";
  md.roles = {Role{.name = "server", .kind = "server", .replicas = 1, .size = 1}};
  return md;
}

// A P/D deployment: roles `prompt` (prefill) and `generation` (decode).
inline ModelDeployment MetricsPDModelDeployment(std::string engine) {
  ModelDeployment md = MetricsModelDeployment();
  md.engine = std::move(engine);
  md.roles = {Role{.name = "prompt", .kind = "prefill", .replicas = 1, .size = 1},
              Role{.name = "generation", .kind = "decode", .replicas = 1, .size = 1}};
  return md;
}

inline ObjectMeta PodMeta(std::string name, std::string uid) {
  ObjectMeta meta;
  meta.name = std::move(name);
  meta.namespace_ = "team";
  meta.uid = std::move(uid);
  meta.labels = {{std::string(kLabelName), std::string(kLabelNameValue)},
                 {std::string(kLabelInstance), "chat"}};
  return meta;
}

inline void Advertise(Pod* pod, int port, std::string ip) {
  pod->metadata.annotations = {{"prometheus.io/scrape", "true"},
                               {"prometheus.io/path", "/metrics"},
                               {"prometheus.io/port", std::to_string(port)}};
  pod->containers = {Container{.name = "main", .ports = {ContainerPort{.container_port = port}}}};
  pod->pod_ip = std::move(ip);
}

// metricsEnginePod: the deployment's labels with component=`component`, the scrape annotations,
// the ModelDeployment md-one as controller, a containerPort equal to `port`, and a podIP.
inline Pod MetricsEnginePod(std::string name, std::string uid, std::string component = "server",
                            int port = 8000, std::string ip = "127.0.0.1") {
  Pod pod;
  pod.metadata = PodMeta(std::move(name), std::move(uid));
  pod.metadata.labels[std::string(kLabelComponent)] = std::move(component);
  pod.metadata.owner_references = {OwnerReference{.api_version = "worker.gpustack.ai/v1alpha1",
                                                  .kind = "ModelDeployment",
                                                  .name = "chat",
                                                  .uid = "md-one",
                                                  .controller = true}};
  Advertise(&pod, port, std::move(ip));
  pod.phase = "Running";
  return pod;
}

// metricsServerPod(name, command...): an engine Pod of role `server` whose container runs
// `command` (its UID is `<name>-uid`).
inline Pod MetricsServerPod(const std::string& name, std::vector<std::string> command = {},
                            std::string component = "server") {
  Pod pod = MetricsEnginePod(name, name + "-uid", std::move(component));
  pod.containers[0].command = std::move(command);
  return pod;
}

// A router Pod: the router label, owned by the ReplicaSet `chat-router-5d8f` (UID rs-one).
inline Pod MetricsRouterPod(std::string name, std::string uid, std::string router, int port = 8000,
                            std::string ip = "127.0.0.1") {
  Pod pod;
  pod.metadata = PodMeta(std::move(name), std::move(uid));
  pod.metadata.labels[std::string(kLabelRouter)] = std::move(router);
  pod.metadata.owner_references = {OwnerReference{.api_version = "apps/v1",
                                                  .kind = "ReplicaSet",
                                                  .name = "chat-router-5d8f",
                                                  .uid = "rs-one",
                                                  .controller = true}};
  Advertise(&pod, port, std::move(ip));
  pod.phase = "Running";
  return pod;
}

// metricsVLLMFixture: running 2, waiting 0, the prefix cache counters `hits`/`queries`.
inline std::string MetricsVLLMFixture(double hits, double queries) {
  return fmt::format(
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} 2\n"
      "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{{engine=\"0\",model_name=\"m\"}} 0\n"
      "# TYPE vllm:prefix_cache_hits_total counter\n"
      "vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"m\"}} {}\n"
      "# TYPE vllm:prefix_cache_queries_total counter\n"
      "vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {}\n",
      hits, queries);
}

inline std::string VllmHistogram(std::string_view name, double sum, double count) {
  return fmt::format(
      "# TYPE {0} histogram\n"
      "{0}_bucket{{model_name=\"m\",le=\"+Inf\"}} {2}\n"
      "{0}_sum{{model_name=\"m\"}} {1}\n"
      "{0}_count{{model_name=\"m\"}} {2}\n",
      name, sum, count);
}

// metricsVLLMResponse(h, q, n) with the ITL histogram given explicitly.
inline std::string MetricsVLLMResponseITL(double hits, double queries, double n, double itl_sum,
                                          double itl_count) {
  return MetricsVLLMFixture(hits, queries) +
         VllmHistogram("vllm:time_to_first_token_seconds", n, n) +
         VllmHistogram("vllm:request_time_per_output_token_seconds", 2 * n, n) +
         VllmHistogram("vllm:inter_token_latency_seconds", itl_sum, itl_count);
}

// metricsVLLMResponse(h, q, n): the fixture plus ttft sum n/count n, tpot 2n/n, itl 3n/n.
inline std::string MetricsVLLMResponse(double hits, double queries, double n) {
  return MetricsVLLMResponseITL(hits, queries, n, 3 * n, n);
}

// metricsSGLangFixture: running 3, queue 1, modes input 20/device 5/host 3/storage 2,
// decode_transfer_queue 2, kv_transfer_latency_ms sum 25/count 5, transfer_failed 1.
inline std::string MetricsSGLangFixture() {
  return "# TYPE sglang:num_running_reqs gauge\n"
         "sglang:num_running_reqs{model_name=\"m\",tp_rank=\"0\"} 3\n"
         "# TYPE sglang:num_queue_reqs gauge\n"
         "sglang:num_queue_reqs{model_name=\"m\",tp_rank=\"0\"} 1\n"
         "# TYPE sglang:prefill_effective_tokens_total counter\n"
         "sglang:prefill_effective_tokens_total{mode=\"input\",model_name=\"m\"} 20\n"
         "sglang:prefill_effective_tokens_total{mode=\"device_hit\",model_name=\"m\"} 5\n"
         "sglang:prefill_effective_tokens_total{mode=\"host_hit\",model_name=\"m\"} 3\n"
         "sglang:prefill_effective_tokens_total{mode=\"storage_hit\",model_name=\"m\"} 2\n"
         "# TYPE sglang:num_decode_transfer_queue_reqs gauge\n"
         "sglang:num_decode_transfer_queue_reqs{model_name=\"m\"} 2\n"
         "# TYPE sglang:kv_transfer_latency_ms histogram\n"
         "sglang:kv_transfer_latency_ms_bucket{le=\"+Inf\"} 5\n"
         "sglang:kv_transfer_latency_ms_sum 25\n"
         "sglang:kv_transfer_latency_ms_count 5\n"
         "# TYPE sglang:num_transfer_failed_reqs_total counter\n"
         "sglang:num_transfer_failed_reqs_total 1\n";
}

// sglangPDResponse(step): every SGLang series a P/D pair reads, growing with `step`; no transfer
// failure counter (SGLang exports it only after its first failure).
inline std::string SGLangPDResponse(int step) {
  const double s = step;
  auto histogram = [](std::string_view name, double sum, double count) {
    return fmt::format(
        "# TYPE {0} histogram\n"
        "{0}_bucket{{le=\"+Inf\"}} {2}\n"
        "{0}_sum {1}\n"
        "{0}_count {2}\n",
        name, sum, count);
  };
  return "# TYPE sglang:num_running_reqs gauge\n"
         "sglang:num_running_reqs 1\n"
         "# TYPE sglang:num_queue_reqs gauge\n"
         "sglang:num_queue_reqs 0\n"
         "# TYPE sglang:num_decode_transfer_queue_reqs gauge\n"
         "sglang:num_decode_transfer_queue_reqs 0\n"
         "# TYPE sglang:prefill_effective_tokens_total counter\n" +
         fmt::format(
             "sglang:prefill_effective_tokens_total{{mode=\"input\"}} {}\n"
             "sglang:prefill_effective_tokens_total{{mode=\"device_hit\"}} {}\n"
             "sglang:prefill_effective_tokens_total{{mode=\"host_hit\"}} {}\n"
             "sglang:prefill_effective_tokens_total{{mode=\"storage_hit\"}} {}\n",
             10 * s, 6 * s, 3 * s, 1 * s) +
         histogram("sglang:time_to_first_token_seconds", s, 2 * s) +
         histogram("sglang:inter_token_latency_seconds", 2 * s, 40 * s) +
         histogram("sglang:kv_transfer_latency_ms", 30 * s, 3 * s) +
         histogram("sglang:kv_transfer_speed_gb_s", 12 * s, 3 * s) +
         histogram("sglang:kv_transfer_total_mb", 60 * s, 3 * s);
}

// A file of ../shared/fixtures/deployment/. vllm_server_idle_second.prom is not among the fixtures;
// the reference expects it to equal idle_first, so idle_first is read in its place (§4.2).
inline std::string Fixture(std::string name) {
  if (name == "vllm_server_idle_second.prom") name = "vllm_server_idle_first.prom";
  const std::string path = test_paths::Shared("fixtures/deployment/") + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A file of tests/aggregation/upstream/: a body written from an exporter's current code (its
// README names the code).
inline std::string UpstreamBody(const std::string& name) {
  const std::string path = test_paths::Source("tests/aggregation/upstream/") + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every line of `body` that does not contain `needle`.
inline std::string DropLines(const std::string& body, std::string_view needle) {
  std::istringstream in(body);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) == std::string::npos) out += line + "\n";
  }
  return out;
}

// One SGLang queue gauge as _log_gauge_queue_count writes it with --enable-priority-scheduling
// (python/sglang/srt/observability/metrics_collector.py, sgl-project/sglang 016d8605): the total
// under the scheduler's own labels, whose priority is "", then one series per priority seen so
// far; a priority no longer queued stays, at 0.
inline std::string SGLangPriorityGauge(std::string_view name, int total,
                                       const std::vector<std::pair<std::string_view, int>>& parts) {
  constexpr std::string_view kLabels =
      R"(engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0")";
  std::string out = fmt::format("# TYPE {0} gauge\n{0}{{{1},priority=\"\",tp_rank=\"0\"}} {2}\n",
                                name, kLabels, total);
  for (const auto& [priority, value] : parts) {
    out +=
        fmt::format("{}{{{},priority=\"{}\",tp_rank=\"0\"}} {}\n", name, kLabels, priority, value);
  }
  return out;
}

// A P/D pair's body with priority scheduling on: SGLangPDResponse's series, its queue gauges
// replaced by the total-and-parts form.
inline std::string SGLangPriorityPDResponse(int step) {
  return DropLines(DropLines(DropLines(SGLangPDResponse(step), "sglang:num_running_reqs"),
                             "sglang:num_queue_reqs"),
                   "sglang:num_decode_transfer_queue_reqs") +
         SGLangPriorityGauge("sglang:num_running_reqs", 7, {{"0", 3}, {"5", 4}, {"9", 0}}) +
         SGLangPriorityGauge("sglang:num_queue_reqs", 5, {{"0", 5}}) +
         SGLangPriorityGauge("sglang:num_decode_transfer_queue_reqs", 2, {{"1", 2}});
}

// One scheduler of an SGLang engine, as its metrics collector labels it.
struct SGLangRank {
  int tp_rank = 0;
  int dp_rank = 0;
  int running = 0;  // the running and waiting requests of its attention-DP group's batch
  int waiting = 0;
  int input_tokens = 0;  // its group's prefill_effective_tokens_total{mode="input"}
  int device_hits = 0;
};

// An SGLang engine's body as the schedulers in `ranks` write it (SchedulerMetricsCollector,
// python/sglang/srt/observability/metrics_collector.py, sgl-project/sglang 016d8605): each
// scheduler's queue gauges and effective-token counters under its own tp_rank, moe_ep_rank (here
// the tp_rank, as with expert parallelism across the TP group) and dp_rank; the tokenizer's TTFT
// once, without rank labels. With --enable-metrics-for-all-schedulers every rank of a group
// writes; without it only each group's attention-TP rank 0.
inline std::string SGLangSchedulersBody(const std::vector<SGLangRank>& ranks, int ttft_count) {
  auto labels = [](const SGLangRank& r) {
    return fmt::format(
        R"(dp_rank="{1}",engine_type="unified",model_name="m",moe_ep_rank="{0}",pp_rank="0",)"
        R"(priority="",tp_rank="{0}")",
        r.tp_rank, r.dp_rank);
  };
  std::string running = "# TYPE sglang:num_running_reqs gauge\n";
  std::string waiting = "# TYPE sglang:num_queue_reqs gauge\n";
  std::string tokens = "# TYPE sglang:prefill_effective_tokens_total counter\n";
  for (const SGLangRank& r : ranks) {
    running += fmt::format("sglang:num_running_reqs{{{}}} {}\n", labels(r), r.running);
    waiting += fmt::format("sglang:num_queue_reqs{{{}}} {}\n", labels(r), r.waiting);
    for (const auto& [mode, value] :
         std::vector<std::pair<std::string_view, int>>{{"input", r.input_tokens},
                                                       {"device_hit", r.device_hits},
                                                       {"host_hit", 0},
                                                       {"storage_hit", 0}}) {
      tokens += fmt::format("sglang:prefill_effective_tokens_total{{mode=\"{}\",{}}} {}\n", mode,
                            labels(r), value);
    }
  }
  return running + waiting + tokens +
         fmt::format(
             "# TYPE sglang:time_to_first_token_seconds histogram\n"
             "sglang:time_to_first_token_seconds_bucket{{is_streaming=\"true\",le=\"+Inf\","
             "model_name=\"m\"}} {0}\n"
             "sglang:time_to_first_token_seconds_sum{{is_streaming=\"true\",model_name=\"m\"}} "
             "{1}\n"
             "sglang:time_to_first_token_seconds_count{{is_streaming=\"true\",model_name=\"m\"}} "
             "{0}\n",
             ttft_count, 0.05 * ttft_count);
}

// What an llm-d router has served since it started.
struct LlmdTraffic {
  double streamed = 0;      // streaming requests: TTFT is the first token's time
  double non_streamed = 0;  // non-streaming ones: TTFT is the whole request's duration
  double errors = -1;       // < 0: no error yet
};

// An llm-d router's body as llm-d-router writes it (pkg/epp/metrics/llm_d_router_metrics.go,
// llm-d/llm-d-router ebab6879): every request family labelled model_name, target_model_name,
// fairness_id and priority; TTFT also by `streaming`. Its families are labelled Vecs, which have
// no series (nor TYPE line) before their first observation: TTFT's streaming="true" series and
// the TPOT family come with the first streaming request, the error counter with the first error.
// Streaming TTFT 0.038 s, non-streaming 0.5 s, TPOT 0.01 s.
inline std::string CurrentLlmdRouterBody(const LlmdTraffic& t) {
  constexpr std::string_view kR4 =
      R"(model_name="m",target_model_name="m",fairness_id="default",priority="0")";
  std::string body = fmt::format(
      "# TYPE llm_d_epp_request_running gauge\nllm_d_epp_request_running{{{0}}} 1\n"
      "# TYPE llm_d_epp_ready_endpoints gauge\nllm_d_epp_ready_endpoints{{name=\"pool\"}} 2\n"
      "# TYPE llm_d_epp_request_total counter\nllm_d_epp_request_total{{{0}}} {1}\n",
      kR4, t.streamed + t.non_streamed);
  if (t.streamed + t.non_streamed > 0) body += "# TYPE llm_d_epp_request_ttft_seconds histogram\n";
  for (const auto& [streaming, count, mean] :
       {std::tuple{"true", t.streamed, 0.038}, std::tuple{"false", t.non_streamed, 0.5}}) {
    if (count == 0) continue;
    body += fmt::format(
        "llm_d_epp_request_ttft_seconds_bucket{{{0},streaming=\"{1}\",le=\"+Inf\"}} {2}\n"
        "llm_d_epp_request_ttft_seconds_sum{{{0},streaming=\"{1}\"}} {3}\n"
        "llm_d_epp_request_ttft_seconds_count{{{0},streaming=\"{1}\"}} {2}\n",
        kR4, streaming, count, mean * count);
  }
  if (t.streamed > 0) {
    body += fmt::format(
        "# TYPE llm_d_epp_request_streaming_tpot_seconds histogram\n"
        "llm_d_epp_request_streaming_tpot_seconds_bucket{{{0},le=\"+Inf\"}} {1}\n"
        "llm_d_epp_request_streaming_tpot_seconds_sum{{{0}}} {2}\n"
        "llm_d_epp_request_streaming_tpot_seconds_count{{{0}}} {1}\n",
        kR4, t.streamed, 0.01 * t.streamed);
  }
  if (t.errors >= 0) {
    body += fmt::format(
        "# TYPE llm_d_epp_request_error_total counter\n"
        "llm_d_epp_request_error_total{{{},error_code=\"ModelServerError\"}} {}\n",
        kR4, t.errors);
  }
  return body;
}

// `body` with every `from` replaced by `to` (an exporter's older names).
inline std::string Renamed(std::string body, std::string_view from, std::string_view to) {
  for (size_t at = body.find(from); at != std::string::npos; at = body.find(from, at + to.size())) {
    body.replace(at, from.size(), to);
  }
  return body;
}

// The busy vLLM fixture as vLLM before 0.9.2 names its series: prefix cache counters with a gpu_
// prefix, the ITL histogram as vllm:time_per_output_token_seconds (vllm/v1/metrics/loggers.py).
inline std::string OlderVllmBody(const std::string& body) {
  return Renamed(Renamed(body, "vllm:prefix_cache_", "vllm:gpu_prefix_cache_"),
                 "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds");
}

// An llm-d router from before the llm_d_epp_ names (pkg/epp/metrics/metrics.go, the families it
// still writes beside the new ones at llm-d-router ebab6879): running requests by model_name,
// requests and errors by model and target model, the pool's ready Pods.
inline std::string OlderLlmdRouterBody(double requests, double errors) {
  constexpr std::string_view kModels = R"(model_name="m",target_model_name="m")";
  return fmt::format(
      "# TYPE inference_objective_running_requests gauge\n"
      "inference_objective_running_requests{{model_name=\"m\"}} 1\n"
      "# TYPE inference_pool_ready_pods gauge\ninference_pool_ready_pods{{name=\"pool\"}} 2\n"
      "# TYPE inference_objective_request_total counter\n"
      "inference_objective_request_total{{{0}}} {1}\n"
      "# TYPE inference_objective_request_error_total counter\n"
      "inference_objective_request_error_total{{{0},error_code=\"Internal\"}} {2}\n",
      kModels, requests, errors);
}

// `body` with the value of every sample line starting with `series` (followed by '{' or ' ')
// replaced by `value`.
inline std::string SetSample(const std::string& body, std::string_view series,
                             std::string_view value) {
  std::istringstream in(body);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(series) && line.size() > series.size() &&
        (line[series.size()] == '{' || line[series.size()] == ' ')) {
      line = line.substr(0, line.rfind(' ') + 1) + std::string(value);
    }
    out += line + "\n";
  }
  return out;
}

// The lines of `from` that start with `series`, in place of those lines in `body` (a series
// frozen at an earlier read).
inline std::string CopySeries(const std::string& body, const std::string& from,
                              std::string_view series) {
  std::istringstream body_in(body);
  std::string out;
  for (std::string line; std::getline(body_in, line);) {
    if (line.starts_with(series)) {
      const std::string head = line.substr(0, line.rfind(' '));
      std::istringstream from_in(from);
      for (std::string old; std::getline(from_in, old);) {
        if (old.substr(0, old.rfind(' ')) == head) line = old;
      }
    }
    out += line + "\n";
  }
  return out;
}

inline PodMetrics Parse(std::string_view body, const ExporterProfile& exporter) {
  PodMetrics read;
  std::string error;
  EXPECT_OK(ParsePodMetrics(body, &exporter, &read));
  return read;
}

// One GET's merge of `reads`, all taken at `at`.
inline Snapshot MergeReads(const ModelDeployment& md, BaselineStore* store, WallTime at,
                           const std::vector<std::pair<Pod, PodMetrics>>& reads) {
  SnapshotBuilder builder(md, store);
  for (const auto& [pod, read] : reads) builder.MergePod(pod, read, ReadTime::Replay(at));
  return builder.Finish(at);
}

inline Snapshot MergeOnce(const ModelDeployment& md, BaselineStore* store, WallTime at,
                          const Pod& pod, const PodMetrics& read) {
  return MergeReads(md, store, at, {{pod, read}});
}

// mergeMetricsWindow: two merges of one Pod, `window` apart (30 s by default); the second
// snapshot.
inline Snapshot MergeMetricsWindow(const ModelDeployment& md, const Pod& pod,
                                   const PodMetrics& first, const PodMetrics& second,
                                   std::chrono::nanoseconds window = std::chrono::seconds(30)) {
  BaselineStore store;
  MergeOnce(md, &store, T0(), pod, first);
  return MergeOnce(md, &store, T0() + std::chrono::duration_cast<WallClock::duration>(window), pod,
                   second);
}

inline const Window* FindWindow(const std::vector<Window>& windows, std::string_view pod,
                                std::string_view name) {
  for (const Window& w : windows) {
    if (w.pod == pod && w.name == name) return &w;
  }
  return nullptr;
}

inline const CacheHit* FindCacheHit(const std::vector<CacheHit>& hits, std::string_view pod,
                                    std::string_view scope) {
  for (const CacheHit& h : hits) {
    if (h.pod == pod && h.scope == scope) return &h;
  }
  return nullptr;
}

inline const Gauge* FindGauge(const std::vector<Gauge>& gauges, std::string_view name,
                              std::string_view scope) {
  for (const Gauge& g : gauges) {
    if (g.name == name && g.scope == scope) return &g;
  }
  return nullptr;
}

inline Missing M(std::string pod, std::string source, std::string_view reason) {
  return Missing{std::move(pod), std::move(source), std::string(reason)};
}

// "pod/name" of each window, in order.
inline std::vector<std::string> WindowKeys(const std::vector<Window>& windows) {
  std::vector<std::string> keys;
  for (const Window& w : windows) keys.push_back(w.pod + "/" + w.name);
  return keys;
}

}  // namespace testing
}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_TESTS_DEPLOYMENT_TEST_BUILDERS_H_
