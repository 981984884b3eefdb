// The copies a Prometheus-compatible store can hold of one Pod's series, and the one the
// Prometheus source reads.
//
// A store can hold a Pod's series more than once, and a sum over them would double:
//   * HA replicas: two Prometheus servers scrape the Pod and write to one store without
//     deduplication; their series differ only in a replica label (`prometheus_replica`, as the
//     Prometheus Operator names it, `replica` or `__replica__`, as Thanos and VictoriaMetrics
//     set-ups name it). These are read as the stores deduplicate them: one replica's samples,
//     here the replica with the newest sample (ties: the smallest label value), for all the
//     Pod's series, so one timestamp is still one scrape.
//   * several targets: two jobs or two ports scrape the Pod; the series differ in a target label
//     (one the Pod's `up` series carries, e.g. job or instance) that is no replica label. Which
//     target is the right one is the SRE's call: the Pod gets a missing[] reason.
//   * anything else (the same series twice in one answer, or copies that differ in a label `up`
//     does not carry) is caught later by the scrape model's duplicate-series check, the same check
//     a direct read makes, once the target labels are set aside.
// A label the exporter profile groups by (vLLM-Omni's `replica` of a stage) is the exporter's
// own, never a replica label.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_AGGREGATION_STORE_COPIES_H_
#define MODELMETRICS_AGGREGATION_STORE_COPIES_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/prometheus_query.h"

namespace modelmetrics::deployment {

struct CopyRules {
  std::span<const std::string> replica_labels;
  std::span<const std::string_view> exporter_labels;  // the profile's own: never replica labels
  std::string_view namespace_label;
  std::string_view pod_label;
};

struct PodCopy {
  std::vector<const StoreSeries*> series;  // one replica's series of the Pod
  // The labels that name the target and replica (the `up` series' labels and the replica labels,
  // without the namespace and pod labels): constant within one target, so a series is compared
  // without them.
  std::vector<std::string> target_labels;
};

// Picks the copy of the Pod's series (`own`: every series the store returned for the Pod) to read,
// with samples newer than `now_ms` ignored. Returns "" and fills `*out`, or the missing[] reason
// when the Pod is scraped as several targets.
std::string SelectCopy(std::span<const StoreSeries* const> own, const CopyRules& rules,
                       int64_t now_ms, PodCopy* out);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_STORE_COPIES_H_
