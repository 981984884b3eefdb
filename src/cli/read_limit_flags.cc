#include "read_limit_flags.h"

#include <fmt/format.h>

namespace modelmetrics::cli {
namespace {

struct LimitFlag {
  std::string_view flag;
  std::string_view key;  // in the serve configuration
};
constexpr LimitFlag kLimitFlags[] = {
    {"--request-timeout", "request_timeout"},           {"--pod-limit", "scrape.pod_limit"},
    {"--scrape-max-in-flight", "scrape.max_in_flight"}, {"--fetch-timeout", "scrape.fetch_timeout"},
    {"--max-body-bytes", "scrape.max_body_bytes"},
};

std::string_view FlagOf(std::string_view key) {
  for (const LimitFlag& f : kLimitFlags) {
    if (f.key == key) return f.flag;
  }
  return key;
}

std::string Help(std::string_view key) {
  for (const deployment::ServeConfigKey& k : deployment::ServeConfigKeys()) {
    if (k.key == key)
      return fmt::format("{} (default {}; `{}` in serve's configuration)", k.doc, k.shown, k.key);
  }
  return std::string(key);
}

}  // namespace

void AddReadLimitFlags(CLI::App* command, ReadLimitFlags* flags) {
  for (const LimitFlag& f : kLimitFlags) {
    command
        ->add_option_function<std::string>(
            std::string(f.flag),
            [flags, key = f.key](const std::string& text) { flags->given[key] = text; },
            Help(f.key))
        ->group("Read limits");
  }
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
