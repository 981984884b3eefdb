// The `modelmetrics` command: one binary, one subcommand per job.
#include <CLI/CLI.hpp>

#include "demo_command.h"
#include "parse_command.h"
#include "serve_command.h"
#include "simulate_command.h"
#include "snapshot_command.h"
#include "ui_command.h"

int main(int argc, char** argv) {
  CLI::App app{"modelmetrics: metrics for multi-stage model serving"};
  app.require_subcommand(1);
  int exit_code = 0;
  modelmetrics::cli::AddParseCommand(app, &exit_code);
  modelmetrics::cli::AddSimulateCommand(app, &exit_code);
  modelmetrics::cli::AddSnapshotCommand(app, &exit_code);
  modelmetrics::cli::AddServeCommand(app, &exit_code);
  modelmetrics::cli::AddDemoCommand(app, &exit_code);
  modelmetrics::cli::AddUiCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // usage error
  }
  return exit_code;
}
