// The bytes `modelmetrics parse` reads: a regular file is mapped read-only (no copy); anything
// else (a pipe, a terminal, a character device, stdin) is read with sized read(2) calls into an
// anonymous mapping that grows with mremap(2), which moves pages instead of copying them, so the
// resident peak is the bytes read, not the 1.5-2x of a doubling buffer whose old and new copies
// coexist. Either way the caller sees one contiguous std::string_view.
//
// A mapped file must not be truncated while mapped (the process would get SIGBUS); `parse` is a
// one-shot reader of captures, which is the usual trade of tools that map their input.
//
// Thread-safety: an InputBytes is immutable once loaded; it is movable, not copyable.
#ifndef MODELMETRICS_CLI_INPUT_BYTES_H_
#define MODELMETRICS_CLI_INPUT_BYTES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace modelmetrics::cli {

using base::Status;

class InputBytes {
 public:
  InputBytes() = default;
  explicit InputBytes(std::string owned) : owned_(std::move(owned)) {}
  ~InputBytes();
  InputBytes(InputBytes&& other) noexcept;
  InputBytes& operator=(InputBytes&& other) noexcept;
  InputBytes(const InputBytes&) = delete;
  InputBytes& operator=(const InputBytes&) = delete;

  std::string_view view() const {
    return map_ != nullptr ? std::string_view(static_cast<const char*>(map_), map_size_) : owned_;
  }
  // True when the view is a mapping of the file itself (not a copy of its bytes).
  bool mapped() const { return file_mapped_; }

  // Loads `path`, at most `max_bytes` of it. On failure the status's message is "cannot open
  // file" (open failed), "read error" (mapping or reading failed, e.g. a directory) or "input is
  // over the N-byte limit (--max-bytes)" (a bigger file, or an endless one such as /dev/zero,
  // stopped after N bytes); the messages `parse` prints.
  Status LoadFile(const std::string& path, size_t max_bytes = kDefaultMaxBytes);
  // Loads everything readable from `fd` (not closed), up to `max_bytes`; mapped when it is a
  // regular file read from its start, else read in chunks. Same errors as LoadFile.
  Status LoadFd(int fd, size_t max_bytes = kDefaultMaxBytes);

  // "input is over the N-byte limit (--max-bytes)": also what `parse` says of a URL's body.
  static std::string OverLimitError(size_t max_bytes);

  // Far above any real scrape (a 1,000-replica vLLM /metrics is tens of MB).
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;  // 256 MiB

 private:
  void Reset();

  std::string owned_;
  void* map_ = nullptr;    // the file's mapping or the anonymous one holding what was read
  size_t map_size_ = 0;    // bytes in view()
  size_t map_length_ = 0;  // the mapping's length, for munmap
  bool file_mapped_ = false;
};

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_INPUT_BYTES_H_
