// `modelmetrics snapshot`: one ModelDeploymentMetrics snapshot (or a watch) on the terminal.
#ifndef MODELMETRICS_CLI_SNAPSHOT_COMMAND_H_
#define MODELMETRICS_CLI_SNAPSHOT_COMMAND_H_

#include <CLI/CLI.hpp>

namespace modelmetrics::cli {

void AddSnapshotCommand(CLI::App& app, int* exit_code);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_SNAPSHOT_COMMAND_H_
