// Runs the real `modelmetrics simulate deployment` in the background and reads it, while it
// runs, with `modelmetrics snapshot --objects` on the objects file it writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_runner.h"
#include "net/http_client.h"

namespace modelmetrics {
namespace {

using ::modelmetrics::testing::CliProcess;
using ::modelmetrics::testing::CliResult;
using ::modelmetrics::testing::RunModelmetrics;
using ::modelmetrics::testing::ScratchDir;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct PrintedPod {
  std::string name;
  std::string url;
};

// The `  <pod>  http://127.0.0.1:<port>/metrics` lines of the simulator's banner.
std::vector<PrintedPod> PrintedPods(const std::string& out) {
  static const std::regex kPod(R"(^  (\S+)  (http://127\.0\.0\.1:\d+/metrics)$)");
  std::vector<PrintedPod> pods;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_match(line, match, kPod)) pods.push_back({match[1], match[2]});
  }
  return pods;
}

TEST(SimulateDeploymentTest, ServesPodsAndAnObjectsFileThatSnapshotReads) {
  ScratchDir dir;
  const std::string objects = dir.File("objects.json");
  CliProcess simulator({"simulate", "deployment", "--engine", "sglang", "--roles", "pd", "--router",
                        "sglang-gateway", "--objects-out", objects, "--duration", "300s"},
                       dir.File("sim.out"), dir.File("sim.err"));
  ASSERT_TRUE(simulator.started());

  // Wait for the banner: it ends with the objects file's path, printed once the Pods listen.
  simulator.WaitForOutput("objects: " + objects + "\n");
  const std::string banner = simulator.StdoutSoFar();
  ASSERT_THAT(banner, HasSubstr("objects: " + objects + "\n")) << simulator.Wait({}).err;
  EXPECT_THAT(banner, StartsWith("deployment default/chat (sglang, router sglang-gateway, seed "));
  ASSERT_TRUE(std::filesystem::exists(objects));

  // One prefill, one decode and one router Pod, each on its own port, each serving its exporter.
  const std::vector<PrintedPod> pods = PrintedPods(banner);
  ASSERT_EQ(pods.size(), 3u) << banner;
  std::set<std::string> urls;
  std::vector<net::FetchRequest> requests;
  for (const PrintedPod& pod : pods) {
    urls.insert(pod.url);
    requests.push_back({.url = pod.url});
  }
  EXPECT_EQ(urls.size(), 3u);
  net::HttpClient client;
  const std::vector<net::FetchResult> scrapes =
      client.FetchAll(requests, std::chrono::steady_clock::now() + testing::kEventually);
  bool prefill = false, decode = false, router = false;
  for (size_t i = 0; i < pods.size(); ++i) {
    ASSERT_TRUE(scrapes[i].ok()) << pods[i].url << ": " << scrapes[i].message;
    if (pods[i].name.starts_with("chat-prefill-")) {
      prefill = true;
      EXPECT_THAT(scrapes[i].body, HasSubstr("sglang:"));
    } else if (pods[i].name.starts_with("chat-decode-")) {
      decode = true;
      EXPECT_THAT(scrapes[i].body, HasSubstr("sglang:"));
    } else if (pods[i].name.starts_with("chat-router-")) {
      router = true;
    }
  }
  EXPECT_TRUE(prefill && decode && router) << banner;

  // The snapshot command reads the simulator's objects file while it runs.
  const CliResult snapshot = RunModelmetrics(
      dir, {"snapshot", "--objects", objects, "chat", "--window", "1s", "-o", "json"});
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.err;
  const nlohmann::json doc = nlohmann::json::parse(snapshot.out);
  EXPECT_EQ(doc.at("metadata").at("name"), "chat");
  EXPECT_EQ(doc.at("metadata").at("namespace"), "default");
  for (const char* list : {"processing", "latency", "traffic"}) {
    EXPECT_TRUE(doc.contains(list)) << list << " missing in " << doc.dump(2);
  }
  std::set<std::string> scraped;
  for (const char* list : {"latency", "traffic", "transfer"}) {
    for (const auto& w : doc.value(list, nlohmann::json::array())) scraped.insert(w.at("pod"));
  }
  for (const PrintedPod& pod : pods) EXPECT_TRUE(scraped.contains(pod.name)) << pod.name;
  for (const auto& m : doc.value("missing", nlohmann::json::array())) {
    EXPECT_NE(m.at("source"), "scrape") << m.dump();  // every Pod was readable
  }
  EXPECT_EQ(doc.at("partial"), false) << doc.dump(2);

  // Stopped (its 300 s are for a slow machine, never waited out), it counts what it served.
  simulator.Signal(SIGTERM);
  const CliResult done = simulator.Wait(testing::kCommandDeadline);
  EXPECT_FALSE(done.timed_out);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  const std::smatch served = [&] {
    std::smatch m;
    std::regex_search(done.out, m, std::regex(R"(served (\d+) scrapes\n$)"));
    return m;
  }();
  ASSERT_FALSE(served.empty()) << done.out;
  EXPECT_GE(std::stoi(served[1]), 6);  // our 3 scrapes and the snapshot's 2 reads of 3 Pods
}

TEST(SimulateDeploymentTest, FaultedPodsAreNamedInTheBannerAndTheSnapshot) {
  ScratchDir dir;
  const std::string objects = dir.File("objects.json");
  CliProcess simulator(
      {"simulate", "deployment", "--name", "faulty", "-n", "lab", "--replicas", "2", "--fault",
       "faulty-server-1=http-500", "--objects-out", objects, "--duration", "300s"},
      dir.File("sim.out"), dir.File("sim.err"));
  ASSERT_TRUE(simulator.started());
  ASSERT_TRUE(simulator.WaitForOutput("objects: "));
  EXPECT_THAT(simulator.StdoutSoFar(), HasSubstr("faulty-server-1  http://127.0.0.1:"));
  EXPECT_THAT(simulator.StdoutSoFar(), HasSubstr("/metrics  fault=http-500\n"));
  const CliResult snapshot = RunModelmetrics(dir, {"snapshot", "--objects", objects, "-n", "lab",
                                                   "faulty", "--window", "0", "-o", "json"});
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.err;
  const nlohmann::json doc = nlohmann::json::parse(snapshot.out);
  EXPECT_EQ(doc.at("partial"), true);
  bool named = false;
  for (const auto& m : doc.at("missing")) {
    if (m.at("pod") == "faulty-server-1" && m.at("source") == "scrape") named = true;
    if (m.at("pod") == "faulty-server-0") {
      EXPECT_NE(m.at("source"), "scrape") << m.dump();
    }
  }
  EXPECT_TRUE(named) << doc.at("missing").dump(2);
  simulator.Signal(SIGTERM);
  const CliResult done = simulator.Wait(testing::kCommandDeadline);
  EXPECT_EQ(done.exit_code, 0) << done.err;
}

// Without a signal it stops by itself after --duration, quietly, with its count.
TEST(SimulateDeploymentTest, StopsByItselfAfterItsDuration) {
  ScratchDir dir;
  const CliResult done = RunModelmetrics(dir, {"simulate", "deployment", "--duration", "1s"});
  EXPECT_FALSE(done.timed_out);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(done.err, "");
  EXPECT_THAT(done.out, HasSubstr("\nserved "));
  EXPECT_THAT(done.out, EndsWith(" scrapes\n"));
}

TEST(SimulateDeploymentTest, BadFlagsExitTwo) {
  ScratchDir dir;
  const CliResult unknown = RunModelmetrics(
      dir, {"simulate", "deployment", "--fault", "chat-server-0=meltdown", "--duration", "1s"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown fault \"meltdown\""));
  EXPECT_EQ(unknown.out, "");
  const CliResult shape =
      RunModelmetrics(dir, {"simulate", "deployment", "--fault", "hang", "--duration", "1s"});
  EXPECT_EQ(shape.exit_code, 2);
  EXPECT_THAT(shape.err, HasSubstr("expected POD=FAULT"));
  EXPECT_EQ(RunModelmetrics(dir, {"simulate", "deployment", "--engine", "tgi", "--duration", "1s"})
                .exit_code,
            2);
  EXPECT_EQ(
      RunModelmetrics(dir, {"simulate", "deployment", "--router", "nginx", "--duration", "1s"})
          .exit_code,
      2);
  EXPECT_EQ(RunModelmetrics(dir, {"simulate", "deployment", "--replicas", "0", "--duration", "1s"})
                .exit_code,
            2);
  EXPECT_EQ(RunModelmetrics(dir, {"simulate", "deployment", "--duration", "soon"}).exit_code, 2);
}

TEST(SimulateDeploymentTest, FaultOnAnUnknownPodFailsWithoutServing) {
  ScratchDir dir;
  const CliResult r = RunModelmetrics(
      dir, {"simulate", "deployment", "--fault", "ghost=hang", "--duration", "30s"});
  // The fault names a known kind, so the flag check passes; the simulator refuses the Pod name
  // at start (exit 1, as any start failure) and stops at once instead of serving 30 s.
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.err, "simulate deployment: fault for unknown Pod ghost\n");
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace modelmetrics
