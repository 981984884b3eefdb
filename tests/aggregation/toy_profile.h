// A toy engine's exporter profile, the whole of what the deployment half needs to read a new
// exporter: registered at run time (RegisterExporter) by toy_exporter_test.cc and
// toy_deployment_test.cc, which reads the toy's simulated Pods (sim/toy_sim_exporter.h).
#ifndef MODELMETRICS_TESTS_DEPLOYMENT_TOY_PROFILE_H_
#define MODELMETRICS_TESTS_DEPLOYMENT_TOY_PROFILE_H_

#include "aggregation/exporter_profile.h"

namespace modelmetrics::deployment::toy {

inline const ExporterProfile kToy{
    .name = "toyllm",
    .role = PodRole::kEngine,
    .gauges = {{"running", "toy_active_requests", kUnitRequests},
               {"waiting", "toy_queued_requests", kUnitRequests, true}},
    .windows = {{"ttft", "toy_first_token_seconds", WindowKind::kHistogram, Area::kLatency,
                 kUnitSeconds},
                {"requests", "toy_requests_total", WindowKind::kCounter, Area::kTraffic,
                 kUnitRequestsPerSecond}},
    .idle_key = "ttft",
    .cache = {{"local-prefix", "toy_cache_hits", "toy_cache_lookups", "toy_cache"}},
};

}  // namespace modelmetrics::deployment::toy

#endif  // MODELMETRICS_TESTS_DEPLOYMENT_TOY_PROFILE_H_
