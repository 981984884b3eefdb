#include "read_limit_flags.h"

#include <fmt/format.h>

namespace modelmetrics::cli {
namespace {

constexpr ReadLimitFlag kLimitFlags[] = {
    {"--request-timeout", "request_timeout"},           {"--pod-limit", "scrape.pod_limit"},
    {"--scrape-max-in-flight", "scrape.max_in_flight"}, {"--fetch-timeout", "scrape.fetch_timeout"},
    {"--max-body-bytes", "scrape.max_body_bytes"},
};

std::string_view FlagOf(std::string_view key) {
  for (const ReadLimitFlag& f : kLimitFlags) {
    if (f.key == key) return f.flag;
  }
  return key;
}

}  // namespace

std::span<const ReadLimitFlag> ReadLimitFlagList() { return kLimitFlags; }

std::string ReadLimitFlagHelp(const ReadLimitFlag& flag) {
  for (const deployment::ServeConfigKey& k : deployment::ServeConfigKeys()) {
    if (k.key == flag.key)
      return fmt::format("{} (default {}; `{}` in serve's configuration)", k.doc, k.shown, k.key);
  }
  return std::string(flag.key);
}

base::Status ApplyReadLimitFlags(const ReadLimitFlags& flags, deployment::ServeConfig* config) {
  for (const auto& [key, text] : flags.given) {
    if (base::Status set = deployment::SetServeConfigValue(key, text, config); !set.ok()) {
      return set.Prefixed(fmt::format("{}: ", FlagOf(key)));
    }
  }
  return base::Status::Ok();
}

base::Status ApplyReadLimitFlags(const ReadLimitFlags& flags,
                                 deployment::AggregatorOptions* options) {
  deployment::ServeConfig limits;
  if (base::Status set = ApplyReadLimitFlags(flags, &limits); !set.ok()) return set;
  limits.ApplyReadLimits(options);
  return base::Status::Ok();
}

}  // namespace modelmetrics::cli
