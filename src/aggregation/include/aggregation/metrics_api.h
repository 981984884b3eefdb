// Where the ModelDeploymentMetrics API lives: its group and version (settings, so it can sit
// beside another owner of the default group) and the fixed resources and kind. Every
// path, discovery and OpenAPI document, Status detail, authorisation request and the snapshot's
// own apiVersion are spelled from one MetricsApi.
//
// Thread-safety: plain values.
#ifndef MODELMETRICS_AGGREGATION_METRICS_API_H_
#define MODELMETRICS_AGGREGATION_METRICS_API_H_

#include <string>
#include <string_view>

namespace modelmetrics::deployment {

inline constexpr std::string_view kDefaultMetricsGroup = "worker.gpustack.ai";
inline constexpr std::string_view kDefaultMetricsVersion = "v1";
inline constexpr std::string_view kMetricsResource = "modeldeployments";
inline constexpr std::string_view kMetricsSingularResource = "modeldeployment";
inline constexpr std::string_view kMetricsSubresource = "metrics";
inline constexpr std::string_view kMetricsKind = "ModelDeploymentMetrics";
// The same snapshot as a resource of its own (`kubectl get modeldeploymentmetrics chat`, short
// name `mdm`): clients list resources, never subresources, so this is what `kubectl
// api-resources` and `kubectl explain` can show, as metrics-server's `pods` in metrics.k8s.io.
inline constexpr std::string_view kMetricsObjectResource = "modeldeploymentmetrics";
inline constexpr std::string_view kMetricsShortName = "mdm";
inline constexpr std::string_view kDefaultMetricsApiVersion = "worker.gpustack.ai/v1";

struct MetricsApi {
  std::string group{kDefaultMetricsGroup};
  std::string version{kDefaultMetricsVersion};

  // Empty when both are valid (kube_names.h), else why not, naming the setting.
  std::string Validate() const;

  std::string GroupVersion() const { return group + "/" + version; }  // worker.gpustack.ai/v1
  std::string GroupPath() const { return "/apis/" + group; }
  std::string VersionPath() const { return GroupPath() + "/" + version; }
  // VersionPath()/namespaces/{ns}/modeldeployments/{name}/metrics, `ns` and `name` as given.
  std::string MetricsPath(std::string_view ns, std::string_view name) const;
  // VersionPath()/namespaces/{ns}/modeldeploymentmetrics/{name}
  std::string ObjectPath(std::string_view ns, std::string_view name) const;

  bool operator==(const MetricsApi&) const = default;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_METRICS_API_H_
