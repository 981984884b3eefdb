// `modelmetrics snapshot`: one ModelDeploymentMetrics snapshot (or a watch) on the terminal. Its
// flags are in main.cc.
#ifndef MODELMETRICS_CLI_SNAPSHOT_COMMAND_H_
#define MODELMETRICS_CLI_SNAPSHOT_COMMAND_H_

#include <string>

#include "object_source_flags.h"
#include "read_limit_flags.h"
#include "sample_source_flags.h"

namespace modelmetrics::cli {

struct SnapshotArgs {
  ObjectSourceFlags source;
  std::string ns = "default";
  std::string name;
  std::string output = "table";
  std::string window = "5s";
  std::string watch;
  int rounds = 0;
  std::string ca_file;
  bool window_given = false;  // --window on the command line (else the source's default)
  SampleSourceFlags samples;
  ReadLimitFlags limits;
};

// Reads and prints the snapshot(s); the exit code (see snapshot_command.cc).
int RunSnapshot(const SnapshotArgs& args);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_SNAPSHOT_COMMAND_H_
