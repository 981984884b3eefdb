// Where a ModelDeploymentMetrics snapshot comes from, for code that only reads them (the web
// page's poller): the Aggregator computes one here (aggregator.h), a MetricsApiReader asks the
// aggregated API through kube-apiserver for the one a `serve` computed (metrics_api_reader.h).
//
// Get() returns Ok and the snapshot, or the Kubernetes-style status the read failed with (404 for
// an unknown deployment, 503 when no Pod could be read, ...), by the earlier of `deadline` and
// the reader's own timeout.
//
// Thread-safety: implementations allow concurrent Get() calls.
#ifndef MODELMETRICS_AGGREGATION_SNAPSHOT_READER_H_
#define MODELMETRICS_AGGREGATION_SNAPSHOT_READER_H_

#include <chrono>
#include <optional>
#include <string_view>

#include "aggregation/snapshot.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {

class SnapshotReader {
 public:
  virtual ~SnapshotReader() = default;
  virtual Status Get(std::string_view ns, std::string_view name, Snapshot* out,
                     std::optional<SteadyTime> deadline = std::nullopt) = 0;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_SNAPSHOT_READER_H_
