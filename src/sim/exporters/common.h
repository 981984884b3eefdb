// What several simulated exporters share: the routers' duration buckets and worker gauges, the
// Python servers' padding, and the container arguments every Pod of a role or router gets.
//
// Thread-safety: constants and pure functions.
#ifndef MODELMETRICS_SIM_EXPORTERS_COMMON_H_
#define MODELMETRICS_SIM_EXPORTERS_COMMON_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/deployment_sim.h"
#include "sim_exporter.h"

namespace modelmetrics::sim::exporters {

// vllm-router's and smg's request-duration buckets.
extern const std::vector<double> kRouterDurationBuckets;

// The FastAPI instrumentator's per-handler histograms (vLLM, SGLang).
inline constexpr PaddingStyle kPythonServerPadding{
    Style::kPython, "http_request_duration_highr_seconds_by_handler", false};
// The Rust router's per-handler histograms, with vllm-router's blank lines.
inline constexpr PaddingStyle kRustRouterPadding{Style::kRust,
                                                 "http_request_duration_seconds_by_handler", true};

// Models without counters or gauges of their own.
struct NoCounters {
  void Halve() {}
};
struct NoGauges {};

// `labels` followed by `extra`.
Labels With(Labels labels, const Labels& extra);

// `flag` or `flag=...` is among `args`.
bool HasArg(const std::vector<std::string>& args, std::string_view flag);

// Appends the Pod's role's extra arguments (engines).
void AppendRoleArgs(const SimPodContext& pod, SimContainer* container);

// A Python-launched Rust router's arguments: its ports and the workers (P/D: --prefill and
// --decode URLs).
std::vector<std::string> RouterArgs(const SimPodContext& pod);

// Requests in flight per worker at the end of a tick: the load spread evenly, one draw each.
std::vector<double> WorkerRunning(const TickLoad& load, const ExporterConfig& config, Rng& rng);

}  // namespace modelmetrics::sim::exporters

#endif  // MODELMETRICS_SIM_EXPORTERS_COMMON_H_
