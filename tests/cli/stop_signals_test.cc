// Every long-running command (demo, ui, serve, the three simulators) stops cleanly on SIGINT,
// SIGTERM and SIGHUP: it says which signal, exits 0 within seconds, and leaves its files
// consistent (a simulator removes the objects and file_sd files naming its Pods, which are gone).
// A command started with SIGINT ignored, as a shell starts a background job, still takes it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

namespace modelmetrics {
namespace {

using ::modelmetrics::testing::CliProcess;
using ::modelmetrics::testing::CliResult;
using ::modelmetrics::testing::ScratchDir;
using ::modelmetrics::testing::ServeConfig;
using ::testing::HasSubstr;

const char* Name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGHUP";
}

// Starts `args`, waits for `ready` on stdout, sends `signal`, and returns how it ended.
CliResult StopWith(const ScratchDir& dir, const std::vector<std::string>& args,
                   const std::string& ready, int signal) {
  CliProcess process(args, dir.File("out"), dir.File("err"));
  EXPECT_TRUE(process.started());
  EXPECT_TRUE(process.WaitForOutput(ready)) << process.StdoutSoFar();
  const auto sent = std::chrono::steady_clock::now();
  process.Signal(signal);
  CliResult r = process.Wait(testing::kCommandDeadline);
  EXPECT_FALSE(r.timed_out);
  // "Within seconds": 10 s (kEventually) on any machine, where a stop that waited for the next
  // round (60 s) or the end (300 s) would take minutes.
  EXPECT_LT(std::chrono::steady_clock::now() - sent, testing::kEventually) << args[0];
  return r;
}

void ExpectCleanStop(const CliResult& r, const std::string& command, int signal) {
  EXPECT_EQ(r.term_signal, 0) << command << " died by signal " << r.term_signal;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(command + ": " + Name(signal) + ", stopping")) << r.err;
}

class StopSignalsTest : public ::testing::TestWithParam<int> {};

TEST_P(StopSignalsTest, DemoStopsBeforeItsDuration) {
  ScratchDir dir;
  const CliResult r = StopWith(dir, {"demo", "--duration", "300s", "--interval", "60s", "--no-ui"},
                               "--- round 1 ---", GetParam());
  ExpectCleanStop(r, "demo", GetParam());
}

TEST_P(StopSignalsTest, SimulateDeploymentStopsAndRemovesItsFiles) {
  ScratchDir dir;
  const std::string objects = dir.File("objects.json"), targets = dir.File("targets.json");
  const CliResult r = StopWith(dir,
                               {"simulate", "deployment", "--duration", "300s", "--objects-out",
                                objects, "--file-sd-out", targets},
                               "objects: ", GetParam());
  ExpectCleanStop(r, "simulate deployment", GetParam());
  EXPECT_FALSE(std::filesystem::exists(objects));
  EXPECT_FALSE(std::filesystem::exists(targets));
}

TEST_P(StopSignalsTest, SimulateFleetAndPipelineStop) {
  ScratchDir dir;
  const std::string objects = dir.File("fleet.json");
  CliResult r = StopWith(dir,
                         {"simulate", "fleet", "--deployments", "2", "--pods", "2", "--duration",
                          "300s", "--objects-out", objects},
                         "objects: ", GetParam());
  ExpectCleanStop(r, "simulate fleet", GetParam());
  EXPECT_FALSE(std::filesystem::exists(objects));
  r = StopWith(dir,
               {"simulate", "pipeline", "--listen", "127.0.0.1:0", "--duration", "300s",
                "--log-interval", "0s"},
               "serving /metrics on", GetParam());
  ExpectCleanStop(r, "simulate pipeline", GetParam());
}

TEST_P(StopSignalsTest, UiAndServeStop) {
  ScratchDir dir;
  const std::string objects = dir.Write("objects.json", R"({"kind":"List","items":[]})");
  CliResult r = StopWith(dir, {"ui", "--objects", objects, "-n", "team", "--duration", "300s"},
                         "open ", GetParam());
  ExpectCleanStop(r, "ui", GetParam());
  r = StopWith(dir, {"serve", "--config", ServeConfig(dir, objects), "--duration", "300s"},
               "serving ModelDeploymentMetrics", GetParam());
  ExpectCleanStop(r, "serve", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Signals, StopSignalsTest, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(Name(info.param));
                         });

// A shell starts a background job with SIGINT ignored; `kill -INT` must still stop it.
TEST(StopSignals, ADemoStartedWithSigintIgnoredStillTakesIt) {
  ScratchDir dir;
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &previous);  // inherited by the child, as from a shell's `&`
  CliProcess process({"demo", "--duration", "300s", "--interval", "60s", "--no-ui"},
                     dir.File("out"), dir.File("err"));
  sigaction(SIGINT, &previous, nullptr);
  ASSERT_TRUE(process.started());
  EXPECT_TRUE(process.WaitForOutput("--- round 1 ---"));
  process.Signal(SIGINT);
  const CliResult r = process.Wait(testing::kCommandDeadline);
  EXPECT_FALSE(r.timed_out);
  ExpectCleanStop(r, "demo", SIGINT);
}

}  // namespace
}  // namespace modelmetrics
