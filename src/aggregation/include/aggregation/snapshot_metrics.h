// The snapshot's values as named metrics: one number per deployment (optionally one scope of it)
// or per Pod, which is what an autoscaler reads (the custom metrics API serves them,
// apiserver/custom_metrics.h). Every name is the snapshot's own:
//   gauges       processing and queueing names (`running`, `waiting`, `router-running`, ...)
//   windows      latency, traffic and transfer names (`ttft`, `requests`, `error-ratio`, ...)
//   cache hits   `<tier>-hit-rate` (`local-prefix-hit-rate`, `device-prefix-hit-rate`, ...)
//   utilization  `<name>` for the mean over Pods and `<name>-max` (`kv-cache-usage`, ...)
//
// How a value is made from the snapshot's entries of one scope (or of every scope): gauges and
// per-second rates are summed, as the snapshot sums Pods; other windows (latency, ratios, sizes)
// are their entries' mean weighted by samples; a hit rate is hits over queries of the scope's Pods;
// utilization is the Pod-weighted mean, or the max.
//
// The missing-value rule: a value is never made from part of what it covers. When missing[] names
// one of the metric's sources (or the whole read) for a Pod of the scope, or for the deployment,
// with a reason that sets `partial` (or the utilization extension's absence), the metric has no
// value: NotFound, with that entry in the message. So an autoscaler holds rather than read a sum
// over fewer Pods than the role has. Reasons that leave `partial` unset (idle windows, sources the
// exporter never writes) do not block the others' value; with no entry at all the metric is
// NotFound too.
//
// Thread-safety: pure functions over immutable data.
#ifndef MODELMETRICS_AGGREGATION_SNAPSHOT_METRICS_H_
#define MODELMETRICS_AGGREGATION_SNAPSHOT_METRICS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/snapshot.h"

namespace modelmetrics::deployment {

enum class MetricKind { kGauge, kWindow, kCacheHitRate, kUtilizationMean, kUtilizationMax };

struct SnapshotMetric {
  std::string name;
  MetricKind kind = MetricKind::kGauge;
  // The missing[] sources that are about this metric: the families its rows read (a ratio's as
  // "a+b"), a cache tier's name, each once.
  std::vector<std::string> sources;
  std::string tier;  // kCacheHitRate: the cacheHits scope it reads

  // Whether a Pod has its own value (gauges not split by stage or edge, utilization's mean).
  bool PerPod() const { return kind == MetricKind::kGauge || kind == MetricKind::kUtilizationMean; }
};

// Every metric a built-in exporter profile can report, each name once, sorted by name.
const std::vector<SnapshotMetric>& SnapshotMetrics();
// The metric named `name`, or null.
const SnapshotMetric* FindSnapshotMetric(std::string_view name);

struct MetricReading {
  double value = 0;
  // Windowed values (windows, hit rates): the longest sampling window among the entries.
  std::optional<double> window_seconds;
  WallTime observed_at;  // the latest `observedAt` among the entries
};

// `metric` over the entries of `scope` ("" for every scope) of `snapshot`, under the rule above.
Status ReadMetric(const Snapshot& snapshot, const SnapshotMetric& metric, std::string_view scope,
                  MetricReading* out);

// Pod `pod`'s own value of a PerPod() metric (from the snapshot's `pods`): NotFound when the Pod
// was not read, is not of `scope` (when given), has no value of it, or missing[] names it for the
// Pod; Unavailable when it was not read because the deployment has more Pods than the Pod limit
// (the caller fails the whole list: a Pod left out would count as 0 on an HPA's scale-up).
Status ReadPodMetric(const Snapshot& snapshot, const SnapshotMetric& metric, std::string_view pod,
                     std::string_view scope, MetricReading* out);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_SNAPSHOT_METRICS_H_
