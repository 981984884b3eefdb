// `modelmetrics parse <file|URL|->`: a lint and inspector for exposition text, in the spirit of
// `promtool check metrics`.
//
// Exit codes: 0 when the input is clean (or lenient mode skipped what was bad), 1 when strict mode
// meets invalid input (printed as `source:line:column: message`) or the input cannot be read,
// 2 on usage errors (CLI11 reports those).
#ifndef MODELMETRICS_CLI_PARSE_COMMAND_H_
#define MODELMETRICS_CLI_PARSE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace modelmetrics::cli {

// Adds the `parse` subcommand to `app`; when it runs, its exit code is stored in `*exit_code`.
void AddParseCommand(CLI::App& app, int* exit_code);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_PARSE_COMMAND_H_
