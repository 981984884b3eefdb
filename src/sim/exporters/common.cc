// See common.h.
#include "common.h"

#include <algorithm>

namespace modelmetrics::sim::exporters {

const std::vector<double> kRouterDurationBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,     2.5,  5,     10,   15,  30,
                                                    45,    60,    90,   120,   180,  240};

Labels With(Labels labels, const Labels& extra) {
  labels.insert(labels.end(), extra.begin(), extra.end());
  return labels;
}

bool HasArg(const std::vector<std::string>& args, std::string_view flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& arg) {
    return arg == flag ||
           (arg.size() > flag.size() && arg.starts_with(flag) && arg[flag.size()] == '=');
  });
}

void AppendRoleArgs(const SimPodContext& pod, SimContainer* container) {
  if (pod.role == nullptr) return;
  container->args.insert(container->args.end(), pod.role->extra_args.begin(),
                         pod.role->extra_args.end());
}

std::vector<std::string> RouterArgs(const SimPodContext& pod) {
  std::vector<std::string> args = {"--host", "0.0.0.0",           "--port",
                                   "8000",   "--prometheus-port", pod.port};
  if (!pod.prefill_decode) {
    args.push_back("--worker-urls");
    for (const WorkerRef& w : pod.workers) args.push_back(w.url);
    return args;
  }
  args.push_back("--pd-disaggregation");
  for (RoleKind kind : {RoleKind::kPrefill, RoleKind::kDecode}) {
    for (const WorkerRef& w : pod.workers) {
      if (w.role != kind) continue;
      args.insert(args.end(), {kind == RoleKind::kPrefill ? "--prefill" : "--decode", w.url});
    }
  }
  return args;
}

std::vector<double> WorkerRunning(const TickLoad& load, const ExporterConfig& config, Rng& rng) {
  std::vector<double> running;
  running.reserve(config.workers.size());
  for (size_t i = 0; i < config.workers.size(); ++i) {
    running.push_back(
        rng.Poisson(load.in_flight_mean / static_cast<double>(config.workers.size())));
  }
  return running;
}

}  // namespace modelmetrics::sim::exporters
