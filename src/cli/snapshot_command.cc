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
#include "cli/snapshot_command.h"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "base/duration.h"
#include "cli/object_source_flags.h"
#include "deployment/aggregator.h"
#include "deployment/prometheus_source.h"
#include "deployment/snapshot.h"

namespace modelmetrics::cli {
namespace {

struct SnapshotArgs {
  ObjectSourceFlags source;
  std::string ns = "default";
  std::string name;
  std::string output = "table";
  std::string window = "5s";
  std::string watch;
  int rounds = 0;
  std::string ca_file;
  std::string samples{deployment::kSampleSourceScrape};
  bool window_given = false;
  deployment::PrometheusSourceOptions store;
  std::string store_window;
  std::string store_stale_after;
  std::string store_settle;
  std::string store_token_file;
  std::string store_password_file;
};

// The store source from the flags; null with a message on stderr when they are wrong.
std::shared_ptr<deployment::PodMetricsSource> OpenStore(const SnapshotArgs& args,
                                                        std::chrono::milliseconds window) {
  deployment::PrometheusSourceOptions store = args.store;
  if (args.window_given) store.window = window;
  if (!args.store_stale_after.empty())
    base::ParseDuration(args.store_stale_after, &store.stale_after);
  std::string error = deployment::ValidatePrometheusSourceOptions(store);
  if (error.empty() && !deployment::LoadPrometheusCredentials(
                           args.store_token_file, args.store_password_file, &store, &error)) {
    error = "prometheus credentials: " + error;
  }
  if (!error.empty()) {
    std::cerr << "modelmetrics snapshot: " << error << "\n";
    return nullptr;
  }
  return std::make_shared<deployment::PrometheusSource>(std::move(store));
}

std::string Render(const deployment::Snapshot& snapshot, const std::string& output) {
  if (output == "json") return deployment::SnapshotToJson(snapshot) + "\n";
  if (output == "yaml") return deployment::SnapshotToYaml(snapshot);
  return deployment::SnapshotToTable(snapshot);
}

int RunSnapshot(const SnapshotArgs& args) {
  std::string error;
  std::unique_ptr<ObjectSourceHandle> source = OpenObjectSource(args.source, &error);
  if (!source) {
    std::cerr << "modelmetrics snapshot: " << error << "\n";
    return 2;
  }
  std::chrono::milliseconds window{};
  std::chrono::milliseconds watch{};
  base::ParseDuration(args.window, &window);
  deployment::AggregatorOptions options;
  options.ca_file = args.ca_file;
  const bool from_store = args.samples == deployment::kSampleSourcePrometheus;
  if (from_store) {
    // The store holds the history: one read has windows, and --window is the range it reads.
    options.pod_source = OpenStore(args, window);
    if (!options.pod_source) return 2;
    window = std::chrono::milliseconds(0);
  }
  deployment::Aggregator aggregator(source->get(), options);
  const bool watching =
      !args.watch.empty() && base::ParseDuration(args.watch, &watch) && watch.count() > 0;

  deployment::Snapshot snapshot;
  auto read = [&]() -> bool {
    const deployment::ApiStatus status = aggregator.Get(args.ns, args.name, &snapshot);
    if (!status.ok()) {
      std::cerr << "Error from server (" << status.reason << "): " << status.message << "\n";
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

}  // namespace

void AddSnapshotCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SnapshotArgs>();
  CLI::App* command = app.add_subcommand(
      "snapshot", "Read one ModelDeploymentMetrics snapshot of a deployment and print it");
  command->add_option("name", args->name, "The ModelDeployment's name")->required();
  command->add_option("-n,--namespace", args->ns, "Its namespace")->capture_default_str();
  AddObjectSourceFlags(command, &args->source);
  command->add_option("-o,--output", args->output, "table, json (the API's document) or yaml")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  command
      ->add_option("--window", args->window,
                   "Read twice this far apart and print the second read (0: read once); with "
                   "--source prometheus, the range of samples read (default 2m)")
      ->capture_default_str()
      ->check(base::CheckDuration)
      ->each([args](const std::string&) { args->window_given = true; });
  command
      ->add_option("--source", args->samples,
                   "Where samples come from: scrape (the Pods) or prometheus (a "
                   "Prometheus-compatible store, --prometheus-url)")
      ->capture_default_str()
      ->check(CLI::IsMember({std::string(deployment::kSampleSourceScrape),
                             std::string(deployment::kSampleSourcePrometheus)}));
  command->add_option("--prometheus-url", args->store.url,
                      "The store's API base, e.g. http://127.0.0.1:9090 or a VictoriaMetrics "
                      "cluster's http://vmselect:8481/select/0/prometheus");
  command
      ->add_option("--stale-after", args->store_stale_after,
                   "With --source prometheus: a Pod whose newest sample is older is missing "
                   "(default 90s)")
      ->check(base::CheckDuration);
  command
      ->add_option("--settle", args->store_settle,
                   "With --source prometheus: read the store as of this long ago, so a store fed "
                   "by remote write shows only complete scrapes (default 0s)")
      ->check(base::CheckDuration);
  command
      ->add_option("--prometheus-namespace-label", args->store.namespace_label,
                   "The store's label holding the Pod's namespace")
      ->capture_default_str();
  command
      ->add_option("--prometheus-pod-label", args->store.pod_label,
                   "The store's label holding the Pod's name")
      ->capture_default_str();
  command->add_option("--prometheus-selector", args->store.selector,
                      "Extra label matchers for every query, e.g. 'job=\"vllm\"'");
  command
      ->add_option("--prometheus-pod-limit", args->store.pod_limit,
                   "The most Pods one snapshot reads from the store")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--prometheus-ca-file", args->store.ca_file,
                      "PEM bundle to trust for an HTTPS store");
  command->add_option("--prometheus-bearer-token-file", args->store_token_file,
                      "A file holding the store's bearer token");
  command->add_option("--prometheus-user", args->store.basic_user,
                      "HTTP basic authentication user for the store");
  command->add_option("--prometheus-password-file", args->store_password_file,
                      "A file holding that user's password");
  command
      ->add_option("--watch", args->watch,
                   "Print a new snapshot every DURATION, windowed against the one before")
      ->check(base::CheckDuration);
  command->add_option("--rounds", args->rounds, "With --watch: stop after N snapshots (0: never)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--ca-file", args->ca_file,
                      "PEM bundle to trust for HTTPS Pods (default: the system bundle)");
  command->callback([args, exit_code] { *exit_code = RunSnapshot(*args); });
}

}  // namespace modelmetrics::cli
