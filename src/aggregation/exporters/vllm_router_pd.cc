// The vLLM router in prefill/decode mode (§3): it counts P/D requests and errors on its
// own series and exports no processing gauge, which every Pod reports as unsupported.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "exporters/builtin.h"
#include "kube/objects.h"
#include "reasons.h"

namespace modelmetrics::deployment {

const ExporterProfile exporters::kVllmRouterPd{
    .name = kRouterVllm,
    .role = PodRole::kRouter,
    .shape = DeploymentShape::kPrefillDecode,
    .unsupported = {{"vllm_router_running_requests", reason::kVllmRouterPdNoProcessing},
                    {"vllm_router_active_workers", reason::kVllmRouterPdNoProcessing}},
    .windows =
        {
            {"pd-requests", "vllm_router_pd_requests_total", WindowKind::kCounter, Area::kTraffic,
             kUnitRequestsPerSecond},
            {"pd-errors", "vllm_router_pd_errors_total", WindowKind::kCounter, Area::kTraffic,
             kUnitErrorsPerSecond, "pd-requests"},
        },
};

}  // namespace modelmetrics::deployment
