// `modelmetrics serve --config FILE`: the aggregated API server
// (src/apiserver/include/apiserver/api_server.h). Its flags are in main.cc.
#ifndef MODELMETRICS_CLI_SERVE_COMMAND_H_
#define MODELMETRICS_CLI_SERVE_COMMAND_H_

#include <cstddef>
#include <string>

#include "base/file.h"
#include "read_limit_flags.h"

namespace modelmetrics::cli {

struct ServeArgs {
  std::string config;    // the serve configuration (YAML); required unless config_keys
  std::string duration;  // empty: until a stop signal
  size_t max_config_bytes = base::kDefaultMaxFileBytes;
  ReadLimitFlags limits;
  bool config_keys = false;  // print the configuration's keys instead of serving
};

// Serves until a stop signal or `duration`; the exit code (see serve_command.cc).
int RunServe(const ServeArgs& args);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_SERVE_COMMAND_H_
