// The ModelDeploymentMetrics algorithm (§2): discover a deployment's owned engine and
// router Pods, check coverage, read at most the source's Pod limit of them within 8 s per request
// (directly: 64 Pods, 32 in flight, 2 s per fetch, 1 MiB cap, no redirects, no proxy, verified
// TLS; or from a Prometheus-compatible store), and merge gauges, windows and cache hits against
// the Pods' baselines into one Snapshot with exact missing[]/partial.
//
// Get() returns:
//   Ok                  and the snapshot;
//   the source's error  unchanged for the ModelDeployment read (404 NotFound for an unknown one);
//   500 InternalError   `list ModelDeployment Pods: <err>`, or an ownership look-up error;
//   503                 `ModelDeployment has no owned metrics Pods`, or
//                       `all ModelDeployment metrics Pods are unreadable: <first Pod's error>`.
//
// Thread-safety: Get() may be called concurrently; callers share the baseline store, so the
// window is the time between two consecutive reads of a Pod, whoever made them.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#ifndef MODELMETRICS_AGGREGATION_AGGREGATOR_H_
#define MODELMETRICS_AGGREGATION_AGGREGATOR_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "aggregation/snapshot.h"
#include "aggregation/snapshot_reader.h"
#include "kube/objects.h"

namespace modelmetrics::net {
class HttpClient;
}

namespace modelmetrics::deployment {

class BaselineStore;
class PodMetricsSource;

struct AggregatorOptions {
  size_t pod_limit = 64;
  size_t max_in_flight = 32;
  std::chrono::milliseconds fetch_timeout{2000};
  std::chrono::milliseconds request_timeout{8000};
  size_t max_body_bytes = size_t{1} << 20;
  std::string ca_file;  // trust for HTTPS Pods; empty: the system bundle
  // The wall clock (observedAt, timestamp) and the monotonic one (windows, baseline ages); tests
  // inject both.
  std::function<WallTime()> now = [] { return WallClock::now(); };
  std::function<SteadyTime()> steady_now = [] { return SteadyClock::now(); };
  // The baseline store; null: the process-wide one.
  BaselineStore* baselines = nullptr;
  // Where samples come from; null: direct scraping with the options above (scrape_source.h).
  // A Prometheus-compatible store is the other (prometheus_source.h).
  std::shared_ptr<PodMetricsSource> pod_source;
  // Told each Pod read's outcome (PodRead::outcome; `error` when a source gave none), e.g. to
  // count them in the server's own metrics. Called on the reading thread.
  std::function<void(std::string_view outcome)> on_pod_read;
};

class Aggregator : public SnapshotReader {
 public:
  Aggregator(ObjectSource* source, AggregatorOptions options = {});
  ~Aggregator() override;

  // Reads the deployment, finishing by the earlier of `deadline` and request_timeout from now.
  Status Get(std::string_view ns, std::string_view name, Snapshot* out,
             std::optional<SteadyTime> deadline = std::nullopt) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_AGGREGATOR_H_
