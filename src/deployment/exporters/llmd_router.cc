// The llm-d router's (EPP's) metrics (reference §3): running requests and ready endpoints, TTFT and
// streaming TPOT, request and error counters (the errors are labelled by kind, so they pair with
// the requests counter).
//
// TTFT and TPOT are read from streaming requests only (llm-d-router's pkg/epp/metrics, ebab6879):
// the router labels TTFT `streaming` and records a non-streaming request's whole duration as its
// TTFT, which would mix into the first-token latency, and it records no TPOT for such a request.
// {streaming!="false"} also reads a router from before the label, whose series carry none. Both
// families (or TTFT's streaming series) appear at the first streaming request, so until then they
// are absent without a fault: a router that serves only non-streaming requests is not partial.
#include "deployment/objects.h"
#include "exporters/builtin.h"
#include "reasons.h"

namespace modelmetrics::deployment {

const ExporterProfile exporters::kLlmdRouter{
    .name = kRouterLlmd,
    .role = PodRole::kRouter,
    .gauges = {{"router-running", "llm_d_epp_request_running", kUnitRequests},
               {"router-backends", "llm_d_epp_ready_endpoints", "backends"}},
    .windows =
        {
            {.key = "ttft",
             .family = "llm_d_epp_request_ttft_seconds",
             .unit = kUnitSeconds,
             .lazy = true,
             .select = {{.name = "streaming", .value = "false", .negate = true}},
             .lazy_reason = reason::kLlmdNoStreamingRequest},
            {.key = "tpot",
             .family = "llm_d_epp_request_streaming_tpot_seconds",
             .unit = kUnitSeconds,
             .lazy = true,
             .lazy_reason = reason::kLlmdNoStreamingRequest},
            {"requests", "llm_d_epp_request_total", WindowKind::kCounter, Area::kTraffic,
             kUnitRequestsPerSecond},
            {"request-errors", "llm_d_epp_request_error_total", WindowKind::kCounter,
             Area::kTraffic, kUnitErrorsPerSecond, "requests"},
        },
    .idle_key = "ttft",
};

}  // namespace modelmetrics::deployment
