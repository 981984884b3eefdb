// Snapshots of the fleet (scripts/fleet.sh --bench) from the central store and from direct
// scraping: wall time and CPU time per snapshot (this process: the caller's thread and the HTTP
// client's driver thread), and this process's peak resident memory. The store and the Pods run in
// other processes, so the numbers are ours alone.
//
// Scenarios (one per process with --scenario, so each peak RSS is its own; all by default):
//   store-64      model-64pods from the store
//   direct-64     model-64pods scraped directly (a first read primes the baselines)
//   store-fleet   every model-NN deployment from the store, one after another (per round)
//   store-1000    model-1000pods from the store
// Targets on the 2-core reference machine: a 64-Pod snapshot from the store in <= 100 ms wall and
// <= 30 ms CPU, a 1,000-Pod deployment in <= 1 s, memory <= 128 MiB.
//
//   usage: store_snapshot_bench --prometheus-url URL --objects FILE [--namespace fleet]
//                               [--rounds 20] [--scenario NAME]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "aggregation/aggregator.h"
#include "aggregation/prometheus_source.h"
#include "kube/object_file.h"
#include "process_stats.h"

namespace {

using namespace modelmetrics;

using bench::CpuSeconds;
using bench::PeakRssMiB;
using bench::Percentile;

struct Args {
  std::string url;
  std::string objects;
  std::string ns = "fleet";
  int rounds = 20;
  std::string scenario;
};

// Runs `rounds` rounds of reading `names`; prints one line.
int Measure(const char* label, deployment::Aggregator& aggregator, const Args& args,
            const std::vector<std::string>& names, bool prime) {
  auto read_all = [&](size_t* missing, size_t* pods) {
    for (const std::string& name : names) {
      deployment::Snapshot snapshot;
      const deployment::Status status = aggregator.Get(args.ns, name, &snapshot);
      if (!status.ok()) {
        std::fprintf(stderr, "%s: %s: %s\n", label, name.c_str(), status.message().c_str());
        return false;
      }
      *missing += snapshot.missing.size();
      for (const deployment::Gauge& g : snapshot.processing) {
        if (g.name == "running") *pods += static_cast<size_t>(g.pod_count);
      }
    }
    return true;
  };
  size_t missing = 0;
  size_t pods = 0;
  if (prime && !read_all(&missing, &pods)) return 1;
  std::vector<double> wall, cpu;
  for (int round = 0; round < args.rounds; ++round) {
    missing = pods = 0;
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = CpuSeconds();
    if (!read_all(&missing, &pods)) return 1;
    cpu.push_back((CpuSeconds() - cpu_start) * 1000);
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::printf(
      "%-12s %3zu deployment(s), %4zu engine Pods: wall p50 %7.1f ms p90 %7.1f ms, CPU p50 %6.1f "
      "ms p90 %6.1f ms, peak RSS %5.1f MiB, missing[] %zu (%d rounds)\n",
      label, names.size(), pods, Percentile(wall, 0.5), Percentile(wall, 0.9), Percentile(cpu, 0.5),
      Percentile(cpu, 0.9), PeakRssMiB(), missing, args.rounds);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--prometheus-url")
      args.url = argv[i + 1];
    else if (flag == "--objects")
      args.objects = argv[i + 1];
    else if (flag == "--namespace")
      args.ns = argv[i + 1];
    else if (flag == "--rounds")
      args.rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--scenario")
      args.scenario = argv[i + 1];
    else {
      std::fprintf(stderr, "store_snapshot_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (args.url.empty() || args.objects.empty()) {
    std::fprintf(stderr, "usage: store_snapshot_bench --prometheus-url URL --objects FILE\n");
    return 2;
  }
  deployment::FileObjectSource objects;
  if (const base::Status loaded = objects.Load(args.objects, size_t{64} << 20); !loaded.ok()) {
    std::fprintf(stderr, "store_snapshot_bench: %s\n", loaded.message().c_str());
    return 2;
  }
  std::vector<std::string> fleet;
  for (int d = 0; d < 100; ++d) {
    char name[32];
    std::snprintf(name, sizeof name, "model-%02d", d);
    deployment::ModelDeployment md;
    if (objects.GetModelDeployment(args.ns, name, &md).ok()) fleet.emplace_back(name);
  }

  deployment::PrometheusSourceOptions store;
  store.url = args.url;
  deployment::AggregatorOptions from_store;
  from_store.pod_source = std::make_shared<deployment::PrometheusSource>(store);
  deployment::Aggregator store_aggregator(&objects, from_store);

  const bool all = args.scenario.empty();
  int rc = 0;
  if (all || args.scenario == "store-64") {
    rc |= Measure("store-64", store_aggregator, args, {"model-64pods"}, false);
  }
  if (all || args.scenario == "direct-64") {
    deployment::Aggregator direct(&objects, deployment::AggregatorOptions{});
    rc |= Measure("direct-64", direct, args, {"model-64pods"}, true);
  }
  if (all || args.scenario == "store-fleet") {
    rc |= Measure("store-fleet", store_aggregator, args, fleet, false);
  }
  if (all || args.scenario == "store-1000") {
    rc |= Measure("store-1000", store_aggregator, args, {"model-1000pods"}, false);
  }
  return rc;
}
