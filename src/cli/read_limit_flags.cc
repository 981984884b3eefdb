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

bool ApplyReadLimitFlags(const ReadLimitFlags& flags, deployment::ServeConfig* config,
                         std::string* error) {
  for (const auto& [key, text] : flags.given) {
    std::string why;
    if (!deployment::SetServeConfigValue(key, text, config, &why)) {
      *error = fmt::format("{}: {}", FlagOf(key), why);
      return false;
    }
  }
  return true;
}

bool ApplyReadLimitFlags(const ReadLimitFlags& flags, deployment::AggregatorOptions* options,
                         std::string* error) {
  deployment::ServeConfig limits;
  if (!ApplyReadLimitFlags(flags, &limits, error)) return false;
  limits.ApplyReadLimits(options);
  return true;
}

}  // namespace modelmetrics::cli
