// Durations in flags and configuration files: "90s", "2m", "500ms", "1h", or plain seconds.
#ifndef MODELMETRICS_BASE_DURATION_H_
#define MODELMETRICS_BASE_DURATION_H_

#include <chrono>
#include <string>

namespace modelmetrics::base {

bool ParseDuration(const std::string& text, std::chrono::milliseconds* out);

// A CLI11 validator: "" when `text` parses, else the error to print.
std::string CheckDuration(const std::string& text);

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_DURATION_H_
