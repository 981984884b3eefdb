// `modelmetrics simulate pipeline`: runs the pipeline simulator (src/sim/pipeline_sim.h) and
// serves its /metrics until --duration has passed. `modelmetrics simulate deployment`: serves the
// Pods of a simulated ModelDeployment (src/sim/deployment_sim.h) and writes its objects file.
// `modelmetrics simulate fleet`: many deployments at once (src/sim/fleet_sim.h). Their flags are
// in main.cc; each run ends at its duration or at SIGINT/SIGTERM.
#ifndef MODELMETRICS_CLI_SIMULATE_COMMAND_H_
#define MODELMETRICS_CLI_SIMULATE_COMMAND_H_

#include <string>
#include <vector>

#include "sim/deployment_sim.h"
#include "sim/fleet_sim.h"
#include "sim/pipeline_sim.h"

namespace modelmetrics::cli {

struct SimulatePipelineArgs {
  sim::PipelineSimOptions options;
  std::string duration = "60s";
  std::string log_interval = "10s";
};
int RunSimulatePipeline(SimulatePipelineArgs args);

struct SimulateDeploymentArgs {
  sim::DeploymentSimOptions options;
  std::string roles = "server";         // server | pd
  int replicas = 1;                     // Pods per role
  std::string router = "none";          // a simulated router's name, or none
  std::vector<std::string> faults;      // POD=FAULT, each checked by CheckPodFault
  std::vector<std::string> rate_steps;  // RATE@AFTER, each checked by CheckRateStep
  std::string duration = "60s";
};
int RunSimulateDeployment(const SimulateDeploymentArgs& args);

struct SimulateFleetArgs {
  sim::FleetSimOptions options;
  std::string duration = "60s";
};
int RunSimulateFleet(const SimulateFleetArgs& args);

// "" for "POD=FAULT" with a known fault name, else what is wrong.
std::string CheckPodFault(const std::string& text);
// RATE@AFTER (e.g. 40@30s): "" when `text` is one, else why not; ParseRateStep reads it.
std::string CheckRateStep(const std::string& text);
bool ParseRateStep(const std::string& text, sim::DeploymentSimOptions::RateStep* out);
// The simulated routers' names, and "none".
std::vector<std::string> RouterChoices();

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_SIMULATE_COMMAND_H_
