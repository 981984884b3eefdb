// Many simulated deployments at once, for fleet-scale runs (scripts/fleet.sh): `deployments`
// DeploymentSims in one namespace, each with `pods` Pods, alternating vLLM and SGLang engines,
// every fourth fronted by an llm-d router (which takes one of its Pods), some writing an upstream
// variant (sim_variant.h; fleet_sim.cc says which). One objects file (a
// `kubectl get -o json` List of every deployment's objects) and one Prometheus file_sd file (every
// Pod's target with `namespace`/`pod` labels) describe the whole fleet.
//
// Thread-safety: one thread drives a FleetSim; each Pod serves on its own thread.
#ifndef MODELMETRICS_SIM_FLEET_SIM_H_
#define MODELMETRICS_SIM_FLEET_SIM_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sim/deployment_sim.h"

namespace modelmetrics::sim {

struct FleetSimOptions {
  int deployments = 32;
  int pods = 16;  // per deployment, the router's included
  // More vLLM deployments of these sizes, named <prefix>-<n>pods (a 64- or 1,000-Pod one).
  std::vector<int> extra_sizes;
  std::string ns = "fleet";
  std::string name_prefix = "model";  // deployments are <prefix>-00, <prefix>-01, ...
  uint64_t seed = 1;
  double requests_per_second = 8;  // per deployment
  std::string objects_file;        // non-empty: written at Start
  std::string file_sd_file;        // non-empty: written at Start
};

class FleetSim {
 public:
  explicit FleetSim(FleetSimOptions options);
  ~FleetSim();

  // Starts every deployment and writes the files; false with `*error` on the first failure.
  Status Start();
  void Stop();

  const std::vector<std::unique_ptr<DeploymentSim>>& deployments() const { return sims_; }
  size_t PodCount() const;

 private:
  FleetSimOptions options_;
  std::vector<std::unique_ptr<DeploymentSim>> sims_;
};

// `modelmetrics simulate fleet`: starts the fleet, prints a summary, serves for `duration` (or
// until `wait` says stop), stops and removes the objects and file_sd files.
int RunFleetSimulator(const FleetSimOptions& options, std::chrono::milliseconds duration,
                      std::ostream& out, std::ostream& err, const StopWait& wait = {});

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_FLEET_SIM_H_
