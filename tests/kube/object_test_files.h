// Files the objects tests share: the shared objects example, and a private temporary folder.
#ifndef MODELMETRICS_TESTS_DEPLOYMENT_OBJECT_TEST_FILES_H_
#define MODELMETRICS_TESTS_DEPLOYMENT_OBJECT_TEST_FILES_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "test_paths.h"

namespace modelmetrics::testing {

// ../shared/fixtures/deployment/objects-example.json
inline std::string ExamplePath() {
  return test_paths::Shared("fixtures/deployment/objects-example.json");
}

// A private temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mm-objects-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor never throws
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `content` to the folder's file `name`; its path.
  std::string Write(const std::string& name, const std::string& content) const {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  std::string path_;
};

}  // namespace modelmetrics::testing

#endif  // MODELMETRICS_TESTS_DEPLOYMENT_OBJECT_TEST_FILES_H_
