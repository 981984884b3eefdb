// The llm-d router's (EPP's) metrics (§3): running requests and ready endpoints, TTFT and
// streaming TPOT, request and error counters (the errors are labelled by kind, so they pair with
// the requests counter).
//
// TTFT and TPOT are read from streaming requests only (llm-d-router's pkg/epp/metrics, ebab6879):
// the router labels TTFT `streaming` and records a non-streaming request's whole duration as its
// TTFT, which would mix into the first-token latency, and it records no TPOT for such a request.
// {streaming!="false"} also reads a router from before the label, whose series carry none. Both
// families (or TTFT's streaming series) appear at the first streaming request, so until then they
// are absent without a fault: a router that serves only non-streaming requests is not partial.
// The request counters come first: at a router's first streaming request their deltas prove the
// previous read, so TTFT and TPOT are windowed from zero rather than awaiting a second sample.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "exporters/builtin.h"
#include "kube/objects.h"
#include "reasons.h"

namespace modelmetrics::deployment {
namespace {

// The router's names before it wrote every family under llm_d_epp_ (llm-d-router 9ccacb734, June
// 2026; it still writes the inference_objective_ and inference_pool_ twins beside, which the
// current names win over), and the Gateway API Inference Extension's before it renamed
// inference_model_ to inference_objective_ (53132d7d9, September 2025). TTFT and TPOT had no
// older name in the router's core.
constexpr std::string_view kBeforeLlmdEpp = "llm-d router before June 2026";
constexpr std::string_view kBeforeObjectives = "inference extension before September 2025";

}  // namespace

const ExporterProfile exporters::kLlmdRouter{
    .name = kRouterLlmd,
    .role = PodRole::kRouter,
    .gauges = {{.key = "router-running",
                .family = "llm_d_epp_request_running",
                .unit = kUnitRequests,
                .older = {{"inference_objective_running_requests", kBeforeLlmdEpp},
                          {"inference_model_running_requests", kBeforeObjectives}}},
               {.key = "router-backends",
                .family = "llm_d_epp_ready_endpoints",
                .unit = "backends",
                .older = {{"inference_pool_ready_pods", kBeforeLlmdEpp}}}},
    .windows =
        {
            {.key = "requests",
             .family = "llm_d_epp_request_total",
             .kind = WindowKind::kCounter,
             .area = Area::kTraffic,
             .unit = kUnitRequestsPerSecond,
             .older = {{"inference_objective_request_total", kBeforeLlmdEpp},
                       {"inference_model_request_total", kBeforeObjectives}}},
            {.key = "request-errors",
             .family = "llm_d_epp_request_error_total",
             .kind = WindowKind::kCounter,
             .area = Area::kTraffic,
             .unit = kUnitErrorsPerSecond,
             .pair = "requests",
             .older = {{"inference_objective_request_error_total", kBeforeLlmdEpp},
                       {"inference_model_request_error_total", kBeforeObjectives}}},
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
        },
    .idle_key = "ttft",
};

}  // namespace modelmetrics::deployment
