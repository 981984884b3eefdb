// `modelmetrics demo`: the README's main job; simulated deployments, the API server and live
// tables.
#ifndef MODELMETRICS_CLI_DEMO_COMMAND_H_
#define MODELMETRICS_CLI_DEMO_COMMAND_H_

#include <CLI/CLI.hpp>

namespace modelmetrics::cli {

void AddDemoCommand(CLI::App& app, int* exit_code);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_DEMO_COMMAND_H_
