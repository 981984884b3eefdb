// A segment's name and size from the environment; multiprocess modes by name. See
// modelmetrics/multiprocess.h.
#include <limits.h>
#include <stdlib.h>

#include <array>
#include <cstdio>
#include <utility>

#include "modelmetrics/multiprocess.h"

namespace modelmetrics {
namespace {

constexpr std::array<std::pair<MultiprocessMode, std::string_view>, 10> kModes = {{
    {MultiprocessMode::kAll, "all"},
    {MultiprocessMode::kLiveAll, "liveall"},
    {MultiprocessMode::kMin, "min"},
    {MultiprocessMode::kLiveMin, "livemin"},
    {MultiprocessMode::kMax, "max"},
    {MultiprocessMode::kLiveMax, "livemax"},
    {MultiprocessMode::kSum, "sum"},
    {MultiprocessMode::kLiveSum, "livesum"},
    {MultiprocessMode::kMostRecent, "mostrecent"},
    {MultiprocessMode::kLiveMostRecent, "livemostrecent"},
}};

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// "64M", "1G", "1048576": bytes; nullopt when malformed or over 4 GiB.
std::optional<size_t> ParseSize(std::string_view text) {
  size_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        multiplier = size_t{1} << 10;
        break;
      case 'M':
      case 'm':
        multiplier = size_t{1} << 20;
        break;
      case 'G':
      case 'g':
        multiplier = size_t{1} << 30;
        break;
      default:
        break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 12) return std::nullopt;
  size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<size_t>(c - '0');
  }
  if (value > (size_t{4} << 30) / multiplier) return std::nullopt;
  return value * multiplier;
}

}  // namespace

std::string_view MultiprocessModeName(MultiprocessMode mode) {
  for (const auto& [m, name] : kModes) {
    if (m == mode) return name;
  }
  return "all";
}

std::optional<MultiprocessMode> ParseMultiprocessMode(std::string_view name) {
  for (const auto& [m, n] : kModes) {
    if (n == name) return m;
  }
  return std::nullopt;
}

bool IsLiveMode(MultiprocessMode mode) { return MultiprocessModeName(mode).starts_with("live"); }

std::string SegmentNameForDirectory(std::string_view directory) {
  std::string path(directory);
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) != nullptr) {
    path = resolved;
  } else {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
  }
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : path) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  char name[40];
  std::snprintf(name, sizeof(name), "modelmetrics-%016llx", static_cast<unsigned long long>(hash));
  return name;
}

std::optional<SegmentOptions> SegmentOptionsFromEnvironment(std::string* error) {
  SegmentOptions options;
  if (const char* name = Env("MODELMETRICS_MULTIPROC")) {
    options.name = name;
  } else if (const char* dir = Env("PROMETHEUS_MULTIPROC_DIR")) {
    options.name = SegmentNameForDirectory(dir);
  } else if (const char* old = Env("prometheus_multiproc_dir")) {
    options.name = SegmentNameForDirectory(old);
  } else {
    return std::nullopt;
  }
  if (const char* bytes = Env("MODELMETRICS_MULTIPROC_BYTES")) {
    const std::optional<size_t> size = ParseSize(bytes);
    if (!size) {
      *error = std::string("MODELMETRICS_MULTIPROC_BYTES: '") + bytes +
               "' is not a size (e.g. 64M, up to 4G)";
      return std::nullopt;
    }
    options.bytes = *size;
  }
  if (const char* slots = Env("MODELMETRICS_MULTIPROC_PROCESSES")) {
    const std::optional<size_t> n = ParseSize(slots);
    if (!n || *n == 0 || *n > 4096 ||
        std::string_view(slots).find_first_not_of("0123456789") != std::string_view::npos) {
      *error = std::string("MODELMETRICS_MULTIPROC_PROCESSES: '") + slots +
               "' is not a number of processes (1 .. 4096)";
      return std::nullopt;
    }
    options.process_slots = static_cast<uint32_t>(*n);
  }
  return options;
}

}  // namespace modelmetrics
