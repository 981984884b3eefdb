// `modelmetrics serve --config FILE`: the aggregated API server (src/deployment/api_server.h).
#ifndef MODELMETRICS_CLI_SERVE_COMMAND_H_
#define MODELMETRICS_CLI_SERVE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace modelmetrics::cli {

void AddServeCommand(CLI::App& app, int* exit_code);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_SERVE_COMMAND_H_
