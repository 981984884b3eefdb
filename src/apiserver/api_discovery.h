// The discovery documents of the metrics API, in each form kube-apiserver and kubectl ask for:
//   GET /apis               APIGroupList (legacy), or APIGroupDiscoveryList (aggregated
//                           discovery, apidiscovery.k8s.io v2 or v2beta1) when the Accept header
//                           asks for it first
//   GET /apis/GROUP         APIGroup
//   GET /apis/GROUP/VERSION APIResourceList: `modeldeployments/metrics` and
//                           `modeldeploymentmetrics` (short name mdm), both namespaced, kind
//                           ModelDeploymentMetrics, verbs [get]
// In the aggregated form the subresource hangs under a `modeldeployments` entry with an empty
// responseKind and no verbs (the objects themselves are another API's), which is how
// k8s.io/apiserver converts a subresource whose parent it does not serve; clients drop that
// parent and keep the subresource.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_APISERVER_API_DISCOVERY_H_
#define MODELMETRICS_APISERVER_API_DISCOVERY_H_

#include <string>
#include <string_view>

#include "aggregation/metrics_api.h"

namespace modelmetrics::deployment {

enum class DiscoveryForm { kLegacy, kAggregatedV2, kAggregatedV2Beta1 };

// The form an Accept header asks for: its first media type this server can answer (JSON only;
// a `q=0` entry never matches); legacy when none names aggregated discovery.
DiscoveryForm NegotiateDiscovery(std::string_view accept);
// `application/json`, or the aggregated form's media type with its g, v and as parameters.
std::string DiscoveryContentType(DiscoveryForm form);

// /apis in `form`; with `custom_metrics`, custom.metrics.k8s.io's group after the API's own.
std::string ApisJson(const MetricsApi& api, DiscoveryForm form, bool custom_metrics = false);
// /apis/GROUP
std::string ApiGroupJson(const MetricsApi& api);
// /apis/GROUP/VERSION
std::string ApiResourceListJson(const MetricsApi& api);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_API_DISCOVERY_H_
