// Runs the real `modelmetrics snapshot` binary against an in-process simulated deployment (vLLM,
// one server role of 2 Pods, a vllm-router) through the objects file the simulator writes: the
// JSON document, --window, YAML, the table, --watch, and the error exits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aggregation/snapshot.h"
#include "cli/cli_runner.h"
#include "kube/yaml.h"
#include "sim/deployment_sim.h"
#include "status_matchers.h"

namespace modelmetrics {

using ::modelmetrics::testing::Ok;
namespace {

using ::modelmetrics::testing::CliResult;
using ::modelmetrics::testing::RunModelmetrics;
using ::modelmetrics::testing::ScratchDir;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::ordered_json;

// The field orders of the API types (the Go structs' declaration order).
const std::vector<std::string> kTopLevelKeys = {"kind",       "apiVersion", "metadata",
                                                "timestamp",  "processing", "queueing",
                                                "cacheHits",  "missing",    "partial",
                                                "latency",    "traffic",    "transfer",
                                                "utilization"};  // ours, after GPUStack's
const std::vector<std::string> kMetadataKeys = {"name", "namespace", "creationTimestamp"};
const std::vector<std::string> kGaugeKeys = {"name",  "source",   "scope",     "unit",
                                             "value", "podCount", "observedAt"};
const std::vector<std::string> kWindowKeys = {
    "name", "pod", "source", "scope", "unit", "value", "samples", "windowSeconds", "observedAt"};
const std::vector<std::string> kCacheHitKeys = {"pod",      "source",    "scope", "unit",
                                                "hits",     "queries",   "rate",  "windowSeconds",
                                                "podCount", "observedAt"};
const std::vector<std::string> kMissingKeys = {"pod", "source", "reason"};
const std::vector<std::string> kUtilizationKeys = {"name", "source", "scope",    "unit",
                                                   "mean", "max",    "podCount", "observedAt"};

std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  return keys;
}

// RFC 3339 at second precision, UTC.
deployment::WallTime ParseTime(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  EXPECT_FALSE(in.fail()) << text;
  EXPECT_EQ(text.size(), 20u) << text;
  return deployment::WallClock::from_time_t(::timegm(&tm));
}

std::string Str(const Json& j, const char* key) { return j.at(key).get<std::string>(); }
double Num(const Json& j, const char* key) { return j.at(key).get<double>(); }

deployment::Gauge ParseGauge(const Json& j) {
  deployment::Gauge g;
  g.name = Str(j, "name");
  g.source = Str(j, "source");
  g.scope = Str(j, "scope");
  g.unit = Str(j, "unit");
  g.value = Num(j, "value");
  g.pod_count = j.at("podCount").get<int32_t>();
  g.observed_at = ParseTime(Str(j, "observedAt"));
  return g;
}

deployment::Window ParseWindow(const Json& j) {
  deployment::Window w;
  w.name = Str(j, "name");
  w.pod = Str(j, "pod");
  w.source = Str(j, "source");
  w.scope = Str(j, "scope");
  w.unit = Str(j, "unit");
  w.value = Num(j, "value");
  w.samples = Num(j, "samples");
  w.window_seconds = Num(j, "windowSeconds");
  w.observed_at = ParseTime(Str(j, "observedAt"));
  return w;
}

deployment::CacheHit ParseCacheHit(const Json& j) {
  deployment::CacheHit h;
  h.pod = Str(j, "pod");
  h.source = Str(j, "source");
  h.scope = Str(j, "scope");
  h.unit = Str(j, "unit");
  h.hits = Num(j, "hits");
  h.queries = Num(j, "queries");
  h.rate = Num(j, "rate");
  h.window_seconds = Num(j, "windowSeconds");
  h.pod_count = j.at("podCount").get<int32_t>();
  h.observed_at = ParseTime(Str(j, "observedAt"));
  return h;
}

// Reads the API document back into a Snapshot, checking every object's field order on the way.
deployment::Snapshot ParseSnapshot(const Json& doc) {
  deployment::Snapshot s;
  std::vector<std::string> expected_top;
  for (const std::string& key : kTopLevelKeys) {
    if (doc.contains(key)) expected_top.push_back(key);
  }
  EXPECT_EQ(Keys(doc), expected_top) << "top-level fields out of order or unknown";
  EXPECT_THAT(Keys(doc.at("metadata")), ElementsAreArray(kMetadataKeys));
  EXPECT_TRUE(doc.at("metadata").at("creationTimestamp").is_null());
  s.name = Str(doc.at("metadata"), "name");
  s.namespace_ = Str(doc.at("metadata"), "namespace");
  s.timestamp = ParseTime(Str(doc, "timestamp"));
  s.partial = doc.at("partial").get<bool>();
  for (const char* list : {"processing", "queueing", "cacheHits", "missing", "latency", "traffic",
                           "transfer", "utilization"}) {
    if (doc.contains(list)) {
      EXPECT_TRUE(doc[list].is_array()) << list;
      EXPECT_FALSE(doc[list].empty()) << list << ": empty lists are omitted";
    }
  }
  for (const Json& g : doc.value("processing", Json::array())) {
    EXPECT_THAT(Keys(g), ElementsAreArray(kGaugeKeys));
    s.processing.push_back(ParseGauge(g));
  }
  for (const Json& g : doc.value("queueing", Json::array())) {
    EXPECT_THAT(Keys(g), ElementsAreArray(kGaugeKeys));
    s.queueing.push_back(ParseGauge(g));
  }
  for (const Json& h : doc.value("cacheHits", Json::array())) {
    EXPECT_THAT(Keys(h), ElementsAreArray(kCacheHitKeys));
    s.cache_hits.push_back(ParseCacheHit(h));
  }
  for (const Json& m : doc.value("missing", Json::array())) {
    EXPECT_THAT(Keys(m), ElementsAreArray(kMissingKeys));
    s.missing.push_back({Str(m, "pod"), Str(m, "source"), Str(m, "reason")});
  }
  for (const char* list : {"latency", "traffic", "transfer"}) {
    for (const Json& w : doc.value(list, Json::array())) {
      EXPECT_THAT(Keys(w), ElementsAreArray(kWindowKeys));
      (std::string(list) == "latency"   ? s.latency
       : std::string(list) == "traffic" ? s.traffic
                                        : s.transfer)
          .push_back(ParseWindow(w));
    }
  }
  for (const Json& u : doc.value("utilization", Json::array())) {
    EXPECT_THAT(Keys(u), ElementsAreArray(kUtilizationKeys));
    s.utilization.push_back({Str(u, "name"), Str(u, "source"), Str(u, "scope"), Str(u, "unit"),
                             Num(u, "mean"), Num(u, "max"), u.at("podCount").get<int32_t>(),
                             ParseTime(Str(u, "observedAt"))});
  }
  return s;
}

std::set<std::string> KeySet(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.insert(it.key());
  return keys;
}

std::set<std::string> KeySet(const Json& object) {
  std::set<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.insert(it.key());
  return keys;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class SnapshotCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::unsetenv("KUBERNETES_SERVICE_HOST");  // no in-cluster default from the environment
    dir_ = new std::string(std::filesystem::temp_directory_path() /
                           ("mm_cli_snapshot_" + std::to_string(::getpid())));
    std::filesystem::create_directories(*dir_);
    objects_ = new std::string(*dir_ + "/objects.json");
    sim::DeploymentSimOptions options;
    options.name = "chat";
    options.ns = "prod";
    options.engine = "vllm";
    options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = 2}};
    options.router = "vllm-router";
    options.seed = 42;
    options.requests_per_second = 20;
    options.objects_file = *objects_;
    sim_ = new sim::DeploymentSim(options);
    std::string error;
    started_ = Ok(sim_->Start(), &error);
    ASSERT_TRUE(started_) << error;
  }
  static void TearDownTestSuite() {
    delete sim_;
    sim_ = nullptr;
    std::filesystem::remove_all(*dir_);
    delete objects_;
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(started_); }

  // `modelmetrics snapshot --objects <the simulator's file> -n prod <args>`.
  CliResult Snapshot(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"snapshot", "--objects", *objects_, "-n", "prod"};
    all.insert(all.end(), args.begin(), args.end());
    return RunModelmetrics(scratch_, all);
  }

  static std::string* dir_;
  static std::string* objects_;
  static sim::DeploymentSim* sim_;
  static bool started_;
  ScratchDir scratch_;
};

std::string* SnapshotCommandTest::dir_ = nullptr;
std::string* SnapshotCommandTest::objects_ = nullptr;
sim::DeploymentSim* SnapshotCommandTest::sim_ = nullptr;
bool SnapshotCommandTest::started_ = false;

TEST_F(SnapshotCommandTest, JsonIsExactlyTheApiDocument) {
  const CliResult r = Snapshot({"chat", "-o", "json", "--window", "1s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // One document on one line.
  ASSERT_THAT(r.out, Not(IsEmpty()));
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(Count(r.out, "\n"), 1u) << r.out;
  const std::string line = r.out.substr(0, r.out.size() - 1);
  const Json doc = Json::parse(line);

  EXPECT_EQ(doc.at("kind"), "ModelDeploymentMetrics");
  EXPECT_EQ(doc.at("apiVersion"), "worker.gpustack.ai/v1");
  EXPECT_EQ(doc.at("metadata").at("name"), "chat");
  EXPECT_EQ(doc.at("metadata").at("namespace"), "prod");
  EXPECT_EQ(doc.at("partial"), false) << doc.dump(2);
  // Windowed: the second of two reads a second apart.
  for (const char* list : {"latency", "traffic", "cacheHits", "processing", "queueing"}) {
    ASSERT_TRUE(doc.contains(list)) << list << " missing in " << doc.dump(2);
  }
  for (const char* list : {"latency", "traffic"}) {
    for (const Json& w : doc[list]) {
      EXPECT_GT(w.at("windowSeconds").get<double>(), 0.9) << w.dump();
      EXPECT_LT(w.at("windowSeconds").get<double>(), 5.0) << w.dump();
    }
  }
  for (const Json& h : doc["cacheHits"]) {
    EXPECT_EQ(h.at("unit"), "tokens");
    EXPECT_LE(h.at("hits").get<double>(), h.at("queries").get<double>());
    EXPECT_GT(h.at("windowSeconds").get<double>(), 0.9);
  }
  // Every Pod is scraped: both engine Pods have windows, and the router contributes.
  std::set<std::string> pods;
  for (const Json& w : doc["latency"]) pods.insert(w.at("pod"));
  for (const std::string& pod : sim_->PodNames()) {
    if (pod.starts_with("chat-server-")) {
      EXPECT_TRUE(pods.contains(pod)) << pod;
    }
  }
  // Traffic is the router's (engines export no traffic series); latency is the engines'.
  std::set<std::string> names;
  for (const Json& w : doc["traffic"]) {
    EXPECT_EQ(w.at("scope"), "router") << w.dump();
    names.insert(w.at("name"));
  }
  EXPECT_TRUE(names.contains("successful-requests")) << doc["traffic"].dump(2);
  for (const Json& w : doc["latency"]) {
    if (w.at("pod").get<std::string>().starts_with("chat-server-")) {
      EXPECT_EQ(w.at("scope"), "engine/server") << w.dump();
    }
  }

  // Field order, and byte equality with the API writer fed the same values: the output is the
  // document SnapshotToJson (what the API server sends) produces, not a re-serialisation.
  const deployment::Snapshot parsed = ParseSnapshot(doc);
  EXPECT_EQ(deployment::SnapshotToJson(parsed), line);
}

TEST_F(SnapshotCommandTest, WindowZeroReadsOnce) {
  const CliResult r = Snapshot({"chat", "-o", "json", "--window", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  EXPECT_EQ(doc.at("partial"), true);
  // A first read has no windows: every window source is awaiting its second sample.
  EXPECT_FALSE(doc.contains("latency")) << doc.dump(2);
  EXPECT_FALSE(doc.contains("traffic")) << doc.dump(2);
  EXPECT_FALSE(doc.contains("cacheHits")) << doc.dump(2);
  // Gauges need no window.
  EXPECT_TRUE(doc.contains("processing"));
  ASSERT_TRUE(doc.contains("missing"));
  std::set<std::string> awaiting_pods;
  std::set<std::string> awaiting_sources;
  for (const Json& m : doc["missing"]) {
    const std::string reason = m.at("reason");
    const std::string source = m.at("source");
    if (reason == "awaiting a second counter sample") {
      awaiting_pods.insert(m.at("pod").get<std::string>());
      awaiting_sources.insert(source);
      continue;
    }
    // Anything else is a not-partial "unsupported source" entry, never a scrape failure.
    EXPECT_THAT(reason, StartsWith("unsupported source:")) << m.dump();
  }
  for (const std::string& pod : sim_->PodNames()) {
    EXPECT_TRUE(awaiting_pods.contains(pod)) << pod << " lists no awaiting source";
  }
  EXPECT_TRUE(awaiting_sources.contains("vllm:time_to_first_token_seconds"))
      << doc["missing"].dump(2);

  // The same read, windowed: what was awaiting is now present (cache hits included).
  const CliResult windowed = Snapshot({"chat", "-o", "json", "--window", "1s"});
  ASSERT_EQ(windowed.exit_code, 0) << windowed.err;
  const Json second = Json::parse(windowed.out);
  for (const Json& m : second.value("missing", Json::array())) {
    EXPECT_NE(m.at("reason"), "awaiting a second counter sample") << m.dump();
  }
}

TEST_F(SnapshotCommandTest, YamlHasTheJsonFields) {
  const CliResult yaml = Snapshot({"chat", "-o", "yaml", "--window", "1s"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  const CliResult json = Snapshot({"chat", "-o", "json", "--window", "1s"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  // Read back with the reader objects files go through (Kubernetes' typing).
  std::vector<nlohmann::json> docs;
  std::string error;
  ASSERT_OK(deployment::ParseYaml(yaml.out, &docs));
  ASSERT_EQ(docs.size(), 1u);
  const nlohmann::json& from_yaml = docs[0];
  ASSERT_TRUE(from_yaml.is_object());
  EXPECT_EQ(from_yaml["kind"], "ModelDeploymentMetrics");
  EXPECT_EQ(from_yaml["apiVersion"], "worker.gpustack.ai/v1");
  EXPECT_EQ(from_yaml["metadata"]["name"], "chat");
  EXPECT_EQ(from_yaml["metadata"]["namespace"], "prod");
  EXPECT_TRUE(from_yaml["metadata"]["creationTimestamp"].is_null());
  EXPECT_EQ(from_yaml["partial"], false);
  // The timestamp is a string, and quoted: readers with a YAML 1.1 timestamp type keep it too.
  ASSERT_TRUE(from_yaml["timestamp"].is_string());
  EXPECT_EQ(from_yaml["timestamp"].get<std::string>().size(), 20u);
  EXPECT_THAT(yaml.out, ::testing::HasSubstr("\ntimestamp: \"" +
                                             from_yaml["timestamp"].get<std::string>() + "\"\n"));

  const Json doc = Json::parse(json.out);
  EXPECT_EQ(KeySet(from_yaml), KeySet(doc)) << yaml.out;
  for (const char* list : {"processing", "queueing", "cacheHits", "latency", "traffic"}) {
    ASSERT_TRUE(from_yaml.contains(list)) << list;
    ASSERT_FALSE(from_yaml[list].empty()) << list;
    const std::set<std::string> json_keys = KeySet(doc[list][0]);
    for (const nlohmann::json& item : from_yaml[list]) EXPECT_EQ(KeySet(item), json_keys) << list;
  }
  // Numbers read back as numbers, in the same form the JSON uses.
  for (const nlohmann::json& item : from_yaml["latency"]) {
    EXPECT_TRUE(item["value"].is_number()) << item;
    ASSERT_TRUE(item["windowSeconds"].is_number()) << item;
    EXPECT_GT(item["windowSeconds"].get<double>(), 0.9);
    EXPECT_EQ(item["unit"], "seconds");
  }
}

TEST_F(SnapshotCommandTest, TableReadsLikeKubectlTop) {
  const CliResult r = Snapshot({"chat", "--window", "1s"});  // -o table is the default
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("MODELDEPLOYMENT prod/chat   AT "));
  const std::vector<std::string> lines = Lines(r.out);
  auto heading = [&](const std::string& prefix) {
    return std::find_if(lines.begin(), lines.end(),
                        [&](const std::string& l) { return l.starts_with(prefix); }) -
           lines.begin();
  };
  const auto processing = heading("PROCESSING");
  const auto cache = heading("CACHE HITS");
  const auto latency = heading("LATENCY");
  const auto traffic = heading("TRAFFIC");
  const auto n = static_cast<long>(lines.size());
  ASSERT_LT(processing, n) << r.out;
  ASSERT_LT(cache, n) << r.out;
  ASSERT_LT(latency, n) << r.out;
  ASSERT_LT(traffic, n) << r.out;
  // kubectl-top order, each heading followed by a column header and at least one row.
  EXPECT_LT(processing, cache);
  EXPECT_LT(cache, latency);
  EXPECT_LT(latency, traffic);
  for (auto at : {processing, cache, latency, traffic}) {
    ASSERT_LT(at + 2, n);
    EXPECT_THAT(lines[at + 1], Not(IsEmpty()));
    EXPECT_THAT(lines[at + 2], Not(IsEmpty())) << lines[at] << " has no rows";
  }
  EXPECT_THAT(lines[latency + 1], StartsWith("POD "));
  EXPECT_THAT(r.out, HasSubstr("chat-server-"));
  EXPECT_THAT(r.out, Not(HasSubstr("PARTIAL")));
}

TEST_F(SnapshotCommandTest, WatchPrintsOneSnapshotPerRound) {
  // No --window wait: the first round is a baseline, the second is windowed against it.
  const CliResult json =
      Snapshot({"chat", "-o", "json", "--window", "0", "--watch", "1s", "--rounds", "2"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const std::vector<std::string> lines = Lines(json.out);
  ASSERT_EQ(lines.size(), 2u) << json.out;
  const Json first = Json::parse(lines[0]);
  const Json second = Json::parse(lines[1]);
  EXPECT_EQ(first.at("partial"), true);
  EXPECT_FALSE(first.contains("latency"));
  EXPECT_EQ(second.at("partial"), false) << second.dump(2);
  ASSERT_TRUE(second.contains("latency"));
  ASSERT_TRUE(second.contains("traffic"));
  ASSERT_TRUE(second.contains("cacheHits"));
  for (const Json& w : second["latency"]) {
    EXPECT_GT(w.at("windowSeconds").get<double>(), 0.9) << w.dump();
    EXPECT_LT(w.at("windowSeconds").get<double>(), 5.0) << w.dump();
  }

  const CliResult table = Snapshot({"chat", "--window", "0", "--watch", "500ms", "--rounds", "2"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(Count(table.out, "MODELDEPLOYMENT prod/chat"), 2u) << table.out;
}

// `--watch` follows the objects file: a Pod that restarts as a new Pod (new UID, counters from
// zero; the simulator rewrites the file) gets a fresh baseline, never a window across the two
// processes, and has windows again the round after.
TEST(SnapshotWatchTest, RestartedPodGetsAFreshBaseline) {
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ScratchDir scratch;
  sim::DeploymentSimOptions options;
  options.name = "chat";
  options.ns = "prod";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = 2}};
  options.seed = 7;
  options.requests_per_second = 40;
  options.objects_file = scratch.File("objects.json");
  sim::DeploymentSim simulator(options);
  std::string error;
  ASSERT_OK(simulator.Start());
  const std::string out = scratch.File("watch.out");
  constexpr size_t kRounds = 7;
  ::modelmetrics::testing::CliProcess process(
      {"snapshot", "--objects", options.objects_file, "-n", "prod", "chat", "-o", "json",
       "--window", "0", "--watch", "1s", "--rounds", std::to_string(kRounds)},
      out, scratch.File("watch.err"));
  ASSERT_TRUE(process.started());
  const auto rounds_printed = [&] {
    std::ifstream in(out);
    return static_cast<size_t>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  ::modelmetrics::testing::WaitUntil([&] { return rounds_printed() >= 2; },
                                     ::modelmetrics::testing::kCommandDeadline);
  // A baseline round, then a windowed one; a stalled test thread may see one more, which is
  // fine while two rounds are left after the restart.
  const size_t before = rounds_printed();
  ASSERT_GE(before, 2u);
  ASSERT_LE(before, kRounds - 3);
  const std::string pod = "chat-server-0";
  const std::string old_uid = simulator.Pods()[0].uid;
  ASSERT_TRUE(simulator.SetFault(pod, sim::PodFault::kRestart));
  ASSERT_TRUE(simulator.SetFault(pod, sim::PodFault::kNone));
  ASSERT_NE(simulator.Pods()[0].uid, old_uid);
  const CliResult r =  // the rounds left, one a second, and then a command's deadline
      process.Wait(std::chrono::seconds(kRounds) + ::modelmetrics::testing::kCommandDeadline);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), kRounds) << r.out;
  const auto has_window = [&](const std::string& line) {
    for (const Json& w : Json::parse(line).value("latency", Json::array())) {
      if (w.at("name") == "ttft" && w.at("pod") == pod) return true;
    }
    return false;
  };
  const auto ttft_reason = [&](const std::string& line) -> std::string {
    const Json snapshot = Json::parse(line);  // kept alive: the loop holds a reference into it
    for (const Json& m : snapshot.at("missing")) {
      if (m.value("pod", "") == pod && m.at("source") == "vllm:time_to_first_token_seconds") {
        return m.at("reason");
      }
    }
    return "";
  };
  for (size_t i = 1; i < before; ++i) EXPECT_TRUE(has_window(lines[i])) << lines[i];
  // The round in flight at the restart may have read before it (a window of the old process),
  // or read the old file but scraped the new process (a counter reset, as for any restart
  // Kubernetes reports late). The round after it read the new file: the new Pod's baseline.
  size_t fresh = before;
  if (ttft_reason(lines[fresh]) != "awaiting a second counter sample") {
    EXPECT_TRUE(has_window(lines[fresh]) || ttft_reason(lines[fresh]) == "counter reset")
        << lines[fresh];
    ++fresh;
  }
  EXPECT_EQ(ttft_reason(lines[fresh]), "awaiting a second counter sample") << lines[fresh];
  EXPECT_FALSE(has_window(lines[fresh])) << lines[fresh];
  EXPECT_TRUE(has_window(lines[fresh + 1])) << lines[fresh + 1];
}

TEST_F(SnapshotCommandTest, UnknownDeploymentIsNotFound) {
  const CliResult r = Snapshot({"nope", "--window", "0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "Error from server (NotFound): modeldeployments.worker.gpustack.ai \"nope\" not "
            "found\n");
  // The name is looked up in its namespace.
  const CliResult elsewhere = RunModelmetrics(
      scratch_, {"snapshot", "--objects", *objects_, "-n", "default", "chat", "--window", "0"});
  EXPECT_EQ(elsewhere.exit_code, 1);
  EXPECT_THAT(elsewhere.err, HasSubstr("(NotFound)"));
}

TEST_F(SnapshotCommandTest, UsageAndConfigurationErrorsExitTwo) {
  const CliResult none = RunModelmetrics(scratch_, {"snapshot", "-n", "prod", "chat"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.out, "");
  EXPECT_THAT(none.err, HasSubstr("no object source"));
  EXPECT_THAT(none.err, HasSubstr("--objects"));

  const CliResult two = RunModelmetrics(
      scratch_, {"snapshot", "--objects", *objects_, "--kubeconfig", *objects_, "chat"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_THAT(two.err, HasSubstr("choose one of"));

  const CliResult absent =
      RunModelmetrics(scratch_, {"snapshot", "--objects", scratch_.File("absent.json"), "chat"});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_THAT(absent.err, HasSubstr("absent.json"));

  const std::string garbage = scratch_.Write("garbage.json", "{\"kind\": \"List\", \"items\": [");
  const CliResult bad = RunModelmetrics(scratch_, {"snapshot", "--objects", garbage, "chat"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_THAT(bad.err, StartsWith("modelmetrics snapshot: "));

  EXPECT_EQ(Snapshot({"chat", "-o", "xml"}).exit_code, 2);
  EXPECT_EQ(Snapshot({"chat", "--window", "soon"}).exit_code, 2);
  EXPECT_EQ(Snapshot({"chat", "--rounds", "-1"}).exit_code, 2);
  EXPECT_EQ(Snapshot({}).exit_code, 2);  // no name
}

}  // namespace
}  // namespace modelmetrics
