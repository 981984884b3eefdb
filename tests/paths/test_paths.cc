#include "test_paths.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>

namespace modelmetrics::test_paths {
namespace {

std::string Join(std::string_view folder, std::string_view relative) {
  std::string path(folder);
  if (!relative.empty()) {
    path += '/';
    path += relative;
  }
  return path;
}

}  // namespace

std::string Shared(std::string_view relative) { return Join(MM_SHARED_DIR, relative); }
std::string Source(std::string_view relative) { return Join(MM_SOURCE_DIR, relative); }
std::string Binary(std::string_view relative) { return Join(MM_BINARY_DIR, relative); }
std::string Modelmetrics() { return MM_MODELMETRICS_BINARY; }
std::string Tls(std::string_view name) { return Join(MM_SOURCE_DIR "/tests/testdata/tls", name); }

std::string ScratchFile(std::string_view stem) {
  static std::atomic<unsigned> counter{0};
  std::string name(stem);
  name += '.' + std::to_string(getpid()) + '.' + std::to_string(counter.fetch_add(1));
  return (std::filesystem::temp_directory_path() / name).string();
}

}  // namespace modelmetrics::test_paths
