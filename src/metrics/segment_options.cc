// A segment's name and size from the environment; multiprocess modes by name. See
// modelmetrics/shared_segment.h.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <array>
#include <cstdio>
#include <utility>

#include "modelmetrics/shared_segment.h"

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

bool ValidRecordedName(std::string_view name) {
  constexpr std::string_view kPrefix = "modelmetrics-";
  if (!name.starts_with(kPrefix) || name.size() != kPrefix.size() + 32) return false;
  for (char c : name.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

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

// Reads the name a directory records; nullopt with *absent when there is no such file, or with
// *error when there is one that is not this user's plain, private file holding a valid name.
std::optional<std::string> ReadNameFile(const std::string& path, bool* absent, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *absent = errno == ENOENT;
    if (!*absent) *error = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st = {};
  char text[256];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
      (st.st_mode & 022) == 0) {
    n = read(fd, text, sizeof(text));
  }
  close(fd);
  std::string name(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!name.empty() && name.back() == '\n') name.pop_back();
  if (n <= 0 || !ValidRecordedName(name)) {
    *error = path +
             " is not a segment name this user recorded (a plain file of this user's, "
             "writable by nobody else, holding modelmetrics-<hex>); remove it";
    return std::nullopt;
  }
  return name;
}

// Records a new random name in `path` unless one is there (link() never replaces a file).
bool RecordName(const std::string& dir, const std::string& path, std::string* error) {
  unsigned char random[16];
  if (getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
    *error = std::string("getrandom: ") + std::strerror(errno);
    return false;
  }
  std::string name = "modelmetrics-";
  for (unsigned char b : random) {
    static constexpr char kHex[] = "0123456789abcdef";
    name.push_back(kHex[b >> 4]);
    name.push_back(kHex[b & 15]);
  }
  const std::string temp = dir + "/." + std::string(kSegmentNameFile) + "." + name;
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = temp + ": " + std::strerror(errno);
    return false;
  }
  const std::string line = name + "\n";
  const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  const bool linked = written && (link(temp.c_str(), path.c_str()) == 0 || errno == EEXIST);
  if (!linked) *error = path + ": " + std::strerror(errno);
  unlink(temp.c_str());
  return linked;
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

std::optional<std::string> RecordedSegmentName(std::string_view directory, bool create,
                                               std::string* error) {
  const std::string dir(directory);
  struct stat st = {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    // A process of the service needs it (processes started before and after a mkdir would
    // otherwise meet in different segments); a reader of a service not started yet does not.
    if (!create) return SegmentNameForDirectory(directory);
    *error = "PROMETHEUS_MULTIPROC_DIR " + dir +
             " is not a directory: create it before the "
             "service starts (prometheus_client needs it too)";
    return std::nullopt;
  }
  const std::string path = dir + "/" + std::string(kSegmentNameFile);
  for (int attempt = 0; attempt < 4; ++attempt) {
    bool absent = false;
    if (auto name = ReadNameFile(path, &absent, error)) return name;
    if (!absent) return std::nullopt;
    if (!create) return SegmentNameForDirectory(directory);  // nobody has attached yet
    if (!RecordName(dir, path, error)) return std::nullopt;
  }
  *error = path + " was removed and made again repeatedly";
  return std::nullopt;
}

std::optional<SegmentOptions> SegmentOptionsFromEnvironment(std::string* error) {
  SegmentOptions options;
  if (const char* name = Env("MODELMETRICS_MULTIPROC")) {
    options.name = name;
  } else if (const char* dir = Env("PROMETHEUS_MULTIPROC_DIR")) {
    auto name = RecordedSegmentName(dir, true, error);
    if (!name) return std::nullopt;
    options.name = *name;
  } else if (const char* old = Env("prometheus_multiproc_dir")) {
    auto name = RecordedSegmentName(old, true, error);
    if (!name) return std::nullopt;
    options.name = *name;
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
