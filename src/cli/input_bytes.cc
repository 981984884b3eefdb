#include "input_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace modelmetrics::cli {

InputBytes::~InputBytes() { Reset(); }

InputBytes::InputBytes(InputBytes&& other) noexcept
    : owned_(std::move(other.owned_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      map_length_(std::exchange(other.map_length_, 0)),
      file_mapped_(std::exchange(other.file_mapped_, false)) {}

InputBytes& InputBytes::operator=(InputBytes&& other) noexcept {
  if (this != &other) {
    Reset();
    owned_ = std::move(other.owned_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    map_length_ = std::exchange(other.map_length_, 0);
    file_mapped_ = std::exchange(other.file_mapped_, false);
  }
  return *this;
}

void InputBytes::Reset() {
  if (map_ != nullptr) ::munmap(map_, map_length_);
  map_ = nullptr;
  map_size_ = 0;
  map_length_ = 0;
  file_mapped_ = false;
  owned_.clear();
}

std::string InputBytes::OverLimitError(size_t max_bytes) {
  return "input is over the " + std::to_string(max_bytes) + "-byte limit (--max-bytes)";
}

namespace {

size_t PageRoundUp(size_t n) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

}  // namespace

Status InputBytes::LoadFile(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::InvalidArgument("cannot open file");
  }
  Status loaded = LoadFd(fd, max_bytes);
  ::close(fd);
  return loaded;
}

Status InputBytes::LoadFd(int fd, size_t max_bytes) {
  Reset();
  max_bytes = std::min(max_bytes, std::numeric_limits<size_t>::max() / 2);  // cap + a page fits
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::InvalidArgument("read error");
  }
  if (S_ISREG(st.st_mode) && static_cast<uintmax_t>(st.st_size) > max_bytes) {
    return Status::InvalidArgument(OverLimitError(max_bytes));
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
      map_length_ = map_size_;
      file_mapped_ = true;
      return Status::Ok();
    }
  }
  // Pipes, devices and files mmap refuses: sized reads into one anonymous mapping (the file
  // size, when known, is the first guess, so a regular file needs one read). One byte past the
  // cap is read (up to a page past it) to tell a full-size input from a bigger one.
  const size_t most = PageRoundUp(max_bytes + 1);
  size_t length = std::min(
      PageRoundUp(S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1
                                                        : size_t{64} << 10),
      most);
  void* buf = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) {
    return Status::InvalidArgument("read error");
  }
  size_t size = 0;
  const auto fail = [&](std::string why) {
    ::munmap(buf, length);
    return Status::InvalidArgument(std::move(why));
  };
  for (;;) {
    if (size > max_bytes) return fail(OverLimitError(max_bytes));
    if (size == length) {
      const size_t grown = std::min(length * 2, most);
      void* p = ::mremap(buf, length, grown, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) return fail("read error");
      buf = p;
      length = grown;
    }
    const ssize_t n = ::read(fd, static_cast<char*>(buf) + size, length - size);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("read error");
    }
    size += static_cast<size_t>(n);
  }
  if (size == 0) {
    ::munmap(buf, length);
    return Status::Ok();
  }
  // Give back the unused tail (shrinking a mapping never moves it).
  const size_t used = PageRoundUp(size);
  if (used < length && ::mremap(buf, length, used, 0) != MAP_FAILED) length = used;
  map_ = buf;
  map_size_ = size;
  map_length_ = length;
  return Status::Ok();
}

}  // namespace modelmetrics::cli
