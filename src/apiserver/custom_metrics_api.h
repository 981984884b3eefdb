// The custom metrics API (custom.metrics.k8s.io v1beta2 and v1beta1) as the HPA controller and
// prometheus-adapter speak it: its paths, query parameters, discovery documents and the
// MetricValueList it answers, for the snapshot's metrics (aggregation/snapshot_metrics.h).
//
// Paths, under /apis/custom.metrics.k8s.io/{v1beta2|v1beta1}:
//   (the version)                                               APIResourceList
//   namespaces/NS/modeldeployments.worker.gpustack.ai/NAME/M    one deployment (NAME `*`: every
//                                                               deployment of NS that has M)
//   namespaces/NS/pods/*/M?labelSelector=S                      each selected engine Pod's own M
// `*` may come percent-encoded (`%2A`, as client-go sends it). `metricLabelSelector` chooses the
// snapshot scope: `role=R` (engine/R: a valid label value, so an HPA object can carry it),
// `scope=router`, or `scope=<any scope>` for clients that need no valid label value; without it,
// every scope (MetricSelector).
//
// Wire shapes (k8s.io/metrics' types): v1beta2 items carry `metric: {name, selector}` and
// `windowSeconds`; v1beta1 items carry `metricName`, `selector` and the window as `window`. A
// value is a Quantity string of at most micro precision (`420m`, `19556u`, `3`).
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_APISERVER_CUSTOM_METRICS_API_H_
#define MODELMETRICS_APISERVER_CUSTOM_METRICS_API_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "aggregation/snapshot.h"
#include "aggregation/snapshot_metrics.h"

namespace modelmetrics::deployment {

inline constexpr std::string_view kCustomMetricsGroup = "custom.metrics.k8s.io";
// The object the deployment metrics describe: GPUStack's ModelDeployment, as the HPA's RESTMapper
// spells its resource in the path.
inline constexpr std::string_view kModelDeploymentResource = "modeldeployments.worker.gpustack.ai";
inline constexpr std::string_view kModelDeploymentKind = "ModelDeployment";
inline constexpr std::string_view kModelDeploymentApiVersion = "worker.gpustack.ai/v1alpha1";
inline constexpr std::string_view kPodsResource = "pods";

enum class CustomMetricsVersion { kV1Beta2, kV1Beta1 };  // v1beta2 is preferred
std::string_view VersionName(CustomMetricsVersion version);

enum class CustomMetricsPath { kNone, kGroup, kResourceList, kObjectMetric, kPodsMetric };

// A parsed path under the group.
struct CustomMetricsRequest {
  CustomMetricsPath kind = CustomMetricsPath::kNone;
  CustomMetricsVersion version = CustomMetricsVersion::kV1Beta2;
  std::string ns;
  std::string resource;  // kModelDeploymentResource or kPodsResource
  std::string name;      // a deployment's name, or "*"
  std::string metric;
};

// kNone for a path outside the group; for a metric path of the group that names an unknown
// version, resource or shape: BadRequest or NotFound as prometheus-adapter's server answers.
Status ParseCustomMetricsPath(std::string_view path, CustomMetricsRequest* out);

// What a `metricLabelSelector` chose: the snapshot scope ("" for every scope) and the label and
// value that chose it (written back as the item's selector).
struct MetricScope {
  std::string scope;
  std::string label;  // `role` or `scope`; "" without a selector
  std::string value;
};

// The scope of a `metricLabelSelector` (percent-decoded); BadRequest naming the term for a label
// it does not know, an operator other than `=`/`==`, or two terms.
Status MetricSelector(std::string_view selector, MetricScope* out);

// Discovery: /apis/custom.metrics.k8s.io, /apis/custom.metrics.k8s.io/VERSION, and the group's
// entry of /apis in either form (legacy APIGroup, or aggregated discovery's group object).
std::string CustomMetricsGroupJson();
std::string CustomMetricsResourceListJson(CustomMetricsVersion version);
nlohmann::ordered_json CustomMetricsApisGroupJson(bool aggregated);

// One item of a MetricValueList.
struct MetricItem {
  std::string kind;  // kModelDeploymentKind or "Pod"
  std::string ns;
  std::string name;
  std::string metric;
  MetricScope scope;
  MetricReading reading;
};

std::string MetricValueListJson(CustomMetricsVersion version, const std::vector<MetricItem>& items);

// A Quantity for `value`, rounded to micro precision (Kubernetes' DecimalSI suffixes m and u).
std::string FormatQuantity(double value);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_CUSTOM_METRICS_API_H_
