#include "cli/input_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>

namespace modelmetrics::cli {

InputBytes::~InputBytes() { Reset(); }

InputBytes::InputBytes(InputBytes&& other) noexcept
    : owned_(std::move(other.owned_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)) {}

InputBytes& InputBytes::operator=(InputBytes&& other) noexcept {
  if (this != &other) {
    Reset();
    owned_ = std::move(other.owned_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
  }
  return *this;
}

void InputBytes::Reset() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
  owned_.clear();
}

namespace {

std::string OverLimit(size_t max_bytes) {
  return "input is over the " + std::to_string(max_bytes) + "-byte limit (--max-bytes)";
}

}  // namespace

bool InputBytes::LoadFile(const std::string& path, std::string* error, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open file";
    return false;
  }
  const bool ok = LoadFd(fd, error, max_bytes);
  ::close(fd);
  return ok;
}

bool InputBytes::LoadFd(int fd, std::string* error, size_t max_bytes) {
  Reset();
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = "read error";
    return false;
  }
  if (S_ISREG(st.st_mode) && static_cast<uintmax_t>(st.st_size) > max_bytes) {
    *error = OverLimit(max_bytes);
    return false;
  }
  // Map only a regular, non-empty file read from its start (mmap offsets are page-aligned and
  // a redirected stdin may already be positioned); MAP_POPULATE faults the pages in one call
  // instead of one fault per 4 KiB page as the parser walks them.
  if (S_ISREG(st.st_mode) && st.st_size > 0 && ::lseek(fd, 0, SEEK_CUR) == 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                     MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) {
      ::madvise(p, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
      map_ = p;
      map_size_ = static_cast<size_t>(st.st_size);
      return true;
    }
  }
  // Pipes, devices and files mmap refuses: sized reads into one growing buffer (the file size,
  // when known, is the first guess, so a regular file needs one read).
  // One byte past the cap is read to tell a full-size input from a bigger one.
  size_t size = 0;
  owned_.resize(std::min(S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1
                                                               : size_t{64} << 10,
                         max_bytes + 1));
  for (;;) {
    if (size > max_bytes) {
      owned_.clear();
      owned_.shrink_to_fit();
      *error = OverLimit(max_bytes);
      return false;
    }
    if (size == owned_.size()) owned_.resize(std::min(owned_.size() * 2, max_bytes + 1));
    const ssize_t n = ::read(fd, owned_.data() + size, owned_.size() - size);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      owned_.clear();
      *error = "read error";
      return false;
    }
    size += static_cast<size_t>(n);
  }
  owned_.resize(size);
  return true;
}

}  // namespace modelmetrics::cli
