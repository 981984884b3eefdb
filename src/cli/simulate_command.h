// `modelmetrics simulate pipeline`: runs the pipeline simulator (src/sim/pipeline_sim.h) and
// serves its /metrics until --duration has passed. `modelmetrics simulate deployment`: serves the
// Pods of a simulated ModelDeployment (src/sim/deployment_sim.h) and writes its objects file.
#ifndef MODELMETRICS_CLI_SIMULATE_COMMAND_H_
#define MODELMETRICS_CLI_SIMULATE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace modelmetrics::cli {

void AddSimulateCommand(CLI::App& app, int* exit_code);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_SIMULATE_COMMAND_H_
