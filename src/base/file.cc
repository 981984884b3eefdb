#include "base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace modelmetrics::base {
namespace {

Status Fail(std::string message) { return Status::InvalidArgument(std::move(message)); }

std::string OverLimit(const std::string& path, size_t size, size_t max_bytes) {
  return path + ": file is " + std::to_string(size) + " bytes, over the " +
         std::to_string(max_bytes) + "-byte limit";
}

}  // namespace

Status ReadFile(const std::string& path, std::string* out, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not block before fstat can refuse it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    std::string message = path + ": cannot open: " + std::strerror(errno);
    return errno == ENOENT ? Status::NotFound(std::move(message)) : Fail(std::move(message));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Fail(path + ": cannot read: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Fail(path + ": not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size > max_bytes) return Fail(OverLimit(path, size, max_bytes));

  // One sized buffer, plus one byte to notice a file that grew since fstat.
  std::string text(size + 1, '\0');
  size_t used = 0;
  for (;;) {
    const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(path + ": cannot read: " + std::strerror(errno));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    if (used > max_bytes) return Fail(OverLimit(path, used, max_bytes));
    if (used == text.size()) text.resize(std::min(text.size() * 2, max_bytes + 1));
  }
  text.resize(used);
  *out = std::move(text);
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return Status::Internal("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Internal("cannot write " + path + ": " + ec.message());
  return Status::Ok();
}

Status WritePrivateTempFile(std::string_view prefix, const std::string& content,
                            std::string* path) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string name = std::string(tmpdir != nullptr && tmpdir[0] != '\0' ? tmpdir : "/tmp") + "/" +
                     std::string(prefix) + "-XXXXXX";
  int fd = mkstemp(name.data());  // creates the file 0600
  if (fd < 0) {
    return Status::Internal("cannot create a temporary file " + name + ": " + std::strerror(errno));
  }
  *path = name;
  // Belt and braces: mkstemp's mode is 0600 in glibc, but the contract should not rest on it.
  bool ok = fchmod(fd, S_IRUSR | S_IWUSR) == 0;
  for (size_t written = 0; ok && written < content.size();) {
    ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) written += static_cast<size_t>(n);
  }
  std::string error;
  if (!ok) error = "cannot write " + name + ": " + std::strerror(errno);
  if (close(fd) != 0 && ok) {
    error = "cannot write " + name + ": " + std::strerror(errno);
    ok = false;
  }
  return ok ? Status::Ok() : Status::Internal(error);
}

}  // namespace modelmetrics::base
