// The SGLang gateway's (smg's) metrics (§3): active requests and pool size, requests and
// errors (their ratio is reported), and 5xx HTTP responses read by status code.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include <charconv>
#include <cmath>

#include "exporters/builtin.h"
#include "kube/objects.h"
#include "modelmetrics/scrape.h"

namespace modelmetrics::deployment {
namespace {

constexpr std::string_view kHttpResponses = "smg_http_responses_total";

// The family counts as observed once one sample carries a valid status code (its first
// `status_code` label, 100..599) and a valid value.
void ReadHttp5xx(const Scrape& scrape, PodMetrics* out) {
  const MetricFamily* family = scrape.Find(kHttpResponses);
  if (family == nullptr || family->type != MetricType::kCounter) return;
  bool observed = false;
  double errors = 0;
  for (const MetricSample& sample : family->samples) {
    if (sample.name != kHttpResponses && sample.name != "smg_http_responses") continue;
    for (const LabelPair& label : sample.labels) {
      if (label.first != "status_code") continue;
      int code = 0;
      const auto [end, ec] =
          std::from_chars(label.second.data(), label.second.data() + label.second.size(), code);
      const bool valid_code = ec == std::errc() &&
                              end == label.second.data() + label.second.size() && code >= 100 &&
                              code <= 599;
      if (valid_code && std::isfinite(sample.value) && sample.value >= 0) {
        observed = true;
        if (code >= 500) errors += sample.value;
      }
      break;  // only the first status_code label counts
    }
  }
  if (observed) out->windows["http-5xx-responses"] = {0, errors};
}

}  // namespace

const ExporterProfile exporters::kSglangGateway{
    .name = kRouterSglangGateway,
    .role = PodRole::kRouter,
    .gauges = {{"router-running", "smg_worker_requests_active", kUnitRequests},
               {"router-backends", "smg_worker_pool_size", "backends"}},
    .windows =
        {
            {"requests", "smg_router_requests_total", WindowKind::kCounter, Area::kTraffic,
             kUnitRequestsPerSecond},
            {"errors", "smg_router_request_errors_total", WindowKind::kCounter, Area::kTraffic,
             kUnitErrorsPerSecond, "requests"},
            {"http-5xx-responses", kHttpResponses, WindowKind::kCounter, Area::kTraffic,
             "responses/second", "", Applies::kAlways, true},
        },
    .error_ratio = ErrorRatio{"requests", "errors"},
    .reader = ReadHttp5xx,
    .reader_families = {{kHttpResponses, MetricType::kCounter}},
};

}  // namespace modelmetrics::deployment
