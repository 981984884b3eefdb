// `modelmetrics snapshot [-n NS] NAME`: reads a deployment's ModelDeploymentMetrics directly from
// its Pods, with the objects from a file or the Kubernetes API, and prints it.
//
// A one-shot command has no earlier read to window against, so it reads twice, --window apart,
// and prints the second snapshot (--window 0 reads once). With --source prometheus the store holds
// the history, so one read has windows and --window is the range of samples it reads. --watch
// INTERVAL keeps printing a new snapshot every INTERVAL, each windowed against the one before.
//
// Exit codes: 0 printed, 1 the API answered an error (e.g. 404, 503; printed as `Error from
// server (Reason): message`, the way kubectl prints a Status), 2 usage or configuration errors.
#include "snapshot_command.h"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "aggregation/aggregator.h"
#include "aggregation/snapshot.h"
#include "base/duration.h"
#include "object_source_flags.h"
#include "read_limit_flags.h"
#include "sample_source_flags.h"

namespace modelmetrics::cli {
namespace {

std::string Render(const deployment::Snapshot& snapshot, const std::string& output) {
  if (output == "json") return deployment::SnapshotToJson(snapshot) + "\n";
  if (output == "yaml") return deployment::SnapshotToYaml(snapshot);
  return deployment::SnapshotToTable(snapshot);
}

}  // namespace

int RunSnapshot(const SnapshotArgs& args) {
  std::unique_ptr<ObjectSourceHandle> source;
  if (const base::Status opened = OpenObjectSource(args.source, &source); !opened.ok()) {
    std::cerr << "modelmetrics snapshot: " << opened.message() << "\n";
    return 2;
  }
  std::chrono::milliseconds window{};
  std::chrono::milliseconds watch{};
  base::ParseDuration(args.window, &window);
  deployment::AggregatorOptions options;
  base::Status status = ApplyReadLimitFlags(args.limits, &options);
  options.ca_file = args.ca_file;
  if (status.ok() && args.samples.from_store()) {
    // The store holds the history: one read has windows, and --window is the range it reads.
    status =
        OpenSampleSource(args.samples, args.window_given ? std::optional(window) : std::nullopt,
                         &options.pod_source);
    window = std::chrono::milliseconds(0);
  }
  if (!status.ok()) {
    std::cerr << "modelmetrics snapshot: " << status.message() << "\n";
    return 2;
  }
  deployment::Aggregator aggregator(source->get(), options);
  const bool watching =
      !args.watch.empty() && base::ParseDuration(args.watch, &watch) && watch.count() > 0;

  deployment::Snapshot snapshot;
  auto read = [&]() -> bool {
    const deployment::Status status = aggregator.Get(args.ns, args.name, &snapshot);
    if (!status.ok()) {
      std::cerr << "Error from server (" << status.reason() << "): " << status.message() << "\n";
      return false;
    }
    return true;
  };
  if (window.count() > 0) {
    if (!read()) return 1;  // the baseline read
    std::this_thread::sleep_for(window);
  }
  for (int round = 1;; ++round) {
    if (!read()) return 1;
    std::cout << Render(snapshot, args.output) << std::flush;
    if (!watching || (args.rounds > 0 && round >= args.rounds)) return 0;
    std::this_thread::sleep_for(watch);
    if (args.output == "table") std::cout << "\n";
  }
}

}  // namespace modelmetrics::cli
