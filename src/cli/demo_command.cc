// `modelmetrics demo`: everything in one process, on loopback. It starts
//   * a simulated vLLM prefill/decode deployment (`demo/chat`: 1 prefill + 2 decode Pods, a KV
//     cache pool) behind an llm-d router,
//   * a simulated SGLang deployment (`demo/assistant`: 2 server Pods with host and storage tiers)
//     behind the SGLang gateway,
//   * a simulated vLLM-Omni deployment (`demo/voice`: 2 Pods, each running the speech pipeline
//     thinker -> talker -> code2wav),
//   * the pipeline simulator's /metrics (its URL in the banner; its own tables are not printed),
//   * the aggregated API server (plain HTTP on 127.0.0.1, a bearer token made up at start),
//   * the web page (`modelmetrics ui`'s, on its own aggregator and baselines, so its reads do not
//     shorten the printed rounds' windows; its URL with its access token in the banner),
// then prints each deployment's snapshot table every --interval until --duration has passed. The
// first round is every Pod's baseline (so it lists `awaiting a second counter sample`); windows,
// cache hits and rates appear from the second round on.
#include "demo_command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <streambuf>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "aggregation/aggregator.h"
#include "aggregation/baseline_store.h"
#include "base/duration.h"
#include "base/mutex.h"
#include "kube/object_file.h"
#include "sim/deployment_sim.h"
#include "sim/loopback_api.h"
#include "sim/pipeline_sim.h"
#include "stop_signals.h"
#include "ui/ui_server.h"

namespace modelmetrics::cli {
namespace {

sim::DeploymentSimOptions VllmPrefillDecode(uint64_t seed) {
  sim::DeploymentSimOptions options;
  options.name = "chat";
  options.ns = "demo";
  options.engine = "vllm";
  options.roles = {{.name = "prompt", .kind = deployment::RoleKind::kPrefill, .replicas = 1},
                   {.name = "generation", .kind = deployment::RoleKind::kDecode, .replicas = 2}};
  options.router = "llm-d-router";
  options.kv_cache = true;
  options.seed = seed;
  options.requests_per_second = 12;
  return options;
}

sim::DeploymentSimOptions SglangBehindGateway(uint64_t seed) {
  sim::DeploymentSimOptions options;
  options.name = "assistant";
  options.ns = "demo";
  options.engine = "sglang";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = 2}};
  options.router = "sglang-gateway";
  options.kv_cache = true;
  // As SGLang runs with priority scheduling and every scheduler logging its metrics: the
  // snapshot reads each request once.
  options.variants = {sim::SimVariant::kPriority, sim::SimVariant::kAllSchedulers};
  options.seed = seed + 1;
  options.requests_per_second = 6;
  return options;
}

sim::DeploymentSimOptions OmniSpeech(uint64_t seed) {
  sim::DeploymentSimOptions options;
  options.name = "voice";
  options.ns = "demo";
  options.engine = "vllm-omni";
  options.model = "Qwen/Qwen2.5-Omni-7B";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = 2}};
  options.omni_pipeline = sim::SimPipelines::kSpeech;
  options.seed = seed + 2;
  // 4 speech requests/s per Pod: every stage replica and transfer edge sees some in 4 s.
  options.requests_per_second = 8;
  return options;
}

void Append(deployment::ObjectSet* into, deployment::ObjectSet from) {
  for (auto& md : from.model_deployments) into->model_deployments.push_back(std::move(md));
  for (auto& pod : from.pods) into->pods.push_back(std::move(pod));
  for (auto& rs : from.replica_sets) into->replica_sets.push_back(std::move(rs));
  for (auto& d : from.deployments) into->deployments.push_back(std::move(d));
}

// What the pipeline simulator prints, kept off stdout: written from its thread, it would land in
// the middle of the rounds (its listening line at a random point, its summary tables after the
// last round, breaking `-o json`). The demo prints the listening line in its banner instead.
class CapturedOutput : public std::streambuf {
 public:
  // The first line starting with `prefix`, waiting for it until `timeout` or Close(); "" if none.
  std::string WaitForLine(std::string_view prefix, std::chrono::milliseconds timeout) {
    base::MutexLock lock(&mutex_);
    std::string line;
    changed_.wait_for(lock.native(), timeout, [&]() REQUIRES(mutex_) {
      for (size_t at = 0; at < text_.size();) {
        const size_t end = text_.find('\n', at);
        if (end == std::string::npos) break;
        if (std::string_view(text_).substr(at, end - at).starts_with(prefix)) {
          line = text_.substr(at, end - at);
          return true;
        }
        at = end + 1;
      }
      return closed_;
    });
    return line;
  }
  void Close() {
    base::MutexLock lock(&mutex_);
    closed_ = true;
    changed_.notify_all();
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    base::MutexLock lock(&mutex_);
    if (text_.size() < kKeep) text_.append(s, static_cast<size_t>(n));
    changed_.notify_all();
    return n;
  }

 private:
  static constexpr size_t kKeep = 64 * 1024;  // the listening line comes first
  base::Mutex mutex_;
  std::condition_variable changed_;
  std::string text_ GUARDED_BY(mutex_);
  bool closed_ GUARDED_BY(mutex_) = false;
};

// A stop asked for on one thread and waited for on another.
class StopFlag {
 public:
  void Request() {
    base::MutexLock lock(&mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  // Waits up to `d`; true when a stop was asked for.
  bool WaitFor(std::chrono::milliseconds d) {
    base::MutexLock lock(&mu_);
    return cv_.wait_for(lock.native(), d, [this]() REQUIRES(mu_) { return stopped_; });
  }

 private:
  base::Mutex mu_;
  std::condition_variable cv_;
  bool stopped_ GUARDED_BY(mu_) = false;
};

// The three simulated deployments, started; false (having said why) when one does not start.
bool StartSimulators(uint64_t seed, std::vector<std::unique_ptr<sim::DeploymentSim>>* sims) {
  for (sim::DeploymentSimOptions options :
       {VllmPrefillDecode(seed), SglangBehindGateway(seed), OmniSpeech(seed)}) {
    auto simulator = std::make_unique<sim::DeploymentSim>(std::move(options));
    if (const base::Status started = simulator->Start(); !started.ok()) {
      std::cerr << "modelmetrics demo: simulator: " << started.message() << "\n";
      return false;
    }
    sims->push_back(std::move(simulator));
  }
  return true;
}

// One round: each deployment's snapshot as a table (or JSON); returns how many reads failed.
int PrintRound(int round, const std::vector<std::unique_ptr<sim::DeploymentSim>>& sims,
               deployment::Aggregator* aggregator, const std::string& output) {
  int failures = 0;
  for (const auto& simulator : sims) {
    deployment::Snapshot snapshot;
    const deployment::Status status =
        aggregator->Get(simulator->options().ns, simulator->options().name, &snapshot);
    std::cout << fmt::format("--- round {} ---\n", round);
    if (!status.ok()) {
      ++failures;
      std::cout << "Error from server (" << status.reason() << "): " << status.message() << "\n\n";
      continue;
    }
    if (output == "json") {
      std::cout << deployment::SnapshotToJson(snapshot) << "\n\n";
    } else {
      std::cout << deployment::SnapshotToTable(snapshot)
                << "partial: " << (snapshot.partial ? "true" : "false") << "\n\n";
    }
  }
  std::cout << std::flush;
  return failures;
}

// The two APIs' curl lines: the snapshot, and the custom metrics an HPA reads.
void PrintApiLines(const sim::LoopbackApi& api) {
  const std::string curl = "  curl -H 'Authorization: Bearer " + api.token() + "' '" + api.url();
  std::cout << "aggregated API: " << api.url() << " (bearer token " << api.token() << ")\n"
            << curl
            << "/apis/worker.gpustack.ai/v1/namespaces/demo/modeldeployments/chat/metrics'\n"
            << "custom metrics API (what an HPA reads; docs/autoscaling.md):\n"
            << curl
            << "/apis/custom.metrics.k8s.io/v1beta2/namespaces/demo/"
               "modeldeployments.worker.gpustack.ai/chat/"
               "waiting?metricLabelSelector=role%3Dgeneration'\n";
}

}  // namespace

int RunDemo(const DemoArgs& args) {
  const sigset_t signals = BlockStopSignals();  // before any thread starts
  std::chrono::milliseconds duration{};
  std::chrono::milliseconds interval{};
  base::ParseDuration(args.duration, &duration);
  base::ParseDuration(args.interval, &interval);
  if (interval.count() <= 0) interval = std::chrono::seconds(5);
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + duration;

  std::vector<std::unique_ptr<sim::DeploymentSim>> sims;
  if (!StartSimulators(args.seed, &sims)) return 1;
  deployment::ObjectSet objects;
  for (const auto& simulator : sims) Append(&objects, simulator->Objects());
  deployment::FileObjectSource source;
  source.Set(std::move(objects));
  // The aggregated API, for curl or kubectl on the side; its aggregator also prints the rounds.
  sim::LoopbackApiOptions api_options;
  api_options.namespaces = {"demo"};
  api_options.api.custom_metrics = true;  // its own API server: no other owner of the group here
  sim::LoopbackApi api(&source, api_options);
  deployment::Aggregator& aggregator = api.aggregator();
  if (const base::Status started = api.Start(); !started.ok()) {
    std::cerr << "modelmetrics demo: API server: " << started.message() << "\n";
    return 1;
  }

  std::cout << "modelmetrics demo: simulated Pods\n";
  for (const auto& simulator : sims) {
    for (const sim::SimPodInfo& pod : simulator->Pods()) {
      std::cout << fmt::format("  {}/{:<34} {}\n", simulator->options().ns, pod.name, pod.url);
    }
  }
  // The web page, on its own aggregator and baselines.
  deployment::BaselineStore ui_baselines;
  deployment::AggregatorOptions ui_aggregator_options;
  ui_aggregator_options.baselines = &ui_baselines;
  deployment::Aggregator ui_aggregator(&source, ui_aggregator_options);
  std::optional<ui::UiServer> page;
  if (args.ui) {
    ui::UiOptions ui_options;
    ui_options.port = args.ui_port;
    ui_options.ns = "demo";
    page.emplace(&source, &ui_aggregator, ui_options);
    if (const base::Status started = page->Start(); !started.ok()) {
      std::cerr << "modelmetrics demo: web page: " << started.message() << "\n";
      return 1;
    }
  }
  PrintApiLines(api);
  if (page) std::cout << "web page: " << page->url() << "\n";

  // The pipeline half, serving its /metrics beside the deployments for the same duration, or
  // until the demo stops.
  StopFlag stop;
  CapturedOutput pipeline_output;
  std::ostream pipeline_stream(&pipeline_output);
  std::thread pipeline;
  if (args.pipeline) {
    sim::PipelineSimOptions options;
    options.listen = "127.0.0.1:0";
    options.duration = duration;
    options.log_interval = std::chrono::milliseconds(0);
    options.seed = args.seed;
    options.out = &pipeline_stream;
    options.wait = [&stop](std::chrono::milliseconds d) { return stop.WaitFor(d); };
    pipeline = std::thread([options, &pipeline_output] {
      sim::RunPipelineSimulator(options);
      pipeline_output.Close();
    });
    const std::string listening =
        pipeline_output.WaitForLine("serving /metrics on ", std::chrono::seconds(2));
    if (!listening.empty()) std::cout << "pipeline simulator: " << listening << "\n";
  }
  std::cout << "\n" << std::flush;

  int failures = 0;
  for (int round = 1;; ++round) {
    const auto round_start = std::chrono::steady_clock::now();
    failures += PrintRound(round, sims, &aggregator, args.output);
    const auto next = round_start + interval;
    if (next >= end) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        next - std::chrono::steady_clock::now());
    if (WaitForStop(signals, std::max(left, std::chrono::milliseconds(0)), "demo")) break;
  }
  stop.Request();
  if (pipeline.joinable()) pipeline.join();
  if (page) page->Stop();
  api.Stop();
  for (const auto& simulator : sims) simulator->Stop();
  return failures == 0 ? 0 : 1;
}

}  // namespace modelmetrics::cli
