// `modelmetrics ui [-n NS | -A] (--objects FILE | --kubeconfig FILE | --in-cluster)
//                  [--aggregated-api | --source prometheus --prometheus-url URL ...]
//                  [--port N] [--interval 5s]`
// reads every ModelDeployment the objects list every --interval and serves the page on loopback.
// Each snapshot is computed here, as `snapshot` would (scraping the Pods, or from the store), or
// with --aggregated-api read from the aggregated API through kube-apiserver, as
// `kubectl get --raw` would (the way in from outside the cluster, where Pod IPs do not route). It
// prints the page's URL (with its access token in the fragment) and serves until SIGINT/SIGTERM or
// --duration.
//
// Exit codes: 0 after a clean stop; 2 for bad flags or a source that cannot be opened; 1 when the
// server cannot start.
#include "ui_command.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "aggregation/aggregator.h"
#include "aggregation/metrics_api_reader.h"
#include "base/duration.h"
#include "kube/kube_api.h"
#include "object_source_flags.h"
#include "read_limit_flags.h"
#include "sample_source_flags.h"
#include "stop_signals.h"
#include "ui/ui_server.h"

namespace modelmetrics::cli {
namespace {

// Reads through kube-apiserver: beyond the server's 8 s budget, so its own answer (a 503 naming
// what was slow) arrives rather than our timeout.
constexpr std::chrono::milliseconds kApiReadTimeout{10000};

}  // namespace

int RunUi(const UiArgs& args) {
  const sigset_t signals = BlockStopSignals();
  std::unique_ptr<ObjectSourceHandle> source;
  if (const base::Status opened = OpenObjectSource(args.source, &source); !opened.ok()) {
    std::cerr << "modelmetrics ui: " << opened.message() << "\n";
    return 2;
  }
  // Where snapshots come from: the aggregated API, or an aggregator here.
  std::unique_ptr<deployment::KubeApiClient> api_client;
  std::unique_ptr<deployment::SnapshotReader> snapshots;
  if (args.aggregated_api) {
    const deployment::KubeConfig* config = source->kube_config();
    if (config == nullptr || args.samples.from_store()) {
      std::cerr << "modelmetrics ui: --aggregated-api reads through the Kubernetes API: pass "
                   "--kubeconfig FILE or --in-cluster, and no --source\n";
      return 2;
    }
    api_client = std::make_unique<deployment::KubeApiClient>(*config, kApiReadTimeout);
    snapshots = std::make_unique<deployment::MetricsApiReader>(api_client.get());
  } else {
    deployment::AggregatorOptions options;
    base::Status status = ApplyReadLimitFlags(args.limits, &options);
    options.ca_file = args.ca_file;
    if (status.ok() && args.samples.from_store()) {
      status = OpenSampleSource(args.samples, std::nullopt, &options.pod_source);
    }
    if (!status.ok()) {
      std::cerr << "modelmetrics ui: " << status.message() << "\n";
      return 2;
    }
    snapshots = std::make_unique<deployment::Aggregator>(source->get(), options);
  }
  ui::UiOptions ui_options;
  ui_options.address = args.address;
  ui_options.port = args.port;
  ui_options.ns = args.all_namespaces ? "" : args.ns;
  base::ParseDuration(args.interval, &ui_options.interval);
  if (args.aggregated_api) ui_options.read_timeout = kApiReadTimeout;
  ui::UiServer server(source->get(), snapshots.get(), ui_options);
  if (const base::Status started = server.Start(); !started.ok()) {
    std::cerr << "modelmetrics ui: " << started.message() << "\n";
    return 1;
  }
  std::cout << "modelmetrics ui: open " << server.url() << "\n" << std::flush;
  std::optional<std::chrono::milliseconds> duration;
  if (!args.duration.empty()) {
    duration.emplace();
    base::ParseDuration(args.duration, &*duration);
  }
  // A signal that came before this point is pending, and WaitForStop takes it at once (a
  // StopPending check here would call it "during start-up" after the URL was printed).
  WaitForStop(signals, duration, "ui");
  server.Stop();
  return 0;
}

}  // namespace modelmetrics::cli
