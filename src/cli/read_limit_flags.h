// The spec's read limits on the command line (`snapshot`, `ui`, `serve`): the request budget, and
// for direct scraping the Pod limit, fetches in flight, the per-Pod fetch timeout and body cap.
// Each flag is one key of the serve configuration's table (deployment/serve_config.h), parsed and
// bounded by it; `serve` applies them over its configuration file. main.cc declares the flags
// from ReadLimitFlagList().
//
// Thread-safety: call from one thread (command-line set-up).
#ifndef MODELMETRICS_CLI_READ_LIMIT_FLAGS_H_
#define MODELMETRICS_CLI_READ_LIMIT_FLAGS_H_

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "aggregation/aggregator.h"
#include "apiserver/serve_config.h"

namespace modelmetrics::cli {

struct ReadLimitFlags {
  std::map<std::string_view, std::string> given;  // serve configuration key -> the flag's text
};

struct ReadLimitFlag {
  std::string_view flag;  // "--fetch-timeout"
  std::string_view key;   // its serve configuration key, "scrape.fetch_timeout"
};
// Every read-limit flag, in the order the help lists them.
std::span<const ReadLimitFlag> ReadLimitFlagList();
// The flag's help: the key's documentation, its default and its name in the configuration.
std::string ReadLimitFlagHelp(const ReadLimitFlag& flag);

// Sets the given flags in `config`; an error ("--fetch-timeout: ...") when one is out of its
// bounds.
base::Status ApplyReadLimitFlags(const ReadLimitFlags& flags, deployment::ServeConfig* config);
// The same for a command without a serve configuration: the defaults, then the flags.
base::Status ApplyReadLimitFlags(const ReadLimitFlags& flags,
                                 deployment::AggregatorOptions* options);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_READ_LIMIT_FLAGS_H_
