// `modelmetrics ui`: the web page of deployment snapshots (ui/ui_server.h) on loopback. Its flags
// are in main.cc.
#ifndef MODELMETRICS_CLI_UI_COMMAND_H_
#define MODELMETRICS_CLI_UI_COMMAND_H_

#include <cstdint>
#include <string>

#include "object_source_flags.h"
#include "read_limit_flags.h"
#include "sample_source_flags.h"

namespace modelmetrics::cli {

struct UiArgs {
  ObjectSourceFlags source;
  SampleSourceFlags samples;
  ReadLimitFlags limits;
  std::string ns = "default";
  bool all_namespaces = false;
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  std::string interval = "5s";
  std::string duration;
  std::string ca_file;
  bool aggregated_api = false;
};

// Serves the page until a stop signal or `duration`; the exit code (see ui_command.cc).
int RunUi(const UiArgs& args);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_UI_COMMAND_H_
