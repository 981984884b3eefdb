// Answers an authorised custom metrics request (custom_metrics_api.h) from the shared deployment
// reads (shared_reads.h), so an autoscaler's calls and the snapshot's clients share one read of
// each deployment, and a metric call accepts a read up to `reuse` old: however many HPAs and KEDA
// scalers ask, a Pod is read at most once in that time.
//
//   object metric, one deployment   its read, then ReadMetric (snapshot_metrics.h): one item, or
//                                   the read's error, or 404 NotFound naming why there is no value
//   object metric, `*`              every ModelDeployment of the namespace: an item for each that
//                                   has a value (prometheus-adapter's list semantics)
//   pods metric                     the Pods the label selector picks that belong to a deployment,
//                                   read per deployment: an item per Pod that has its own value;
//                                   no Pod picked: 404; Pods but no value: an empty list, which
//                                   the HPA takes as an error and holds
//
// Thread-safety: Serve() may be called concurrently. `respond` is called once, from the calling
// thread or a read's worker.
#ifndef MODELMETRICS_APISERVER_CUSTOM_METRIC_READS_H_
#define MODELMETRICS_APISERVER_CUSTOM_METRIC_READS_H_

#include <chrono>
#include <functional>
#include <string>

#include "apiserver/shared_reads.h"
#include "custom_metrics_api.h"
#include "kube/objects.h"
#include "net/http_server.h"

namespace modelmetrics::deployment {

class CustomMetricReads {
 public:
  // `reads` and `objects` (may be null: `*` and pods metrics answer 501) outlive this.
  // `on_admission` counts each read's admission (the server's metrics).
  CustomMetricReads(SharedReads* reads, ObjectSource* objects, std::chrono::milliseconds reuse,
                    std::function<void(SharedReads::Admission)> on_admission);

  // Answers `request` (an object or pods metric) for `scope`, selecting Pods by `label_selector`
  // (pods metrics), with reads finishing by `deadline`.
  void Serve(const CustomMetricsRequest& request, const MetricScope& scope,
             const std::string& label_selector, SteadyTime deadline, const net::Responder& respond);

 private:
  struct Gather;
  void ServeOne(const CustomMetricsRequest& request, const SnapshotMetric& metric,
                const MetricScope& scope, SteadyTime deadline, const net::Responder& respond);
  void ServeMany(const CustomMetricsRequest& request, const SnapshotMetric& metric,
                 const MetricScope& scope, const std::string& label_selector, SteadyTime deadline,
                 const net::Responder& respond);
  SharedReads::Admission Submit(const std::string& ns, const std::string& name, SteadyTime deadline,
                                SharedReads::Callback done);

  SharedReads* reads_;
  ObjectSource* objects_;
  std::chrono::milliseconds reuse_;
  std::function<void(SharedReads::Admission)> on_admission_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_CUSTOM_METRIC_READS_H_
