// The llm-d router's (EPP's) metrics (reference §3): running requests and ready endpoints, TTFT and
// streaming TPOT, request and error counters (the errors are labelled by kind, so they pair with
// the requests counter).
#include "deployment/objects.h"
#include "exporters/builtin.h"

namespace modelmetrics::deployment {

const ExporterProfile exporters::kLlmdRouter{
    .name = kRouterLlmd,
    .role = PodRole::kRouter,
    .gauges = {{"router-running", "llm_d_epp_request_running", kUnitRequests},
               {"router-backends", "llm_d_epp_ready_endpoints", "backends"}},
    .windows =
        {
            {"ttft", "llm_d_epp_request_ttft_seconds", WindowKind::kHistogram, Area::kLatency,
             kUnitSeconds},
            {"tpot", "llm_d_epp_request_streaming_tpot_seconds", WindowKind::kHistogram,
             Area::kLatency, kUnitSeconds},
            {"requests", "llm_d_epp_request_total", WindowKind::kCounter, Area::kTraffic,
             kUnitRequestsPerSecond},
            {"request-errors", "llm_d_epp_request_error_total", WindowKind::kCounter,
             Area::kTraffic, kUnitErrorsPerSecond, "requests"},
        },
    .idle_key = "ttft",
};

}  // namespace modelmetrics::deployment
