// Runs the real `modelmetrics snapshot --objects X` and `modelmetrics serve --config X` on inputs
// that used to hang or crash them: the YAML on which yaml-cpp 0.7 grew to 14 GB, /dev/zero (read
// whole: std::bad_alloc, exit 134) and a 1 GiB sparse file. Each must end with one line on stderr
// and exit 2, in bounded memory. Also: `serve` stops at the next start-up step on SIGTERM.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_runner.h"
#include "test_paths.h"

namespace modelmetrics {
namespace {

using ::modelmetrics::testing::CliProcess;
using ::modelmetrics::testing::CliResult;
using ::modelmetrics::testing::RunModelmetrics;
using ::modelmetrics::testing::ScratchDir;
using ::modelmetrics::testing::ServeConfig;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kHangYaml = test_paths::Source("fuzz/corpus/yaml/yaml_cpp_0.7_loadall_hang.yaml");
constexpr long kMaxRssKib = 256 * 1024;

// A 1 GiB file that takes no disk: only its size is ever looked at.
std::string SparseFile(const ScratchDir& dir) {
  const std::string path = dir.File("sparse-1gib.yaml");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::ftruncate(fd, off_t{1} << 30), 0);
  ::close(fd);
  return path;
}

void ExpectOneLineError(const CliResult& r, const std::string& starts_with) {
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.term_signal, 0) << r.err;
  EXPECT_THAT(r.err, StartsWith(starts_with));
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // exactly one line
  EXPECT_GT(r.max_rss_kib, 0);
  EXPECT_LT(r.max_rss_kib, kMaxRssKib) << starts_with;
}

TEST(BadInputTest, SnapshotObjectsFromTheYamlThatHungYamlCpp) {
  ScratchDir dir;
  const CliResult r =
      RunModelmetrics(dir, {"snapshot", "chat", "--objects", kHangYaml, "--window", "0"},
                      testing::kCommandDeadline);
  ExpectOneLineError(r,
                     std::string("modelmetrics snapshot: ") + kHangYaml + ": invalid YAML: line ");
}

TEST(BadInputTest, SnapshotObjectsFromDevZero) {
  ScratchDir dir;
  const CliResult r =
      RunModelmetrics(dir, {"snapshot", "chat", "--objects", "/dev/zero", "--window", "0"},
                      testing::kCommandDeadline);
  ExpectOneLineError(r, "modelmetrics snapshot: /dev/zero: not a regular file");
}

TEST(BadInputTest, SnapshotObjectsFromA1GiBSparseFile) {
  ScratchDir dir;
  const std::string sparse = SparseFile(dir);
  CliResult r = RunModelmetrics(dir, {"snapshot", "chat", "--objects", sparse, "--window", "0"},
                                testing::kCommandDeadline);
  ExpectOneLineError(r, "modelmetrics snapshot: " + sparse +
                            ": file is 1073741824 bytes, over the 4194304-byte limit");
  // The cap is --max-objects-bytes when given.
  r = RunModelmetrics(dir,
                      {"snapshot", "chat", "--objects", dir.Write("small.yaml", "kind: [\n"),
                       "--max-objects-bytes", "4", "--window", "0"},
                      testing::kCommandDeadline);
  ExpectOneLineError(r, "modelmetrics snapshot: " + dir.File("small.yaml") +
                            ": file is 8 bytes, over the 4-byte limit");
}

// The read limits on the command line go through the serve configuration's table: its bounds,
// its words, one line, exit 2.
TEST(BadInputTest, ReadLimitFlagsOutOfBounds) {
  ScratchDir dir;
  const std::string objects = dir.Write("objects.json", R"({"kind":"List","items":[]})");
  CliResult r = RunModelmetrics(
      dir, {"snapshot", "chat", "--objects", objects, "--fetch-timeout", "50ms", "--window", "0"},
      testing::kCommandDeadline);
  ExpectOneLineError(r,
                     "modelmetrics snapshot: --fetch-timeout: scrape.fetch_timeout: `50ms` is not "
                     "a duration between 100ms and 1m (e.g. 2s)");
  r = RunModelmetrics(
      dir, {"snapshot", "chat", "--objects", objects, "--pod-limit", "0", "--window", "0"},
      testing::kCommandDeadline);
  ExpectOneLineError(
      r, "modelmetrics snapshot: --pod-limit: scrape.pod_limit: 0 is out of range [1, 100000]");
  r = RunModelmetrics(dir,
                      {"serve", "--config", ServeConfig(dir, objects), "--request-timeout", "9h"},
                      testing::kCommandDeadline);
  ExpectOneLineError(r,
                     "serve: --request-timeout: request_timeout: `9h` is not a duration between "
                     "1s and 5m (e.g. 8s)");
}

TEST(BadInputTest, ServeConfigFromTheYamlThatHungYamlCpp) {
  ScratchDir dir;
  const CliResult r =
      RunModelmetrics(dir, {"serve", "--config", kHangYaml}, testing::kCommandDeadline);
  ExpectOneLineError(r, std::string("serve: ") + kHangYaml + ": invalid YAML: line ");
}

TEST(BadInputTest, ServeConfigFromDevZero) {
  ScratchDir dir;
  const CliResult r =
      RunModelmetrics(dir, {"serve", "--config", "/dev/zero"}, testing::kCommandDeadline);
  ExpectOneLineError(r, "serve: /dev/zero: not a regular file");
}

TEST(BadInputTest, ServeConfigFromA1GiBSparseFile) {
  ScratchDir dir;
  const std::string sparse = SparseFile(dir);
  const CliResult r =
      RunModelmetrics(dir, {"serve", "--config", sparse}, testing::kCommandDeadline);
  ExpectOneLineError(
      r, "serve: " + sparse + ": file is 1073741824 bytes, over the 4194304-byte limit");
}

// The same inputs as the objects file a good configuration names.
TEST(BadInputTest, ServeObjectsFileIsBoundedToo) {
  ScratchDir dir;
  CliResult r = RunModelmetrics(dir, {"serve", "--config", ServeConfig(dir, kHangYaml)},
                                testing::kCommandDeadline);
  ExpectOneLineError(r, std::string("serve: objects_file: ") + kHangYaml + ": invalid YAML: line ");
  r = RunModelmetrics(dir, {"serve", "--config", ServeConfig(dir, "/dev/zero")},
                      testing::kCommandDeadline);
  ExpectOneLineError(
      r, "serve: " + dir.File("serve.yaml") + ": objects_file: not a regular file: /dev/zero");
  const std::string sparse = SparseFile(dir);
  r = RunModelmetrics(dir, {"serve", "--config", ServeConfig(dir, sparse)},
                      testing::kCommandDeadline);
  ExpectOneLineError(r, "serve: objects_file: " + sparse +
                            ": file is 1073741824 bytes, over the 4194304-byte limit");
  r = RunModelmetrics(dir,
                      {"serve", "--config", ServeConfig(dir, sparse, "max_objects_bytes: 1024\n")},
                      testing::kCommandDeadline);
  ExpectOneLineError(
      r, "serve: objects_file: " + sparse + ": file is 1073741824 bytes, over the 1024-byte limit");
}

// A kubeconfig is bounded the same way, with --max-config-bytes as its cap.
TEST(BadInputTest, SnapshotKubeconfigIsBoundedToo) {
  ScratchDir dir;
  CliResult r =
      RunModelmetrics(dir, {"snapshot", "chat", "--kubeconfig", "/dev/zero", "--window", "0"},
                      testing::kCommandDeadline);
  ExpectOneLineError(r, "modelmetrics snapshot: /dev/zero: not a regular file");
  const std::string sparse = SparseFile(dir);
  r = RunModelmetrics(dir, {"snapshot", "chat", "--kubeconfig", sparse, "--window", "0"},
                      testing::kCommandDeadline);
  ExpectOneLineError(r, "modelmetrics snapshot: " + sparse +
                            ": file is 1073741824 bytes, over the 4194304-byte limit");
  const std::string small = dir.Write("kubeconfig", "apiVersion: v1\nkind: Config\n");
  r = RunModelmetrics(
      dir, {"snapshot", "chat", "--kubeconfig", small, "--max-config-bytes", "16", "--window", "0"},
      testing::kCommandDeadline);
  ExpectOneLineError(
      r, "modelmetrics snapshot: " + small + ": file is 28 bytes, over the 16-byte limit");
}

// `serve --max-config-bytes` caps the configuration and the kubeconfig it names.
TEST(BadInputTest, ServeConfigAndKubeconfigCapIsMaxConfigBytes) {
  ScratchDir dir;
  const std::string sparse = SparseFile(dir);
  const std::string objects = dir.Write("objects.json", R"({"kind": "List", "items": []})");
  std::string config = ServeConfig(dir, objects);
  const size_t config_bytes = std::filesystem::file_size(config);
  CliResult r = RunModelmetrics(dir, {"serve", "--config", config, "--max-config-bytes", "64"},
                                testing::kCommandDeadline);
  ExpectOneLineError(r, "serve: " + config + ": file is " + std::to_string(config_bytes) +
                            " bytes, over the 64-byte limit");
  // A kubeconfig instead of the objects file: its own cap, the same flag.
  config = dir.Write("serve.yaml", "port: 0\ntls_cert_file: " + test_paths::Tls("server.pem") +
                                       "\ntls_key_file: " + test_paths::Tls("server-key.pem") +
                                       "\ntoken_file: tokens.csv\npolicy_file: policy.yaml\n"
                                       "kubeconfig: " +
                                       sparse + "\n");
  r = RunModelmetrics(dir, {"serve", "--config", config}, testing::kCommandDeadline);
  ExpectOneLineError(
      r, "serve: " + sparse + ": file is 1073741824 bytes, over the 4194304-byte limit");
  r = RunModelmetrics(dir, {"serve", "--config", config, "--max-config-bytes", "2147483648"},
                      testing::kCommandDeadline);
  EXPECT_EQ(r.exit_code, 2);  // over the flag's own range (1 GiB)
  EXPECT_THAT(r.err, HasSubstr("--max-config-bytes"));
}

// Whether the main thread of `pid` blocks SIGTERM (/proc/PID/status SigBlk, a hex mask).
bool BlocksSigterm(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) {
      const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (SIGTERM - 1)) & 1;
    }
  }
  return false;
}

// SIGTERM while `serve` reads a large objects file (signals already blocked): it is taken at the
// next start-up step, so serve stops without ever serving, promptly, exit 0.
TEST(BadInputTest, ServeStopsOnSigtermDuringStartUp) {
  ScratchDir dir;
  // A ConfigMap with a 24 MiB block scalar: valid, and slow enough to read to be caught mid-way.
  {
    std::ofstream objects(dir.File("objects.yaml"), std::ios::binary);
    objects << "kind: ConfigMap\nmetadata: {name: big}\ndata:\n  blob: |\n";
    const std::string line = "    " + std::string(1019, 'x') + "\n";
    for (int i = 0; i < 24 * 1024; ++i) objects << line;
  }
  const std::string config =
      ServeConfig(dir, dir.File("objects.yaml"), "max_objects_bytes: 33554432\n");
  CliProcess process({"serve", "--config", config}, dir.File("out"), dir.File("err"));
  ASSERT_TRUE(process.started());
  const auto give_up = std::chrono::steady_clock::now() + testing::kCommandDeadline;
  // Polled every 200 us, not WaitUntil's 5 ms: the window caught is the read of 24 MiB.
  while (!BlocksSigterm(process.pid()) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(BlocksSigterm(process.pid()));
  process.Signal(SIGTERM);
  const CliResult r = process.Wait(testing::kCommandDeadline);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "serve: SIGTERM during start-up, stopping\n");
  EXPECT_THAT(r.out, Not(HasSubstr("serving")));
}

}  // namespace
}  // namespace modelmetrics
