// The vLLM router's metrics for an aggregated deployment (§3): running requests and the
// workers it reports, successful requests, errors and exhausted retries.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "exporters/builtin.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {

const ExporterProfile exporters::kVllmRouter{
    .name = kRouterVllm,
    .role = PodRole::kRouter,
    .shape = DeploymentShape::kAggregated,
    .gauges = {{"router-running", "vllm_router_running_requests", kUnitRequests},
               {"router-reported-workers", "vllm_router_active_workers", "workers"}},
    .windows =
        {
            {"successful-requests", "vllm_router_requests_total", WindowKind::kCounter,
             Area::kTraffic, kUnitRequestsPerSecond},
            {"errors", "vllm_router_request_errors_total", WindowKind::kCounter, Area::kTraffic,
             kUnitErrorsPerSecond, "successful-requests"},
            {"retries-exhausted", "vllm_router_retries_exhausted_total", WindowKind::kCounter,
             Area::kTraffic, "events/second", "successful-requests"},
        },
};

}  // namespace modelmetrics::deployment
