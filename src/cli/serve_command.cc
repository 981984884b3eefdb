// placeholder; filled in by its owner
#include "cli/serve_command.h"

namespace modelmetrics::cli {

void AddServeCommand(CLI::App&, int*) {}

}  // namespace modelmetrics::cli
