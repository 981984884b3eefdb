// What CLI tests share: a per-test scratch directory, running `modelmetrics` to completion
// (child_process.h starts and ends it), and the serve configuration they start it with.
#ifndef MODELMETRICS_TESTS_CLI_CLI_RUNNER_H_
#define MODELMETRICS_TESTS_CLI_CLI_RUNNER_H_

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "test_deadlines.h"
#include "test_paths.h"

namespace modelmetrics::testing {

// A per-test scratch directory, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // Parameterised names hold '/' ("Signals/StopTest.Case/0"): flattened, so the directory
    // removed at the end is the one created, with no parent folder left behind.
    std::string name =
        "mm_cli_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string file = File(name);
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  std::filesystem::path path_;
};

// Runs `modelmetrics <args>` to completion (or the deadline) with output under `dir`.
inline CliResult RunModelmetrics(const ScratchDir& dir, const std::vector<std::string>& args,
                                 std::chrono::milliseconds timeout = kCommandDeadline) {
  static int serial = 0;
  const std::string tag = std::to_string(++serial);
  CliProcess process(args, dir.File("stdout." + tag), dir.File("stderr." + tag));
  if (!process.started()) {
    ADD_FAILURE() << "cannot start " << test_paths::Modelmetrics();
    return {};
  }
  CliResult result = process.Wait(timeout);
  if (result.timed_out) ADD_FAILURE() << "modelmetrics did not stop within the deadline";
  return result;
}

// A valid serve configuration in `dir` whose objects come from `objects_file`.
inline std::string ServeConfig(const ScratchDir& dir, const std::string& objects_file,
                               const std::string& extra = "") {
  dir.Write("tokens.csv", "alice-token,alice,uid-alice\n");
  dir.Write("policy.yaml",
            "rules:\n- users: [alice]\n  namespaces: ['*']\n  verbs: [get]\n  resources: ['*']\n");
  return dir.Write("serve.yaml",
                   "port: 0\n"
                   "tls_cert_file: " +
                       test_paths::Tls("server.pem") +
                       "\n"
                       "tls_key_file: " +
                       test_paths::Tls("server-key.pem") +
                       "\n"
                       "token_file: tokens.csv\n"
                       "policy_file: policy.yaml\n"
                       "objects_file: " +
                       objects_file + "\n" + extra);
}

}  // namespace modelmetrics::testing

#endif  // MODELMETRICS_TESTS_CLI_CLI_RUNNER_H_
