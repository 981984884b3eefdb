// Duration flags shared by the subcommands: "90s", "2m", "500ms", "1h", or plain seconds.
#ifndef MODELMETRICS_CLI_DURATION_H_
#define MODELMETRICS_CLI_DURATION_H_

#include <chrono>
#include <string>

namespace modelmetrics::cli {

bool ParseDuration(const std::string& text, std::chrono::milliseconds* out);

// A CLI11 validator: "" when `text` parses, else the error to print.
std::string CheckDuration(const std::string& text);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_DURATION_H_
