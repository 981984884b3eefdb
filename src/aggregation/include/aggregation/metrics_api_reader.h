// Snapshots read from the aggregated API, as `kubectl get --raw` reads them: GET
// /apis/GROUP/VERSION/namespaces/{ns}/modeldeployments/{name}/metrics (metrics_api.h) through
// kube-apiserver (which proxies it to a `modelmetrics serve`), with the kubeconfig's credentials,
// decoded by SnapshotFromJson. The snapshot is the server's: its windows are between that
// server's reads, shared with every other client of it.
//
// Errors: the API's own Status (403 for a user without `get` on modeldeployments/metrics, 404,
// 503, ...) unchanged; an answer that is not a ModelDeploymentMetrics is 500 naming what is
// wrong with it. The client's body cap (32 MiB) and timeout bound each read.
//
// Thread-safety: Get() may be called concurrently (the client is).
#ifndef MODELMETRICS_AGGREGATION_METRICS_API_READER_H_
#define MODELMETRICS_AGGREGATION_METRICS_API_READER_H_

#include <string>
#include <string_view>

#include "aggregation/metrics_api.h"
#include "aggregation/snapshot_reader.h"
#include "kube/kube_api.h"

namespace modelmetrics::deployment {

// The aggregated API's path of one deployment's snapshot, `ns` and `name` percent-encoded.
std::string MetricsApiPath(const MetricsApi& api, std::string_view ns, std::string_view name);

class MetricsApiReader : public SnapshotReader {
 public:
  // `client` must outlive the reader; give it a timeout above the server's 8 s budget.
  explicit MetricsApiReader(KubeApiClient* client, MetricsApi api = {})
      : client_(client), api_(std::move(api)) {}

  Status Get(std::string_view ns, std::string_view name, Snapshot* out,
             std::optional<SteadyTime> deadline = std::nullopt) override;

 private:
  KubeApiClient* client_;
  MetricsApi api_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_METRICS_API_READER_H_
