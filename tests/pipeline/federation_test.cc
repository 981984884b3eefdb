// Tests of the federation of external vLLM engines (src/pipeline/federation.h): the engine map,
// the pure relabel-and-merge into a writer, and the Federation collector on a Registry, served
// by loopback HttpServers (one real vLLM V1 capture as two engines, failing endpoints, an
// OpenMetrics engine, version skew). Expectations are computed from the inputs with the parser,
// independently of the code under test.
#include "pipeline/federation.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "modelmetrics/exposition.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"
#include "modelmetrics/writer.h"
#include "net/http_server.h"
#include "pipeline/fixture_text.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::pipeline {
namespace {

using ::modelmetrics::testing::kV1FixturePath;
using ::modelmetrics::testing::ReadFile;

using ::modelmetrics::net::HttpRequest;
using ::modelmetrics::net::HttpResponse;
using ::modelmetrics::net::HttpServer;

const std::string& kFixture = kV1FixturePath;

// "name{a="1",b="2"}" with labels sorted by name.
std::string Key(std::string_view name, std::vector<LabelPair> labels) {
  std::sort(labels.begin(), labels.end());
  std::string key(name);
  key += '{';
  for (const auto& [k, v] : labels) key += k + "=\"" + v + "\",";
  key += '}';
  return key;
}

struct Parsed {
  std::multimap<std::string, double> series;  // vllm:* samples by Key
  std::vector<std::string> type_lines;        // names of every `# TYPE` line
  bool labels_sorted = true;                  // every vllm:* sample's labels in name order
  bool any_engine_label = false;
};

// Parses an exposition strictly (format given) and indexes its samples of families `prefix*`.
Parsed ParseOutput(const std::string& text, Format format, std::string_view prefix = "vllm:") {
  Parsed out;
  ParseOptions options;
  options.format = format;
  std::vector<ParseError> errors;
  std::vector<MetricFamily> families = ParseFamilies(text, options, &errors);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors[0].ToString()) << "\n" << text;
  for (const MetricFamily& f : families) {
    if (!f.name.starts_with(prefix)) continue;
    for (const MetricSample& s : f.samples) {
      for (size_t i = 1; i < s.labels.size(); ++i) {
        if (!(s.labels[i - 1].first < s.labels[i].first)) out.labels_sorted = false;
      }
      for (const auto& l : s.labels) {
        if (l.first == "engine") out.any_engine_label = true;
      }
      out.series.emplace(Key(s.name, s.labels), s.value);
    }
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# TYPE ")) {
      out.type_lines.push_back(line.substr(7, line.find(' ', 7) - 7));
    }
  }
  return out;
}

// The relabelled series a body's `vllm:*` families should become for (stage, replica) under the
// kEndpoint rule: `engine` removed, `stage`/`replica` set.
std::multimap<std::string, double> Expected(const std::string& body, Format format,
                                            std::string_view stage, std::string_view replica) {
  ParseOptions options;
  options.format = format;
  std::multimap<std::string, double> out;
  for (const MetricFamily& f : ParseFamilies(body, options)) {
    if (!f.name.starts_with("vllm:")) continue;
    for (const MetricSample& s : f.samples) {
      std::vector<LabelPair> labels;
      for (const auto& l : s.labels) {
        if (l.first != "engine" && l.first != "stage" && l.first != "replica") labels.push_back(l);
      }
      labels.emplace_back("stage", std::string(stage));
      labels.emplace_back("replica", std::string(replica));
      out.emplace(Key(s.name, labels), s.value);
    }
  }
  return out;
}

// Every key of `want` present exactly once in `got` with a bit-identical value, and nothing else.
void ExpectSameSeries(const std::multimap<std::string, double>& got,
                      const std::multimap<std::string, double>& want) {
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [key, value] : want) {
    ASSERT_EQ(want.count(key), 1u) << "input itself repeats " << key;
    ASSERT_EQ(got.count(key), 1u) << key;
    EXPECT_TRUE(SameBits(got.find(key)->second, value))
        << key << ": " << got.find(key)->second << " vs " << value;
  }
  for (const auto& [key, value] : got) EXPECT_EQ(want.count(key), 1u) << "unexpected " << key;
}

void ExpectUniqueTypeLines(const Parsed& p) {
  std::set<std::string> seen;
  for (const std::string& name : p.type_lines) {
    EXPECT_TRUE(seen.insert(name).second) << "second TYPE line for " << name;
  }
}

// promtool check metrics, when installed: exit 0, or 3 for lint-only findings, and no "error".
void ExpectPromtoolAccepts(const std::string& text) {
  if (!std::ifstream("/usr/bin/promtool").good()) {
    std::printf("note: no /usr/bin/promtool, exposition not checked by it\n");
    return;
  }
  const std::string path = test_paths::ScratchFile("federation_promtool.prom");
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  const std::string command = "/usr/bin/promtool check metrics < '" + path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  std::remove(path.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << output;
  const int rc = WEXITSTATUS(status);
  EXPECT_TRUE(rc == 0 || rc == 3) << "promtool exit " << rc << "\n" << output;
  std::string lower = output;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_EQ(lower.find("error"), std::string::npos) << output;
}

std::string Write(std::span<const EngineScrape> scrapes, const EngineMap& map, Format format,
                  std::vector<EngineReport>* reports = nullptr,
                  const RelabelOptions& options = {}) {
  std::string out;
  ExpositionWriter writer(&out, format);
  std::vector<EngineReport> r = RelabelEngines(scrapes, map, writer, options);
  writer.Finish();
  if (reports != nullptr) *reports = std::move(r);
  return out;
}

size_t Dropped(const EngineReport& r, DropReason reason) {
  return r.dropped[static_cast<size_t>(reason)];
}

// ---------------------------------------------------------------------------------------------
// EngineMap

TEST(EngineMapTest, FlatOrderOfPoolsOneTwoOne) {
  const EngineMap map{1, 2, 1};
  ASSERT_EQ(map.size(), 4u);
  const std::vector<StageReplica> want = {{0, 0}, {1, 0}, {1, 1}, {2, 0}};
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(map.At(i).has_value()) << i;
    EXPECT_EQ(*map.At(i), want[i]) << i;
    EXPECT_EQ(map.FlatIndex(want[i]), std::optional<size_t>(i)) << i;
    EXPECT_EQ(map.StageLabel(i), std::to_string(want[i].stage));
    EXPECT_EQ(map.ReplicaLabel(i), std::to_string(want[i].replica));
  }
  EXPECT_EQ(map.entries(), want);
  EXPECT_FALSE(map.At(4).has_value());
  EXPECT_FALSE(map.FlatIndex({0, 1}).has_value());
  EXPECT_FALSE(map.FlatIndex({1, 2}).has_value());
  EXPECT_FALSE(map.FlatIndex({3, 0}).has_value());
}

TEST(EngineMapTest, EngineLabelValues) {
  const EngineMap map{1, 2, 1};
  EXPECT_EQ(map.FromEngineLabel("0"), std::optional<size_t>(0));
  EXPECT_EQ(map.FromEngineLabel("3"), std::optional<size_t>(3));
  EXPECT_EQ(map.FromEngineLabel("02"), std::optional<size_t>(2));  // Python int("02")
  for (const char* bad : {"4", "", "-1", "+1", "1.0", " 1", "1 ", "x", "99999999999999999999999"}) {
    EXPECT_FALSE(map.FromEngineLabel(bad).has_value()) << bad;
  }
}

TEST(EngineMapTest, EmptyAndZeroReplicaStages) {
  const EngineMap none;
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.At(0).has_value());
  EXPECT_FALSE(none.FromEngineLabel("0").has_value());

  const EngineMap map{2, 0, 1};  // a stage without replicas takes no index
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(*map.At(0), (StageReplica{0, 0}));
  EXPECT_EQ(*map.At(1), (StageReplica{0, 1}));
  EXPECT_EQ(*map.At(2), (StageReplica{2, 0}));
  EXPECT_FALSE(map.FlatIndex({1, 0}).has_value());
  EXPECT_EQ(map.FlatIndex({2, 0}), std::optional<size_t>(2));
  EXPECT_EQ(map.StageLabel(2), "2");
}

// ---------------------------------------------------------------------------------------------
// RelabelEngines

TEST(RelabelTest, RealV1CaptureAsTwoEnginesText) {
  const std::string body = ReadFile(kFixture);
  ASSERT_FALSE(body.empty()) << kFixture;
  const EngineScrape scrapes[] = {
      {body, "text/plain; version=0.0.4; charset=utf-8", {1, 0}},
      {body, "text/plain; version=0.0.4; charset=utf-8", {1, 1}},
  };
  std::vector<EngineReport> reports;
  const std::string text = Write(scrapes, EngineMap{1, 2}, Format::kText, &reports);
  ASSERT_EQ(reports.size(), 2u);
  for (const EngineReport& r : reports) {
    EXPECT_TRUE(r.parsed) << r.error;
    EXPECT_EQ(r.dropped_total(), 0u);
    EXPECT_EQ(r.samples, 422u);  // the capture's vllm:* sample lines
  }
  auto want = Expected(body, Format::kText, "1", "0");
  want.merge(Expected(body, Format::kText, "1", "1"));
  const Parsed got = ParseOutput(text, Format::kText);
  ExpectSameSeries(got.series, want);
  EXPECT_TRUE(got.labels_sorted);
  EXPECT_FALSE(got.any_engine_label);
  ExpectUniqueTypeLines(got);
  EXPECT_EQ(text.find("python_gc"), std::string::npos);
  EXPECT_EQ(text.find("http_requests"), std::string::npos);
  // client_python's layout is kept: counters as `x_total`, `_created` as its own gauge family.
  EXPECT_NE(text.find("# TYPE vllm:prompt_tokens_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:prompt_tokens_created gauge\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:nixl_xfer_time_seconds_bucket{le=\"0.005\",model_name=\"TinyLlama\","
                      "replica=\"1\",stage=\"1\"} 11205\n"),
            std::string::npos);
  ExpectPromtoolAccepts(text);
}

TEST(RelabelTest, RealV1CaptureAsTwoEnginesOpenMetrics) {
  const std::string body = ReadFile(kFixture);
  const EngineScrape scrapes[] = {{body, "", {1, 0}}, {body, "", {1, 1}}};
  const std::string om = Write(scrapes, EngineMap{1, 2}, Format::kOpenMetrics);
  auto want = Expected(body, Format::kText, "1", "0");
  want.merge(Expected(body, Format::kText, "1", "1"));
  // The same series, now with `_created` inside each counter/histogram family.
  const Parsed got = ParseOutput(om, Format::kOpenMetrics);
  ExpectSameSeries(got.series, want);
  ExpectUniqueTypeLines(got);
  EXPECT_NE(om.find("# TYPE vllm:prompt_tokens counter\n"), std::string::npos);
  EXPECT_EQ(om.find("# TYPE vllm:prompt_tokens_created"), std::string::npos);
  EXPECT_TRUE(om.ends_with("# EOF\n"));
}

TEST(RelabelTest, LabelOrderAndEngineReplacement) {
  const std::string body =
      "# TYPE vllm:x gauge\n"
      "vllm:x{zeta=\"z\",engine=\"0\",model_name=\"m\",stage=\"old\"} 1.5\n";
  const EngineScrape scrapes[] = {{body, "", {2, 7}}};
  const std::string text = Write(scrapes, EngineMap{}, Format::kText);
  EXPECT_EQ(text,
            "# TYPE vllm:x gauge\n"
            "vllm:x{model_name=\"m\",replica=\"7\",stage=\"2\",zeta=\"z\"} 1.5\n");
}

TEST(RelabelTest, FlatIndexRule) {
  const std::string body =
      "# HELP vllm:num_requests_running running\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 10\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 11\n"
      "vllm:num_requests_running{engine=\"2\",model_name=\"m\"} 12\n"
      "vllm:num_requests_running{engine=\"3\",model_name=\"m\"} 13\n"
      "vllm:num_requests_running{engine=\"4\",model_name=\"m\"} 14\n"
      "# TYPE vllm:lora_requests_info gauge\n"
      "vllm:lora_requests_info{max_lora=\"1\"} 1\n";
  const EngineScrape scrapes[] = {{body, "", {9, 9}, EngineLabelRule::kFlatIndex}};
  std::vector<EngineReport> reports;
  const std::string text = Write(scrapes, EngineMap{1, 2, 1}, Format::kText, &reports);
  EXPECT_EQ(text,
            "# HELP vllm:num_requests_running running\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running{model_name=\"m\",replica=\"0\",stage=\"0\"} 10\n"
            "vllm:num_requests_running{model_name=\"m\",replica=\"0\",stage=\"1\"} 11\n"
            "vllm:num_requests_running{model_name=\"m\",replica=\"1\",stage=\"1\"} 12\n"
            "vllm:num_requests_running{model_name=\"m\",replica=\"0\",stage=\"2\"} 13\n"
            "# TYPE vllm:lora_requests_info gauge\n"
            "vllm:lora_requests_info{max_lora=\"1\",replica=\"9\",stage=\"9\"} 1\n");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(Dropped(reports[0], DropReason::kUnknownEngine), 1u);  // engine="4"
  EXPECT_EQ(reports[0].samples, 5u);
}

TEST(RelabelTest, EndpointRuleCollapsesLocalEnginesAsDuplicates) {
  // An endpoint is one (stage, replica): two local engines in one body collide, first wins.
  const std::string body =
      "# TYPE vllm:x gauge\n"
      "vllm:x{engine=\"0\"} 1\n"
      "vllm:x{engine=\"1\"} 2\n";
  const EngineScrape scrapes[] = {{body, "", {0, 0}}};
  std::vector<EngineReport> reports;
  const std::string text = Write(scrapes, EngineMap{}, Format::kText, &reports);
  EXPECT_EQ(text, "# TYPE vllm:x gauge\nvllm:x{replica=\"0\",stage=\"0\"} 1\n");
  EXPECT_EQ(Dropped(reports[0], DropReason::kDuplicate), 1u);
}

// One engine answering in OpenMetrics, another in text (client_python's two layouts of the same
// families): they merge into one family each, in either output format.
const char kOmBody[] =
    "# HELP vllm:prompt_tokens Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens counter\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 123.0\n"
    "vllm:prompt_tokens_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n"
    "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n"
    "# TYPE vllm:e2e_request_latency_seconds histogram\n"
    "# UNIT vllm:e2e_request_latency_seconds seconds\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 1.0 "
    "# {trace_id=\"abc\"} 0.3 1700000000.5\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 2.0\n"
    "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 2.0\n"
    "vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 1.25\n"
    "vllm:e2e_request_latency_seconds_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n"
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0 1700000000.250\n"
    "# HELP process_open_fds Number of open file descriptors.\n"
    "# TYPE process_open_fds gauge\n"
    "process_open_fds 47.0\n"
    "# EOF\n";

const char kTextBody[] =
    "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 7.0\n"
    "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens_created gauge\n"
    "vllm:prompt_tokens_created{engine=\"0\",model_name=\"m\"} 1.6e+09\n"
    "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n"
    "# TYPE vllm:e2e_request_latency_seconds histogram\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 0.0\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 0.0\n"
    "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 0.0\n"
    "vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 0.0\n"
    "# HELP vllm:e2e_request_latency_seconds_created Histogram of e2e request latency.\n"
    "# TYPE vllm:e2e_request_latency_seconds_created gauge\n"
    "vllm:e2e_request_latency_seconds_created{engine=\"0\",model_name=\"m\"} 1.6e+09\n";

TEST(RelabelTest, OpenMetricsAndTextEnginesMerge) {
  const EngineScrape scrapes[] = {
      {kOmBody, "application/openmetrics-text; version=1.0.0; charset=utf-8", {0, 0}},
      {kTextBody, "text/plain; version=0.0.4; charset=utf-8", {1, 0}},
  };
  auto want = Expected(kOmBody, Format::kOpenMetrics, "0", "0");
  want.merge(Expected(kTextBody, Format::kText, "1", "0"));

  std::vector<EngineReport> reports;
  const std::string text = Write(scrapes, EngineMap{}, Format::kText, &reports);
  for (const EngineReport& r : reports) {
    EXPECT_TRUE(r.parsed) << r.error;
    EXPECT_EQ(r.dropped_total(), 0u);
  }
  EXPECT_EQ(text,
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
            "# TYPE vllm:prompt_tokens_total counter\n"
            "vllm:prompt_tokens_total{model_name=\"m\",replica=\"0\",stage=\"0\"} 123\n"
            "vllm:prompt_tokens_total{model_name=\"m\",replica=\"0\",stage=\"1\"} 7\n"
            "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n"
            "# TYPE vllm:prompt_tokens_created gauge\n"
            "vllm:prompt_tokens_created{model_name=\"m\",replica=\"0\",stage=\"0\"} 1.7e+09\n"
            "vllm:prompt_tokens_created{model_name=\"m\",replica=\"0\",stage=\"1\"} 1.6e+09\n"
            "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in "
            "seconds.\n"
            "# TYPE vllm:e2e_request_latency_seconds histogram\n"
            "vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"m\",replica=\"0\","
            "stage=\"0\"} 1\n"
            "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\",replica=\"0\","
            "stage=\"0\"} 2\n"
            "vllm:e2e_request_latency_seconds_count{model_name=\"m\",replica=\"0\",stage=\"0\"} 2\n"
            "vllm:e2e_request_latency_seconds_sum{model_name=\"m\",replica=\"0\",stage=\"0\"} "
            "1.25\n"
            "vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"m\",replica=\"0\","
            "stage=\"1\"} 0\n"
            "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\",replica=\"0\","
            "stage=\"1\"} 0\n"
            "vllm:e2e_request_latency_seconds_count{model_name=\"m\",replica=\"0\",stage=\"1\"} 0\n"
            "vllm:e2e_request_latency_seconds_sum{model_name=\"m\",replica=\"0\",stage=\"1\"} 0\n"
            "# HELP vllm:e2e_request_latency_seconds_created Histogram of e2e request latency in "
            "seconds.\n"
            "# TYPE vllm:e2e_request_latency_seconds_created gauge\n"
            "vllm:e2e_request_latency_seconds_created{model_name=\"m\",replica=\"0\",stage=\"0\"} "
            "1.7e+09\n"
            "vllm:e2e_request_latency_seconds_created{model_name=\"m\",replica=\"0\",stage=\"1\"} "
            "1.6e+09\n"
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running{model_name=\"m\",replica=\"0\",stage=\"0\"} 3 "
            "1700000000250\n");
  ExpectSameSeries(ParseOutput(text, Format::kText).series, want);

  const std::string om = Write(scrapes, EngineMap{}, Format::kOpenMetrics);
  const Parsed got = ParseOutput(om, Format::kOpenMetrics);
  ExpectSameSeries(got.series, want);
  ExpectUniqueTypeLines(got);
  // Exemplar, UNIT and timestamp survive in OpenMetrics; `_created` follows its series.
  EXPECT_NE(om.find("# UNIT vllm:e2e_request_latency_seconds seconds\n"), std::string::npos);
  EXPECT_NE(om.find("vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"m\","
                    "replica=\"0\",stage=\"0\"} 1 # {trace_id=\"abc\"} 0.3 1700000000.5\n"),
            std::string::npos);
  EXPECT_NE(om.find("vllm:prompt_tokens_total{model_name=\"m\",replica=\"0\",stage=\"1\"} 7\n"
                    "vllm:prompt_tokens_created{model_name=\"m\",replica=\"0\",stage=\"1\"} "
                    "1.6e+09\n"),
            std::string::npos);
  EXPECT_NE(om.find("vllm:num_requests_running{model_name=\"m\",replica=\"0\",stage=\"0\"} 3 "
                    "1700000000.25\n"),
            std::string::npos);
}

TEST(RelabelTest, CreatedSeriesCanBeLeftOut) {
  const std::string body = ReadFile(kFixture);
  const EngineScrape scrapes[] = {{body, "", {1, 0}}, {kOmBody, kOpenMetricsContentType, {0, 0}}};
  auto want = Expected(body, Format::kText, "1", "0");
  want.merge(Expected(kOmBody, Format::kOpenMetrics, "0", "0"));
  std::erase_if(want,
                [](const auto& kv) { return kv.first.find("_created{") != std::string::npos; });
  RelabelOptions options;
  options.keep_created = false;
  for (const Format format : {Format::kText, Format::kOpenMetrics}) {
    std::vector<EngineReport> reports;
    const std::string out = Write(scrapes, EngineMap{}, format, &reports, options);
    EXPECT_EQ(out.find("_created"), std::string::npos);
    ExpectSameSeries(ParseOutput(out, format).series, want);
    for (const EngineReport& r : reports) EXPECT_EQ(r.dropped_total(), 0u);
  }
}

TEST(RelabelTest, ConflictingTypeKeepsFirstAndCountsTheRest) {
  // Version skew: one engine's `vllm:num_preemptions` is a gauge, the other's a counter.
  const std::string a =
      "# TYPE vllm:num_preemptions gauge\n"
      "vllm:num_preemptions{engine=\"0\"} 4\n"
      "# TYPE vllm:kv_cache_usage_perc gauge\n"
      "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n";
  const std::string b =
      "# TYPE vllm:num_preemptions_total counter\n"
      "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 9\n"
      "# TYPE vllm:num_preemptions_created gauge\n"
      "vllm:num_preemptions_created{engine=\"0\",model_name=\"m\"} 1.5e+09\n"
      "# TYPE vllm:kv_cache_usage_perc histogram\n"
      "vllm:kv_cache_usage_perc_bucket{engine=\"0\",le=\"+Inf\"} 1\n"
      "vllm:kv_cache_usage_perc_count{engine=\"0\"} 1\n"
      "vllm:kv_cache_usage_perc_sum{engine=\"0\"} 0.5\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{engine=\"0\"} 2\n";
  const EngineScrape scrapes[] = {{a, "", {0, 0}}, {b, "", {0, 1}}};
  std::vector<EngineReport> reports;
  const std::string text = Write(scrapes, EngineMap{}, Format::kText, &reports);
  EXPECT_EQ(text,
            "# TYPE vllm:num_preemptions gauge\n"
            "vllm:num_preemptions{replica=\"0\",stage=\"0\"} 4\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            "vllm:kv_cache_usage_perc{replica=\"0\",stage=\"0\"} 0.5\n"
            "# TYPE vllm:num_requests_waiting gauge\n"
            "vllm:num_requests_waiting{replica=\"1\",stage=\"0\"} 2\n");
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(Dropped(reports[0], DropReason::kTypeConflict), 0u);
  EXPECT_EQ(Dropped(reports[1], DropReason::kTypeConflict), 5u);  // 1 + its _created + 3
  EXPECT_EQ(reports[1].samples, 1u);
  ExpectPromtoolAccepts(text);
}

TEST(RelabelTest, NameClashIsDroppedNotWritten) {
  // A histogram named `x_total` would render `vllm:y_total` twice next to the counter `vllm:y`.
  const std::string a =
      "# TYPE vllm:y_total counter\n"
      "vllm:y_total 1\n";
  const std::string b =
      "# TYPE vllm:y_total histogram\n"
      "vllm:y_total_bucket{le=\"+Inf\"} 1\n"
      "vllm:y_total_count 1\n"
      "vllm:y_total_sum 1\n";
  const EngineScrape scrapes[] = {{a, "", {0, 0}}, {b, "", {0, 1}}};
  std::vector<EngineReport> reports;
  const std::string text = Write(scrapes, EngineMap{}, Format::kText, &reports);
  EXPECT_EQ(text, "# TYPE vllm:y_total counter\nvllm:y_total{replica=\"0\",stage=\"0\"} 1\n");
  EXPECT_EQ(Dropped(reports[1], DropReason::kNameClash), 3u);
}

TEST(RelabelTest, UnparsableBodyContributesNothing) {
  const std::string good = "# TYPE vllm:x gauge\nvllm:x{engine=\"0\"} 1\n";
  const std::string bad = "# TYPE vllm:x gauge\nvllm:x{engine=\"0\"} 2\nvllm:x{engine=\"1\" 3\n";
  const EngineScrape scrapes[] = {{bad, "", {0, 0}}, {good, "", {0, 1}}, {"<html>", "", {0, 2}}};
  std::vector<EngineReport> reports;
  const std::string text = Write(scrapes, EngineMap{}, Format::kText, &reports);
  EXPECT_EQ(text, "# TYPE vllm:x gauge\nvllm:x{replica=\"1\",stage=\"0\"} 1\n");
  EXPECT_FALSE(reports[0].parsed);
  EXPECT_FALSE(reports[0].error.empty());
  EXPECT_EQ(reports[0].samples, 0u);
  EXPECT_TRUE(reports[1].parsed);
  EXPECT_FALSE(reports[2].parsed);
  // An OpenMetrics body without `# EOF` is not strictly valid either.
  const EngineScrape om[] = {
      {"# TYPE vllm:x gauge\nvllm:x 1\n", "application/openmetrics-text", {0, 0}}};
  EXPECT_EQ(Write(om, EngineMap{}, Format::kText, &reports), "");
  EXPECT_FALSE(reports[0].parsed);
}

TEST(RelabelTest, BareTextCounterBecomesUntyped) {
  // `# TYPE x counter` with a sample named `x`: valid text, but no OpenMetrics counter.
  const std::string body =
      "# HELP vllm:legacy old style\n"
      "# TYPE vllm:legacy counter\n"
      "vllm:legacy{engine=\"0\"} 3\n";
  const EngineScrape scrapes[] = {{body, "", {0, 0}}};
  std::vector<EngineReport> reports;
  EXPECT_EQ(Write(scrapes, EngineMap{}, Format::kText, &reports),
            "# HELP vllm:legacy old style\n"
            "# TYPE vllm:legacy untyped\n"
            "vllm:legacy{replica=\"0\",stage=\"0\"} 3\n");
  EXPECT_EQ(reports[0].dropped_total(), 0u);
  EXPECT_EQ(Write(scrapes, EngineMap{}, Format::kOpenMetrics),
            "# HELP vllm:legacy old style\n"
            "# TYPE vllm:legacy unknown\n"
            "vllm:legacy{replica=\"0\",stage=\"0\"} 3\n"
            "# EOF\n");
}

TEST(RelabelTest, OtherFamiliesAndTheOmniPrefixAreIgnored) {
  const std::string body =
      "# TYPE vllm_omni:requests_success counter\n"
      "vllm_omni:requests_success_total 1\n"
      "# TYPE vllm:x gauge\n"
      "vllm:x 2\n"
      "process_open_fds 3\n";
  const EngineScrape scrapes[] = {{body, "", {0, 0}}};
  EXPECT_EQ(Write(scrapes, EngineMap{}, Format::kText),
            "# TYPE vllm:x gauge\nvllm:x{replica=\"0\",stage=\"0\"} 2\n");
}

// ---------------------------------------------------------------------------------------------
// Federation on a Registry, against loopback servers.

// A loopback server with fixed routes plus /hang (answered only when the server is released).
class EngineServer {
 public:
  EngineServer() : server_(Options()) {}
  ~EngineServer() { Stop(); }

  void Serve(const std::string& path, std::string content_type, std::string body,
             int status = 200) {
    server_.Route("GET", path, [=, this](const HttpRequest& request) {
      {
        std::lock_guard lock(mu_);
        ++hits_;
        accepts_.push_back(std::string(request.headers.Get("Accept")));
      }
      HttpResponse r;
      r.status = status;
      r.content_type = content_type;
      r.body = body;
      return r;
    });
  }
  void Hang(const std::string& path) {
    server_.RouteAsync("GET", path, [this](const HttpRequest&, net::Responder responder) {
      std::lock_guard lock(mu_);
      held_.push_back(std::move(responder));
    });
  }
  void Start() {
    std::string error;
    ASSERT_OK(server_.Start());
  }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      for (auto& r : held_) r(HttpResponse::Text(200, "late\n"));
      held_.clear();
    }
    server_.Stop();
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server_.port()) + path;
  }
  int hits() {
    std::lock_guard lock(mu_);
    return hits_;
  }
  std::vector<std::string> accepts() {
    std::lock_guard lock(mu_);
    return accepts_;
  }

 private:
  static net::ServerOptions Options() {
    net::ServerOptions o;
    o.threads = 2;
    o.shutdown_timeout = std::chrono::milliseconds(200);
    return o;
  }
  HttpServer server_;
  std::mutex mu_;
  int hits_ = 0;
  std::vector<std::string> accepts_;
  std::vector<net::Responder> held_;
};

// A loopback URL nothing listens on: a server's port after it stopped.
std::string RefusedUrl() {
  HttpServer server(net::ServerOptions{});
  std::string error;
  EXPECT_OK(server.Start());
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics";
  server.Stop();
  return url;
}

// The value of `family_total{stage,replica,reason}` in a rendered text exposition; -1 if absent.
double CounterIn(const std::string& text, std::string_view family, std::string_view stage,
                 std::string_view replica, std::string_view reason) {
  ParseOptions options;
  options.format = Format::kText;
  for (const MetricFamily& f : ParseFamilies(text, options)) {
    for (const MetricSample& s : f.samples) {
      if (s.name != std::string(family) + "_total") continue;
      std::map<std::string, std::string> l(s.labels.begin(), s.labels.end());
      if (l["stage"] == stage && l["replica"] == replica && l["reason"] == reason) return s.value;
    }
  }
  return -1;
}

TEST(FederationTest, RealV1CaptureAsTwoReplicasOfStageOne) {
  const std::string body = ReadFile(kFixture);
  EngineServer server;
  server.Serve("/engine0/metrics", std::string(kTextContentType), body);
  server.Serve("/engine1/metrics", std::string(kTextContentType), body);
  server.Start();

  Registry registry;
  FederationOptions options;
  options.endpoints = {{server.Url("/engine0/metrics"), {1, 0}},
                       {server.Url("/engine1/metrics"), {1, 1}}};
  std::string error;
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, options, &federation));
  ASSERT_NE(federation, nullptr);

  const std::string text = registry.Render(Format::kText);
  auto want = Expected(body, Format::kText, "1", "0");
  want.merge(Expected(body, Format::kText, "1", "1"));
  ASSERT_EQ(want.size(), 2u * 422u);
  const Parsed got = ParseOutput(text, Format::kText);
  ExpectSameSeries(got.series, want);
  EXPECT_TRUE(got.labels_sorted);
  EXPECT_FALSE(got.any_engine_label);
  ExpectUniqueTypeLines(got);
  EXPECT_EQ(server.hits(), 2);
  for (const std::string& accept : server.accepts()) {
    EXPECT_EQ(accept.find("openmetrics"), std::string::npos) << accept;
  }
  EXPECT_EQ(federation->scrape_errors()->Labels({"1", "0", "parse"}).Value(), 0);
  ExpectPromtoolAccepts(text);

  // The same through an OpenMetrics render (the engines are then asked for OpenMetrics first).
  const std::string om = registry.Render(Format::kOpenMetrics);
  ExpectSameSeries(ParseOutput(om, Format::kOpenMetrics).series, want);
  EXPECT_NE(server.accepts().back().find("application/openmetrics-text"), std::string::npos);
}

TEST(FederationTest, FailingEndpointsAreLeftOutAndCounted) {
  EngineServer server;
  const std::string good =
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 5\n";
  server.Serve("/good", std::string(kTextContentType), good);
  server.Serve("/status500", "text/plain", "boom\n", 500);
  server.Serve("/garbage", std::string(kTextContentType), "this is { not an exposition\n");
  server.Hang("/hang");
  server.Start();

  Registry registry;
  FederationOptions options;
  options.endpoints = {{server.Url("/good"), {0, 0}},
                       {server.Url("/status500"), {1, 0}},
                       {RefusedUrl(), {1, 1}},
                       {server.Url("/garbage"), {2, 0}},
                       {server.Url("/hang"), {2, 1}}};
  options.timeout = std::chrono::milliseconds(500);
  std::string error;
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, options, &federation));
  ASSERT_NE(federation, nullptr);

  const auto start = std::chrono::steady_clock::now();
  const std::string first = registry.Render(Format::kText);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(450));  // waited for /hang until the deadline
  EXPECT_LT(took, std::chrono::seconds(10));        // and no longer: /hang never answers

  const Parsed got = ParseOutput(first, Format::kText);
  std::multimap<std::string, double> want = Expected(good, Format::kText, "0", "0");
  ExpectSameSeries(got.series, want);

  Family<Counter>* errors = federation->scrape_errors();
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->Labels({"1", "0", "http_status"}).Value(), 1);
  EXPECT_EQ(errors->Labels({"1", "1", "connection_refused"}).Value(), 1);
  EXPECT_EQ(errors->Labels({"2", "0", "parse"}).Value(), 1);
  EXPECT_EQ(errors->Labels({"2", "1", "deadline"}).Value(), 1);
  EXPECT_EQ(errors->Labels({"0", "0", "parse"}).Value(), 0);

  // Families render before collectors: the first render's failures show in the next one.
  const std::string second = registry.Render(Format::kText);
  EXPECT_EQ(CounterIn(second, kScrapeErrorsFamily, "1", "0", "http_status"), 1);
  EXPECT_EQ(CounterIn(second, kScrapeErrorsFamily, "1", "1", "connection_refused"), 1);
  EXPECT_EQ(CounterIn(second, kScrapeErrorsFamily, "2", "0", "parse"), 1);
  EXPECT_EQ(CounterIn(second, kScrapeErrorsFamily, "2", "1", "deadline"), 1);
  ExpectSameSeries(ParseOutput(second, Format::kText).series, want);
  EXPECT_EQ(errors->Labels({"2", "1", "deadline"}).Value(), 2);
  server.Stop();
}

TEST(FederationTest, OpenMetricsEngine) {
  EngineServer server;
  server.Serve("/om", std::string(kOpenMetricsContentType), kOmBody);
  server.Serve("/text", std::string(kTextContentType), kTextBody);
  server.Start();

  Registry registry;
  FederationOptions options;
  options.endpoints = {{server.Url("/om"), {0, 0}}, {server.Url("/text"), {1, 0}}};
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, options, &federation));
  ASSERT_NE(federation, nullptr);

  auto want = Expected(kOmBody, Format::kOpenMetrics, "0", "0");
  want.merge(Expected(kTextBody, Format::kText, "1", "0"));
  const std::string text = registry.Render(Format::kText);
  const Parsed got = ParseOutput(text, Format::kText);
  ExpectSameSeries(got.series, want);
  ExpectUniqueTypeLines(got);
  ExpectPromtoolAccepts(text);
  const std::string om = registry.Render(Format::kOpenMetrics);
  ExpectSameSeries(ParseOutput(om, Format::kOpenMetrics).series, want);
  EXPECT_NE(om.find("# {trace_id=\"abc\"} 0.3"), std::string::npos);
  EXPECT_EQ(federation->scrape_errors()->Labels({"0", "0", "parse"}).Value(), 0);
}

TEST(FederationTest, ConflictingTypeAcrossEngines) {
  EngineServer server;
  server.Serve("/a", std::string(kTextContentType),
               "# HELP vllm:num_requests_waiting waiting\n"
               "# TYPE vllm:num_requests_waiting gauge\n"
               "vllm:num_requests_waiting{engine=\"0\"} 1\n");
  server.Serve("/b", std::string(kTextContentType),
               "# TYPE vllm:num_requests_waiting untyped\n"
               "vllm:num_requests_waiting{engine=\"0\"} 2\n"
               "# TYPE vllm:num_requests_running gauge\n"
               "vllm:num_requests_running{engine=\"0\"} 3\n");
  server.Start();

  Registry registry;
  FederationOptions options;
  options.endpoints = {{server.Url("/a"), {0, 0}}, {server.Url("/b"), {0, 1}}};
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, options, &federation));
  ASSERT_NE(federation, nullptr);
  const std::string text = registry.Render(Format::kText);
  const Parsed got = ParseOutput(text, Format::kText);
  std::multimap<std::string, double> want = {
      {Key("vllm:num_requests_waiting", {{"stage", "0"}, {"replica", "0"}}), 1},
      {Key("vllm:num_requests_running", {{"stage", "0"}, {"replica", "1"}}), 3}};
  ExpectSameSeries(got.series, want);
  ExpectUniqueTypeLines(got);
  EXPECT_NE(text.find("# TYPE vllm:num_requests_waiting gauge\n"), std::string::npos);
  EXPECT_EQ(federation->dropped_samples()->Labels({"0", "1", "type_conflict"}).Value(), 1);
  EXPECT_EQ(federation->scrape_errors()->Labels({"0", "1", "parse"}).Value(), 0);
  EXPECT_EQ(
      CounterIn(registry.Render(Format::kText), kDroppedSamplesFamily, "0", "1", "type_conflict"),
      1);
}

TEST(FederationTest, DestroyedFederationDetaches) {
  EngineServer server;
  server.Serve("/m", std::string(kTextContentType), "# TYPE vllm:x gauge\nvllm:x 1\n");
  server.Start();
  Registry registry;
  FederationOptions options;
  options.endpoints = {{server.Url("/m"), {0, 0}}};
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, options, &federation));
  ASSERT_NE(federation, nullptr);
  EXPECT_NE(registry.Render(Format::kText).find("vllm:x{"), std::string::npos);
  federation.reset();
  EXPECT_EQ(registry.Render(Format::kText).find("vllm:x"), std::string::npos);
  EXPECT_EQ(server.hits(), 1);
  // A new Federation on the same registry shares the (identical) counter families and serves.
  std::string error;
  std::unique_ptr<Federation> again;
  ASSERT_OK(Federation::Create(registry, options, &again));
  ASSERT_NE(again, nullptr);
  EXPECT_NE(registry.Render(Format::kText).find("vllm:x{"), std::string::npos);
}

TEST(FederationTest, NoEndpoints) {
  Registry registry;
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, FederationOptions{}, &federation));
  ASSERT_NE(federation, nullptr);
  EXPECT_EQ(registry.Render(Format::kText).find("vllm:"), std::string::npos);
  EXPECT_TRUE(registry.Render(Format::kOpenMetrics).ends_with("# EOF\n"));
}

TEST(FederationTest, DisabledRegistryFetchesNothing) {
  EngineServer server;
  server.Serve("/m", std::string(kTextContentType), "# TYPE vllm:x gauge\nvllm:x 1\n");
  server.Start();
  Registry registry(RegistryOptions{.enabled = false});
  FederationOptions options;
  options.endpoints = {{server.Url("/m"), {0, 0}}};
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, options, &federation));
  ASSERT_NE(federation, nullptr);
  EXPECT_EQ(federation->scrape_errors(), nullptr);
  EXPECT_EQ(registry.Render(Format::kText).find("vllm:"), std::string::npos);
  EXPECT_EQ(server.hits(), 0);
}

TEST(FederationTest, ConcurrentRenders) {
  const std::string body = ReadFile(kFixture);
  EngineServer server;
  server.Serve("/m", std::string(kTextContentType), body);
  server.Start();
  Registry registry;
  FederationOptions options;
  options.endpoints = {{server.Url("/m"), {0, 0}}, {server.Url("/m"), {0, 1}}};
  std::unique_ptr<Federation> federation;
  ASSERT_OK(Federation::Create(registry, options, &federation));
  ASSERT_NE(federation, nullptr);
  auto want = Expected(body, Format::kText, "0", "0");
  want.merge(Expected(body, Format::kText, "0", "1"));
  std::vector<std::string> outputs(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    threads.emplace_back([&, i] { outputs[i] = registry.Render(Format::kText); });
  }
  for (auto& t : threads) t.join();
  for (const std::string& text : outputs) {
    ExpectSameSeries(ParseOutput(text, Format::kText).series, want);
  }
}

}  // namespace
}  // namespace modelmetrics::pipeline
