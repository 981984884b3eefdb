// `modelmetrics demo`: the README's main job; simulated deployments, the API server and live
// tables. Its flags are in main.cc.
#ifndef MODELMETRICS_CLI_DEMO_COMMAND_H_
#define MODELMETRICS_CLI_DEMO_COMMAND_H_

#include <cstdint>
#include <string>

namespace modelmetrics::cli {

struct DemoArgs {
  std::string duration = "60s";
  std::string interval = "5s";
  uint64_t seed = 1;
  std::string output = "table";
  bool pipeline = true;
  bool ui = true;
  uint16_t ui_port = 0;
};

// Runs the demo until `duration` has passed or a stop signal comes; the exit code (1 when a
// round could not be read).
int RunDemo(const DemoArgs& args);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_DEMO_COMMAND_H_
