// placeholder; filled in by its owner
#include "cli/demo_command.h"

namespace modelmetrics::cli {

void AddDemoCommand(CLI::App&, int*) {}

}  // namespace modelmetrics::cli
