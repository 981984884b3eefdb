// Reading a whole file, bounded, with an error that says which file and why; writing one so that
// a reader never sees half of it.
//
// Only regular files are read, and only up to a size cap checked with fstat before any byte is
// read: a FIFO, a device (/dev/zero) or a huge file named by mistake fails at once with one line
// instead of blocking or exhausting memory.
//
// Thread-safety: a pure function.
#ifndef MODELMETRICS_BASE_FILE_H_
#define MODELMETRICS_BASE_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace modelmetrics::base {

// The default cap: far more than any configuration, policy, token or kubeconfig file needs.
inline constexpr size_t kDefaultMaxFileBytes = size_t{4} << 20;  // 4 MiB

// Reads `path` into `*out`. On failure the status's message is
//   "<path>: cannot open: <why>" (NotFound when it does not exist), "<path>: cannot read: <why>",
//   "<path>: not a regular file" or "<path>: file is N bytes, over the M-byte limit"
// and `*out` is unspecified. A file that grows past `max_bytes` while it is read is an error
// too (the same message, with the size read so far).
Status ReadFile(const std::string& path, std::string* out, size_t max_bytes = kDefaultMaxFileBytes);

// Writes `content` to `<path>.tmp` and renames it over `path`: a reader polling the file sees the
// old content or the new, never a part. The error says "cannot write <file>[: why]".
Status WriteFileAtomically(const std::string& path, const std::string& content);

// Creates a file readable and writable by this user only (0600) under $TMPDIR (or /tmp), named
// `prefix`-XXXXXX, holding `content`; its path in `*path` (set even when the write fails, so the
// caller can remove it). For key material handed to libraries that read files (OpenSSL, curl).
Status WritePrivateTempFile(std::string_view prefix, const std::string& content, std::string* path);

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_FILE_H_
