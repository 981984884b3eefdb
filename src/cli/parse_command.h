// `modelmetrics parse <file|URL|->`: a lint and inspector for exposition text, in the spirit of
// `promtool check metrics`. Its flags are in main.cc.
//
// Exit codes: 0 when the input is clean (or lenient mode skipped what was bad), 1 when strict mode
// meets invalid input (printed as `source:line:column: message`) or the input cannot be read,
// 2 on usage errors (CLI11 reports those).
#ifndef MODELMETRICS_CLI_PARSE_COMMAND_H_
#define MODELMETRICS_CLI_PARSE_COMMAND_H_

#include <cstddef>
#include <string>
#include <vector>

#include "input_bytes.h"

namespace modelmetrics::cli {

struct ParseArgs {
  std::string source;  // a file, an http(s):// URL or "-" (stdin)
  std::string format = "auto";
  bool strict = false;
  std::vector<std::string> families;
  std::string output = "summary";
  size_t max_bytes = InputBytes::kDefaultMaxBytes;
};

// Reads, parses and reports `args.source`; the exit code.
int RunParse(const ParseArgs& args);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_PARSE_COMMAND_H_
