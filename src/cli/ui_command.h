// `modelmetrics ui`: the web page of deployment snapshots (ui/ui_server.h) on loopback.
#ifndef MODELMETRICS_CLI_UI_COMMAND_H_
#define MODELMETRICS_CLI_UI_COMMAND_H_

#include <CLI/CLI.hpp>

namespace modelmetrics::cli {

void AddUiCommand(CLI::App& app, int* exit_code);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_UI_COMMAND_H_
