// A Prometheus-compatible store as the source of a snapshot's samples (Prometheus, or anything
// answering its HTTP API: VictoriaMetrics, Thanos, Mimir). Ownership still comes from the objects;
// the store only replaces the scrape, so the snapshot has the same fields, the same missing[]
// reasons and windows computed by us from raw samples, never by `increase()`/`rate()`.
//
// One read: the owned Pods are grouped by exporter profile and split into chunks; each chunk is
// one POST /api/v1/query of a range selector,
//   {__name__=~"<the profile's series>|up", <namespace label>="ns", <pod label>=~"p1|p2", <extra>}
//     [window + stale_after]
// evaluated at the read's wall time minus `settle`, at most max_in_flight at once, each within
// query_timeout, all by the request's deadline, each answer capped at max_response_bytes of decoded
// bytes.
//
// Per Pod, from its raw samples (a store stamps every sample of one scrape with that scrape's
// time, so one timestamp is one scrape):
//   * T1, the newest whole scrape: the latest timestamp of its series (and of `up == 1`) at which
//     every series of the scrape before has a sample too (a store fed by remote write can show
//     part of a scrape). Gauges are the values at T1 and observedAt is T1.
//   * T0, the oldest scrape within `window` of T1. Windows and cache hits are T1's values minus
//     T0's, over T1 - T0: the two scrapes a direct read would have taken. A Pod with one scrape
//     in the window awaits a second sample. A decrease between any two consecutive samples of a
//     series from T0 to T1 is a counter reset, even when the last value is above the first.
//   * The Pod is missing (source "scrape") when the store has no sample of it, when its newest
//     `up` is 0 and newer than T1 (the target is down), or when T1 is older than stale_after.
// The window is anchored at T1, not at the read's time, so two replicas reading between the same
// two scrapes give identical snapshots, and a restarted process has windows at once.
//
// A store keeps no TYPE lines: samples are typed by the profile's rows (histogram rows read
// `_sum`/`_count`, counters `x`/`x_total`, gauges `x`), so an untyped family a direct read
// ignores is read here.
//
// Thread-safety: Read() may be called concurrently.
#ifndef MODELMETRICS_AGGREGATION_PROMETHEUS_SOURCE_H_
#define MODELMETRICS_AGGREGATION_PROMETHEUS_SOURCE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aggregation/pod_source.h"
#include "aggregation/prometheus_query.h"

namespace modelmetrics::net {
class HttpClient;
}

namespace modelmetrics::deployment {

struct PrometheusSourceOptions {
  // The API's base: http(s)://host:port[/prefix], e.g. http://127.0.0.1:9090, or a
  // VictoriaMetrics cluster's http://vmselect:8481/select/0/prometheus.
  std::string url;
  std::chrono::milliseconds window{std::chrono::minutes(2)};
  std::chrono::milliseconds stale_after{std::chrono::seconds(90)};
  // Read the store as of this long ago. A store fed by remote write can show a scrape's samples
  // before all of them have arrived; reading a few seconds back (more than the senders' batch
  // deadline) sees only complete scrapes. VictoriaMetrics' -search.latencyOffset (30 s by
  // default) does the same on its side.
  std::chrono::milliseconds settle{0};
  std::string namespace_label = "namespace";
  std::string pod_label = "pod";
  std::string selector;  // extra matchers, e.g. `job="vllm"`, added to every selector
  // Labels that tell HA replicas' copies of a series apart (store_copies.h): one replica's are
  // read. The Prometheus Operator's, and the usual Thanos and VictoriaMetrics ones.
  std::vector<std::string> replica_labels{"prometheus_replica", "replica", "__replica__"};
  size_t pod_limit = 1000;
  size_t pods_per_query = 100;
  size_t max_in_flight = 4;
  std::chrono::milliseconds query_timeout{5000};
  size_t max_response_bytes = size_t{32} << 20;
  MatrixLimits limits;
  std::string ca_file;  // trust for an https store; empty: the system bundle
  std::string bearer_token;
  std::string basic_user;  // with basic_password: HTTP basic authentication
  std::string basic_password;
  // The read's wall time; tests inject it.
  std::function<WallTime()> now = [] { return WallClock::now(); };
};

// Reads the store's credentials from files (a bearer token, or a basic-auth password; trailing
// whitespace trimmed, each a regular file of at most 4 MiB); "" paths are skipped.
Status LoadPrometheusCredentials(const std::string& bearer_token_file,
                                 const std::string& basic_password_file,
                                 PrometheusSourceOptions* options);

// Checks the options (an http(s) URL, positive durations and bounds, label names); "" when fine.
std::string ValidatePrometheusSourceOptions(const PrometheusSourceOptions& options);

class PrometheusSource : public PodMetricsSource {
 public:
  explicit PrometheusSource(PrometheusSourceOptions options);
  ~PrometheusSource() override;

  size_t pod_limit() const override { return options_.pod_limit; }
  std::vector<PodRead> Read(const ModelDeployment& md, std::span<const Pod> pods,
                            SteadyTime deadline) override;

 private:
  PrometheusSourceOptions options_;
  std::unique_ptr<net::HttpClient> client_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_PROMETHEUS_SOURCE_H_
