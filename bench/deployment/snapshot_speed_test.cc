// One ModelDeploymentMetrics snapshot of 64 simulated vLLM Pods, each serving a ~200 KB scrape
// over loopback: wall time and CPU time per snapshot, and the aggregator's peak memory.
//
// The simulated Pods run in a child process, so the CPU time and peak resident memory printed are
// the aggregator's alone (this process: the caller's thread plus the HTTP client's driver
// thread). Targets on the 2-core reference machine: <= 50 ms wall, <= 30 ms CPU, <= 64 MiB RSS.
//
//   usage: snapshot_speed_test [--pods 64] [--scrape-kib 200] [--rounds 40]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "aggregation/aggregator.h"
#include "aggregation/baseline_store.h"
#include "kube/object_file.h"
#include "net/http_client.h"
#include "process_stats.h"
#include "sim/deployment_sim.h"

namespace {

using namespace modelmetrics;

using bench::CpuSeconds;
using bench::PeakRssMiB;
using bench::Percentile;

// The child: serves the Pods until its parent closes the pipe.
[[noreturn]] void RunPods(int pods, size_t scrape_bytes, const std::string& objects_file,
                          int ready_fd, int stop_fd) {
  sim::DeploymentSimOptions options;
  options.name = "bench";
  options.ns = "bench";
  options.engine = "vllm";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = pods}};
  options.padding_bytes = scrape_bytes;
  options.objects_file = objects_file;
  options.requests_per_second = 64;
  sim::DeploymentSim simulator(options);
  if (const base::Status started = simulator.Start(); !started.ok()) {
    std::fprintf(stderr, "simulator: %s\n", started.message().c_str());
    _exit(1);
  }
  const char ok = 1;
  if (write(ready_fd, &ok, 1) != 1) _exit(1);
  char ignored;
  while (read(stop_fd, &ignored, 1) > 0) {
  }
  simulator.Stop();
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  int pods = 64;
  int scrape_kib = 200;
  int rounds = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--pods") == 0) pods = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--scrape-kib") == 0) scrape_kib = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
  }
  const std::string objects_file = (std::filesystem::temp_directory_path() /
                                    ("mm-bench-objects-" + std::to_string(getpid()) + ".json"))
                                       .string();
  int ready[2];
  int stop[2];
  if (pipe(ready) != 0 || pipe(stop) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(ready[0]);
    close(stop[1]);
    // The exporter's own series are about 34 KB; padding (more real-shaped series) makes up the
    // rest of the scrape size asked for.
    const size_t target = static_cast<size_t>(scrape_kib) * 1000;
    RunPods(pods, target > 34'000 ? target - 34'000 : 0, objects_file, ready[1], stop[0]);
  }
  close(ready[1]);
  close(stop[0]);
  char ok = 0;
  if (read(ready[0], &ok, 1) != 1) {
    std::fprintf(stderr, "the simulated Pods did not start\n");
    return 1;
  }

  deployment::FileObjectSource source;
  if (const base::Status loaded = source.Load(objects_file); !loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.message().c_str());
    return 1;
  }
  double scrape_bytes = 0;
  {
    deployment::ObjectSet objects;
    std::ifstream in(objects_file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!deployment::DecodeObjects(text, &objects).ok()) return 1;
    net::HttpClient client;
    const std::string port = objects.pods.front().metadata.annotations.at("prometheus.io/port");
    const net::FetchRequest request{.url = "http://127.0.0.1:" + port + "/metrics"};
    const auto result = client.FetchAll(std::span(&request, 1),
                                        std::chrono::steady_clock::now() + std::chrono::seconds(5));
    scrape_bytes = static_cast<double>(result[0].body.size());
  }

  deployment::BaselineStore store;
  deployment::AggregatorOptions options;
  options.baselines = &store;
  deployment::Aggregator aggregator(&source, options);
  const double rss_before = PeakRssMiB();
  std::vector<double> wall_ms;
  std::vector<double> cpu_ms;
  size_t failures = 0;
  bool partial = false;
  for (int round = -2; round < rounds; ++round) {  // two warm-up reads
    deployment::Snapshot snapshot;
    const double cpu_start = CpuSeconds();
    const auto wall_start = std::chrono::steady_clock::now();
    const deployment::Status status = aggregator.Get("bench", "bench", &snapshot);
    const double wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start)
            .count();
    const double cpu = (CpuSeconds() - cpu_start) * 1000;
    if (!status.ok()) {
      ++failures;
      std::fprintf(stderr, "snapshot failed: %s\n", status.message().c_str());
      continue;
    }
    if (round < 0) continue;
    partial = partial || snapshot.partial;
    wall_ms.push_back(wall);
    cpu_ms.push_back(cpu);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  close(stop[1]);
  int child_status = 0;
  waitpid(child, &child_status, 0);
  std::filesystem::remove(objects_file);
  if (wall_ms.empty()) return 1;

  std::printf("snapshot of %d vLLM Pods, %.0f KB per scrape (%.1f MB per snapshot), %zu rounds\n",
              pods, scrape_bytes / 1000, scrape_bytes * pods / 1e6, wall_ms.size());
  std::printf("  wall per snapshot: median %.1f ms, p90 %.1f ms, max %.1f ms  (target <= 50 ms)\n",
              Percentile(wall_ms, 0.5), Percentile(wall_ms, 0.9), Percentile(wall_ms, 1.0));
  std::printf("  CPU per snapshot:  median %.1f ms, p90 %.1f ms, max %.1f ms  (target <= 30 ms)\n",
              Percentile(cpu_ms, 0.5), Percentile(cpu_ms, 0.9), Percentile(cpu_ms, 1.0));
  std::printf(
      "  peak RSS: %.1f MiB (%.1f MiB before the first measured snapshot)  "
      "(target <= 64 MiB)\n",
      PeakRssMiB(), rss_before);
  std::printf("  failed snapshots: %zu, any partial: %s\n", failures, partial ? "yes" : "no");
  return failures == 0 ? 0 : 1;
}
