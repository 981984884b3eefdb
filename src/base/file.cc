#include "base/file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace modelmetrics::base {

bool ReadFile(const std::string& path, std::string* out, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    if (error != nullptr) *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    if (error != nullptr) *error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  *out = std::move(text).str();
  return true;
}

}  // namespace modelmetrics::base
