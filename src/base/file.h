// Reading a whole file, with an error that says which file and why.
//
// Thread-safety: a pure function.
#ifndef MODELMETRICS_BASE_FILE_H_
#define MODELMETRICS_BASE_FILE_H_

#include <string>

namespace modelmetrics::base {

// Reads `path` into `*out`. On failure returns false with `*error` = "<path>: cannot open: <why>"
// or "<path>: cannot read: <why>" (when `error` is not null) and leaves `*out` unspecified.
bool ReadFile(const std::string& path, std::string* out, std::string* error = nullptr);

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_FILE_H_
