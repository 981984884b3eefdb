// EngineStatsLogger and the engine -> stage + replica relabel helpers.
//
// Part 1 reproduces vLLM-Omni's tests/metrics/test_stat_logger.py (behaviour reference §7): one
// gtest per upstream test, suite = the upstream test class, name = the upstream test function in
// CamelCase, same inputs and expected exposition lines. Python-only mechanics (class slots,
// property getters, multiprocess_mode) are mapped to their C++ analogue where one exists.
// Part 2 covers the logger: flat index order, fail-fast on unknown engines, every family of the
// real V1 scrape rendered with stage/replica in both formats, gating (§4.8), scoped unregister
// (§4.10), the per-(stage, replica) 1 Hz throttle with the #4802 fix (§4.9), values.
#include "pipeline/engine_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"
#include "pipeline/catalog.h"
#include "pipeline/fixture_text.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::pipeline {

using ::modelmetrics::testing::Ok;
namespace {

using ::modelmetrics::testing::Contains;
using ::modelmetrics::testing::kV1FixturePath;
using ::modelmetrics::testing::ReadFile;

std::vector<std::string_view> Views(const std::vector<std::string>& strings) {
  return {strings.begin(), strings.end()};
}

// ---- Part 1: tests/metrics/test_stat_logger.py ----

// The C++ analogue of a _Relabel* family: the upstream-shaped label names are rewritten when the
// family is created; labels are translated before the child is bound.
RelabeledNames Names(std::initializer_list<std::string_view> names) {
  return RewriteEngineLabelNames(std::span(names.begin(), names.size()));
}

std::unique_ptr<EngineStatsLogger> NewLogger(Registry& registry, EngineStatsOptions options) {
  std::unique_ptr<EngineStatsLogger> logger;
  EXPECT_OK(EngineStatsLogger::Create(registry, std::move(options), &logger));
  return logger;
}

template <typename T>
T BindPositional(Family<T>* family, const RelabeledNames& names,
                 std::initializer_list<std::string_view> values, const EngineLabelMap& map) {
  std::vector<std::string> translated;
  const Status status =
      TranslateEngineLabelValues(names, std::span(values.begin(), values.size()), map, &translated);
  EXPECT_OK(status);
  if (!status.ok()) return T();
  std::vector<std::string_view> views = Views(translated);
  return family->Labels(std::span<const std::string_view>(views));
}

template <typename T>
T BindKeywords(Family<T>* family, const RelabeledNames& names,
               std::initializer_list<std::pair<std::string_view, std::string_view>> kv,
               const EngineLabelMap& map) {
  std::vector<std::string> translated;
  const Status status =
      TranslateEngineLabelPairs(names, std::span(kv.begin(), kv.size()), map, &translated);
  EXPECT_OK(status);
  if (!status.ok()) return T();
  std::vector<std::string_view> views = Views(translated);
  return family->Labels(std::span<const std::string_view>(views));
}

FamilyOptions Options(std::string name, const RelabeledNames& names) {
  return FamilyOptions{.name = std::move(name), .help = "test", .labels = names.names};
}

using Strings = std::vector<std::string>;

TEST(TestRewriteLabelnames, EngineAtEnd) {
  EXPECT_EQ(Names({"model_name", "engine"}).names, (Strings{"model_name", "stage", "replica"}));
}

TEST(TestRewriteLabelnames, EngineInMiddle) {
  const RelabeledNames names = Names({"model_name", "engine", "reason"});
  EXPECT_EQ(names.names, (Strings{"model_name", "stage", "replica", "reason"}));
  EXPECT_EQ(names.engine_position, 1u);
}

TEST(TestRewriteLabelnames, NoEngineLabel) {
  const RelabeledNames names = Names({"model_name"});
  EXPECT_EQ(names.names, (Strings{"model_name"}));
  EXPECT_FALSE(names.engine_position.has_value());
}

// Python keeps a tuple a tuple; in C++ any contiguous sequence is accepted and the order kept.
TEST(TestRewriteLabelnames, TupleInputReturnsTuple) {
  const std::array<std::string_view, 2> tuple = {"model_name", "engine"};
  EXPECT_EQ(RewriteEngineLabelNames(tuple).names, (Strings{"model_name", "stage", "replica"}));
}

// None -> None: an empty label list stays empty.
TEST(TestRewriteLabelnames, NonePassthrough) {
  const RelabeledNames names = RewriteEngineLabelNames({});
  EXPECT_TRUE(names.names.empty());
  EXPECT_FALSE(names.engine_position.has_value());
}

TEST(TestEngineToStageReplica, IntEngineValue) {
  EngineLabelMap map;
  map.Set(7, "talker", "1");
  ASSERT_NE(map.Find(size_t{7}), nullptr);
  EXPECT_EQ(*map.Find(size_t{7}), (std::pair<std::string, std::string>{"talker", "1"}));
}

TEST(TestEngineToStageReplica, StrEngineValue) {
  EngineLabelMap map;
  map.Set(2, "thinker", "0");
  ASSERT_NE(map.Find(std::string_view("2")), nullptr);
  EXPECT_EQ(*map.Find(std::string_view("2")),
            (std::pair<std::string, std::string>{"thinker", "0"}));
}

// KeyError in Python: here nullptr, and the translations fail with an error.
TEST(TestEngineToStageReplica, MissingEngineIdxRaises) {
  EngineLabelMap map;
  EXPECT_EQ(map.Find(size_t{999}), nullptr);
  EXPECT_EQ(map.Find(std::string_view("999")), nullptr);
  EXPECT_EQ(map.Find(std::string_view("x")), nullptr);
  std::string error;
  const RelabeledNames names = Names({"model_name", "engine"});
  const std::array<std::pair<std::string_view, std::string_view>, 2> kv = {
      {{"engine", "999"}, {"model_name", "m"}}};
  std::vector<std::string> out;
  EXPECT_FALSE(Ok(TranslateEngineLabelPairs(names, kv, map, &out), &error));
  EXPECT_NE(error.find("999"), std::string::npos) << error;
}

TEST(TestRelabelGauge, LabelnamesRewrittenAtCreation) {
  Registry registry;
  const RelabeledNames names = Names({"model_name", "engine"});
  Family<Gauge>* g = registry.AddGauge(Options("omni_test_gauge", names));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->options().labels, (Strings{"model_name", "stage", "replica"}));
}

TEST(TestRelabelGauge, LabelsKwargTranslated) {
  Registry registry;
  EngineLabelMap map;
  map.Set(5, "diffusion", "0");
  const RelabeledNames names = Names({"model_name", "engine"});
  Family<Gauge>* g = registry.AddGauge(Options("omni_test_gauge_kwarg", names));
  BindKeywords(g, names, {{"engine", "5"}, {"model_name", "qwen-omni"}}, map).Set(42.0);
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(Contains(
      out,
      "omni_test_gauge_kwarg{model_name=\"qwen-omni\",replica=\"0\",stage=\"diffusion\"} 42.0\n"))
      << out;
}

TEST(TestRelabelGauge, LabelsPositionalPassthrough) {
  Registry registry;
  const RelabeledNames names = Names({"model_name", "engine"});
  Family<Gauge>* g = registry.AddGauge(Options("omni_test_gauge_pos", names));
  BindPositional(g, names, {"qwen-omni", "thinker", "0"}, EngineLabelMap()).Set(7.0);
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(Contains(
      out, "omni_test_gauge_pos{model_name=\"qwen-omni\",replica=\"0\",stage=\"thinker\"} 7.0\n"))
      << out;
}

// multiprocess_mode has no C++ counterpart (one process, one registry); the analogue kept here is
// that the other family options (HELP, type) survive the rewrite untouched.
TEST(TestRelabelGauge, MultiprocessModeKwargPassthrough) {
  Registry registry;
  const RelabeledNames names = Names({"model_name", "engine"});
  Family<Gauge>* g = registry.AddGauge(Options("omni_test_gauge_mp", names));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->options().help, "test");
  EXPECT_EQ(g->type(), MetricType::kGauge);
}

TEST(TestRelabelCounter, LabelnamesRewritten) {
  Registry registry;
  const RelabeledNames names = Names({"model_name", "engine", "finished_reason"});
  Family<Counter>* c = registry.AddCounter(Options("omni_test_counter", names));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->options().labels, (Strings{"model_name", "stage", "replica", "finished_reason"}));
}

TEST(TestRelabelCounter, LabelsKwargTranslated) {
  Registry registry;
  EngineLabelMap map;
  map.Set(2, "thinker", "0");
  const RelabeledNames names = Names({"model_name", "engine", "finished_reason"});
  Family<Counter>* c = registry.AddCounter(Options("omni_test_counter_kwarg", names));
  BindKeywords(c, names, {{"engine", "2"}, {"model_name", "m"}, {"finished_reason", "stop"}}, map)
      .Add(uint64_t{3});
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(Contains(out,
                       "omni_test_counter_kwarg_total{finished_reason=\"stop\",model_name=\"m\","
                       "replica=\"0\",stage=\"thinker\"} 3.0\n"))
      << out;
}

TEST(TestRelabelHistogram, LabelnamesRewritten) {
  Registry registry;
  const RelabeledNames names = Names({"model_name", "engine"});
  FamilyOptions options = Options("omni_test_histo", names);
  options.buckets = {0.1, 1.0};
  Family<Histogram>* h = registry.AddHistogram(std::move(options));
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->options().labels, (Strings{"model_name", "stage", "replica"}));
}

TEST(TestRelabelHistogram, LabelsKwargTranslatedAndObserve) {
  Registry registry;
  EngineLabelMap map;
  map.Set(0, "talker", "0");
  const RelabeledNames names = Names({"model_name", "engine"});
  FamilyOptions options = Options("omni_test_histo_obs", names);
  options.buckets = {0.1, 1.0};
  Family<Histogram>* h = registry.AddHistogram(std::move(options));
  BindKeywords(h, names, {{"engine", "0"}, {"model_name", "m"}}, map).Observe(0.5);
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(Contains(
      out, "omni_test_histo_obs_count{model_name=\"m\",replica=\"0\",stage=\"talker\"} 1.0\n"))
      << out;
}

TEST(TestRelabelHistogram, NoEngineLabelUnaffected) {
  Registry registry;
  const RelabeledNames names = Names({"model_name"});
  FamilyOptions options = Options("omni_test_no_engine", names);
  options.buckets = {0.1, 1.0};
  Family<Histogram>* h = registry.AddHistogram(std::move(options));
  EXPECT_EQ(h->options().labels, (Strings{"model_name"}));
  BindKeywords(h, names, {{"model_name", "m"}}, EngineLabelMap()).Observe(1.0);
  EXPECT_TRUE(Contains(registry.Render(Format::kText),
                       "omni_test_no_engine_count{model_name=\"m\"} 1.0\n"));
}

TEST(TestPositionalEngine, PositionalEngineAtMiddleIndex) {
  Registry registry;
  EngineLabelMap map;
  map.Set(5, "talker", "0");
  const RelabeledNames names = Names({"model_name", "engine", "source"});
  Family<Counter>* c = registry.AddCounter(Options("omni_test_pos_mid", names));
  BindPositional(c, names, {"m", "5", "decoder"}, map).Add(uint64_t{2});
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(Contains(out,
                       "omni_test_pos_mid_total{model_name=\"m\",replica=\"0\",source=\"decoder\","
                       "stage=\"talker\"} 2.0\n"))
      << out;
}

// Python passes the int 3; C++ positional values are strings, and the int form is
// EngineLabelMap::Find(size_t), checked too.
TEST(TestPositionalEngine, PositionalEngineWithIntValue) {
  Registry registry;
  EngineLabelMap map;
  map.Set(3, "thinker", "1");
  ASSERT_NE(map.Find(size_t{3}), nullptr);
  const RelabeledNames names = Names({"model_name", "engine", "reason"});
  Family<Counter>* c = registry.AddCounter(Options("omni_test_pos_int", names));
  BindPositional(c, names, {"m", std::to_string(3), "stop"}, map).Inc();
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(Contains(out,
                       "omni_test_pos_int_total{model_name=\"m\",reason=\"stop\",replica=\"1\","
                       "stage=\"thinker\"} 1.0\n"))
      << out;
}

TEST(TestStrEngineKwarg, EngineKwargStrForm) {
  Registry registry;
  EngineLabelMap map;
  map.Set(0, "thinker", "0");
  const RelabeledNames names = Names({"cache_size", "engine"});
  Family<Gauge>* g = registry.AddGauge(Options("omni_test_info", names));
  BindKeywords(g, names, {{"cache_size", "big"}, {"engine", "0"}}, map).Set(1);
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(
      Contains(out, "omni_test_info{cache_size=\"big\",replica=\"0\",stage=\"thinker\"} 1.0\n"))
      << out;
}

TEST(TestChildNoRecursion, ChildSetDoesNotRelookup) {
  Registry registry;
  EngineLabelMap map;
  map.Set(4, "diffusion", "0");
  const RelabeledNames names = Names({"model_name", "engine"});
  Family<Gauge>* g = registry.AddGauge(Options("omni_test_child", names));
  Gauge child = BindKeywords(g, names, {{"engine", "4"}, {"model_name", "m"}}, map);
  map.Clear();  // a second translation would fail now
  child.Set(99.0);
  map.Set(4, "diffusion", "0");
  const std::string out = registry.Render(Format::kText);
  EXPECT_TRUE(
      Contains(out, "omni_test_child{model_name=\"m\",replica=\"0\",stage=\"diffusion\"} 99.0\n"))
      << out;
}

// The class slots route every upstream family through the relabel classes. The C++ analogue:
// every family EngineStatsLogger registers carries stage + replica and no engine label.
TEST(TestOmniPrometheusStatLogger, ClassSlotsPointToWrappers) {
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {1}});
  ASSERT_NE(logger, nullptr);
  size_t families = 0;
  for (const MetricFamily& f : ParseFamilies(registry.Render(Format::kOpenMetrics), {})) {
    ++families;
    for (const MetricSample& s : f.samples) {
      std::set<std::string> labels;
      for (const auto& [name, value] : s.labels) labels.insert(name);
      EXPECT_TRUE(labels.count("stage") && labels.count("replica")) << s.name;
      EXPECT_FALSE(labels.count("engine")) << s.name;
    }
  }
  EXPECT_EQ(families, 36u);  // vLLM main's plain set-up
}

TEST(TestOmniPrometheusStatLogger, PerEngineLabelvaluesSetterRewritesTo3tuple) {
  EngineLabelMap map;
  map.Set(0, "thinker", "0");
  map.Set(1, "talker", "0");
  map.Set(2, "talker", "1");
  const std::map<size_t, Strings> upstream = {
      {0, {"my-model", "0"}}, {1, {"my-model", "1"}}, {2, {"my-model", "2"}}};
  const std::map<size_t, Strings> expected = {{0, {"my-model", "thinker", "0"}},
                                              {1, {"my-model", "talker", "0"}},
                                              {2, {"my-model", "talker", "1"}}};
  EXPECT_EQ(RewritePerEngineLabelValues(upstream, map), expected);
}

// The map the logger labels with is the one it was built from (stage_replica_map property).
TEST(TestOmniPrometheusStatLogger, StageReplicaMapPropertyExposed) {
  Registry registry;
  const EngineMap engines{1, 2, 1};
  auto logger = NewLogger(registry, {.model_name = "m", .engines = engines});
  ASSERT_NE(logger, nullptr);
  EXPECT_EQ(logger->engines().entries(), engines.entries());
}

TEST(TestOmniPrometheusStatLogger, InitPopulatesEngineIndexMap) {
  EngineLabelMap map;
  map.Set(99, "stale", "stale");
  map.Clear();
  map.Set(0, "thinker", "0");
  map.Set(1, "talker", "0");
  EXPECT_EQ(map.Find(size_t{99}), nullptr);
  ASSERT_NE(map.Find(size_t{1}), nullptr);
  EXPECT_EQ(map.Find(size_t{1})->first, "talker");
  // Built from an EngineMap: decimal ids, flat order.
  const EngineLabelMap from_layout{EngineMap{1, 2, 1}};
  ASSERT_NE(from_layout.Find(size_t{2}), nullptr);
  EXPECT_EQ(*from_layout.Find(size_t{2}), (std::pair<std::string, std::string>{"1", "1"}));
  EXPECT_EQ(from_layout.Find(size_t{4}), nullptr);
}

// The sub-collectors (perf metrics, KV connector) are relabelled too: their families carry data
// under stage + replica. The Python tests check class slots; here the families themselves.
std::string RecordSubCollectors() {
  Registry registry;
  auto logger = NewLogger(
      registry, {.model_name = "m", .engines = {1, 2}, .kv_connector = KvConnector::kNixl});
  EXPECT_NE(logger, nullptr);
  if (logger == nullptr) return "";
  SchedulerStats s;
  s.kv_connector_stats = KvConnectorStats{.transfer_duration_s = {0.02},
                                          .post_duration_s = {0.002},
                                          .bytes_transferred = {4096},
                                          .num_descriptors = {12},
                                          .num_failed_transfers = 1};
  s.perf_stats = PerfStats{.num_flops_per_gpu = 1e12};
  EXPECT_TRUE(logger->Record(2, &s, nullptr).ok());
  return registry.Render(Format::kText);
}

TEST(TestHelperClassWraps, PerfMetricsWrapRoutesThroughRelabelCounter) {
  const std::string out = RecordSubCollectors();
  EXPECT_TRUE(Contains(out,
                       "vllm:estimated_flops_per_gpu_total{model_name=\"m\",replica=\"1\","
                       "stage=\"1\"} 1e+012\n"))  // prometheus_client's spelling
      << out;
}

TEST(TestHelperClassWraps, KvConnectorWrapRoutesThroughAllThreeRelabelClasses) {
  const std::string out = RecordSubCollectors();
  EXPECT_TRUE(Contains(
      out, "vllm:nixl_bytes_transferred_count{model_name=\"m\",replica=\"1\",stage=\"1\"} 1.0\n"));
  EXPECT_TRUE(Contains(out,
                       "vllm:nixl_num_failed_transfers_total{model_name=\"m\",replica=\"1\","
                       "stage=\"1\"} 1.0\n"))
      << out;
}

// The logger's sub-collector families are all registered (and relabelled) with it.
TEST(TestHelperClassWraps, OmniLoggerSlotsPointToHelperSubclasses) {
  const std::string out = RecordSubCollectors();
  for (std::string_view name :
       {"vllm:nixl_xfer_time_seconds", "vllm:nixl_post_time_seconds", "vllm:nixl_num_descriptors",
        "vllm:nixl_num_failed_notifications_total", "vllm:nixl_num_kv_expired_reqs_total",
        "vllm:estimated_read_bytes_per_gpu_total", "vllm:estimated_write_bytes_per_gpu_total"}) {
    EXPECT_TRUE(Contains(out, "# TYPE " + std::string(name))) << name;
  }
  EXPECT_FALSE(Contains(out, "engine="));
}

TEST(TestDoubleRewriteGuard, PreRewritten3tuplePassesThrough) {
  Registry registry;
  EngineLabelMap map;
  map.Set(0, "0", "0");
  map.Set(1, "1", "0");
  const RelabeledNames names = Names({"model_name", "engine"});
  Family<Gauge>* g = registry.AddGauge(Options("dr_pre_rewritten", names));
  BindPositional(g, names, {"m", "1", "0"}, map).Set(42);
  EXPECT_TRUE(Contains(registry.Render(Format::kText),
                       "dr_pre_rewritten{model_name=\"m\",replica=\"0\",stage=\"1\"} 42.0\n"));
}

TEST(TestDoubleRewriteGuard, Legacy2tupleWithExtraLabelStillSplices) {
  Registry registry;
  EngineLabelMap map;
  map.Set(1, "1", "0");
  const RelabeledNames names = Names({"model_name", "engine", "reason"});
  Family<Counter>* c = registry.AddCounter(Options("dr_legacy_with_extra", names));
  BindPositional(c, names, {"m", "1", "stop"}, map).Add(uint64_t{3});
  EXPECT_TRUE(Contains(registry.Render(Format::kText),
                       "dr_legacy_with_extra_total{model_name=\"m\",reason=\"stop\",replica=\"0\","
                       "stage=\"1\"} 3.0\n"));
  // A count matching neither shape is an error, not a guess.
  std::string error;
  const std::array<std::string_view, 2> two = {"m", "1"};
  std::vector<std::string> out;
  EXPECT_FALSE(Ok(TranslateEngineLabelValues(names, two, map, &out), &error));
  EXPECT_FALSE(error.empty());
}

// ---- Part 2: EngineStatsLogger ----

// The value of `name` whose labels include every pair of `want`; NaN when absent.
double Value(const std::vector<MetricFamily>& families, std::string_view name,
             const std::vector<LabelPair>& want) {
  for (const MetricFamily& f : families) {
    for (const MetricSample& s : f.samples) {
      if (s.name != name) continue;
      const bool all = std::all_of(want.begin(), want.end(), [&](const LabelPair& p) {
        return std::find(s.labels.begin(), s.labels.end(), p) != s.labels.end();
      });
      if (all) return s.value;
    }
  }
  return std::nan("");
}

std::vector<LabelPair> At(std::string stage, std::string replica) {
  return {{"stage", std::move(stage)}, {"replica", std::move(replica)}};
}

std::vector<MetricFamily> ParsedFamilies(const Registry& registry, Format format = Format::kText) {
  ParseOptions options;
  options.format = format;
  options.strict = true;
  std::vector<ParseError> errors;
  std::vector<MetricFamily> families = ParseFamilies(registry.Render(format), options, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front().ToString();
  return families;
}

TEST(EngineStatsLogger, FlatIndexOrderFollowsStageLayout) {
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {1, 2, 1}});
  ASSERT_NE(logger, nullptr);
  for (size_t e = 0; e < 4; ++e) {
    SchedulerStats s{.num_running_reqs = e + 1};
    ASSERT_TRUE(logger->Record(e, &s, nullptr).ok());
  }
  const auto families = ParsedFamilies(registry);
  EXPECT_EQ(Value(families, "vllm:num_requests_running", At("0", "0")), 1);
  EXPECT_EQ(Value(families, "vllm:num_requests_running", At("1", "0")), 2);
  EXPECT_EQ(Value(families, "vllm:num_requests_running", At("1", "1")), 3);
  EXPECT_EQ(Value(families, "vllm:num_requests_running", At("2", "0")), 4);
  // The reverse map addresses the same engine.
  IterationStats it{.num_generation_tokens = 5};
  ASSERT_TRUE(logger->Record(StageReplica{1, 1}, nullptr, &it).ok());
  EXPECT_EQ(Value(ParsedFamilies(registry), "vllm:generation_tokens_total", At("1", "1")), 5);
}

TEST(EngineStatsLogger, UnknownEngineFailsFastAndRecordsNothing) {
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {1, 2, 1}});
  ASSERT_NE(logger, nullptr);
  const std::string before = registry.Render(Format::kText);
  SchedulerStats s{.num_running_reqs = 9, .prefix_cache_stats = {.queries = 3}};
  IterationStats it{.num_generation_tokens = 5};
  std::string error;
  EXPECT_FALSE(Ok(logger->Record(4, &s, &it, nullptr), &error));
  EXPECT_NE(error.find("unknown engine index 4"), std::string::npos) << error;
  EXPECT_FALSE(Ok(logger->Record(StageReplica{1, 2}, &s, &it, nullptr), &error));
  EXPECT_FALSE(logger->Record(StageReplica{3, 0}, &s, &it).ok());
  EXPECT_FALSE(logger->SetSleepState(1, 1, 4));
  EXPECT_EQ(registry.Render(Format::kText), before);

  // Also with stats off: the layout is still checked.
  Registry off(RegistryOptions{.enabled = false});
  auto inert = NewLogger(off, {.model_name = "m", .engines = {1}});
  ASSERT_NE(inert, nullptr);
  EXPECT_FALSE(inert->Record(1, &s, &it).ok());
  EXPECT_TRUE(inert->Record(0, &s, &it).ok());
}

// Fills every source so each family has a non-trivial value.
void RecordEverything(EngineStatsLogger& logger, size_t engine) {
  SchedulerStats s{.num_running_reqs = 3,
                   .num_waiting_reqs = 2,
                   .num_skipped_waiting_reqs = 1,
                   .kv_cache_usage = 0.25,
                   .prefix_cache_stats = {.queries = 100, .hits = 60},
                   .connector_prefix_cache_stats = PrefixCacheStats{.queries = 40, .hits = 30},
                   .kv_connector_stats = KvConnectorStats{.transfer_duration_s = {0.02, 0.3},
                                                          .post_duration_s = {0.002, 0.01},
                                                          .bytes_transferred = {4096, 1 << 20},
                                                          .num_descriptors = {12, 44},
                                                          .num_failed_transfers = 1,
                                                          .num_failed_notifications = 2,
                                                          .num_kv_expired_reqs = 3},
                   .perf_stats = PerfStats{1e9, 2e6, 3e6}};
  IterationStats it;
  it.num_prompt_tokens = 100;
  it.num_generation_tokens = 20;
  it.num_preempted_reqs = 1;
  it.prompt_token_stats = {
      .computed = 10, .local_cache_hit = 60, .external_kv_transfer = 30, .cached_tokens = 90};
  it.max_num_generation_tokens_iter = {64};
  it.n_params_iter = {1};
  it.time_to_first_tokens_iter = {0.03};
  it.inter_token_latencies_iter = {0.02, 0.04};
  it.finished_requests.push_back({.finish_reason = FinishReason::kLength,
                                  .e2e_latency = 1.2,
                                  .num_prompt_tokens = 100,
                                  .num_generation_tokens = 64,
                                  .max_tokens_param = 64,
                                  .queued_time = 0.1,
                                  .prefill_time = 0.2,
                                  .inference_time = 1.1,
                                  .decode_time = 0.9,
                                  .mean_time_per_output_token = 0.014,
                                  .num_cached_tokens = 90,
                                  .num_preemptions = 2});
  MultiModalCacheStats mm{.queries = 2, .hits = 1};
  std::string error;
  ASSERT_OK(logger.Record(engine, &s, &it, &mm));
}

std::string FamilyKey(const MetricFamily& f) {
  if (f.type == MetricType::kCounter && f.name.ends_with("_total")) {
    return f.name.substr(0, f.name.size() - 6);
  }
  return f.name;
}

class EngineStatsRender : public ::testing::TestWithParam<Format> {};

// Every `vllm:*` family of the real V1 scrape (a NIXL set-up), rendered from recorded stats for
// layout {1,2,1}: same type, HELP and buckets; every series labelled stage + replica (no engine),
// and the label names are the fixture's with engine replaced; strict parse in both formats. Two
// differences are vLLM's since the capture: prompt_tokens_recomputed is gone and
// num_requests_waiting_by_reason and request_num_preemptions are new; cache_config_info carries
// the keys it is given.
TEST_P(EngineStatsRender, EveryFixtureFamilyWithStageAndReplica) {
  Registry registry;
  auto logger = NewLogger(
      registry,
      {.model_name = "TinyLlama", .engines = {1, 2, 1}, .kv_connector = KvConnector::kNixl});
  ASSERT_NE(logger, nullptr);
  for (size_t e = 0; e < 4; ++e) RecordEverything(*logger, e);
  const std::array<std::pair<std::string_view, std::string_view>, 3> info = {
      {{"block_size", "16"}, {"cache_dtype", "auto"}, {"num_gpu_blocks", "112009"}}};
  std::string error;
  ASSERT_OK(logger->LogEngineInitialized(info));

  ParseOptions text;
  text.format = Format::kText;
  std::vector<MetricFamily> fixture;
  for (MetricFamily& f : ParseFamilies(ReadFile(kV1FixturePath), text)) {
    if (f.name.starts_with("vllm:") && !f.name.ends_with("_created")) fixture.push_back(f);
  }
  ASSERT_EQ(fixture.size() + 1, VllmEngineFamilies().size());

  const std::vector<MetricFamily> ours = ParsedFamilies(registry, GetParam());
  std::map<std::string, const MetricFamily*> by_key;
  for (const MetricFamily& f : ours) {
    EXPECT_TRUE(f.name.starts_with("vllm:")) << f.name;
    by_key[FamilyKey(f)] = &f;
  }
  EXPECT_EQ(by_key.size(), fixture.size() + 1);

  // Label names (without le) and le values of a family's samples.
  auto shape = [](const MetricFamily& f, bool relabel) {
    std::set<std::string> names;
    std::set<std::string> les;
    for (const MetricSample& s : f.samples) {
      for (const auto& [name, value] : s.labels) {
        if (name == "le") {
          les.insert(value == "+Inf" ? value : std::to_string(std::stod(value)));
        } else if (relabel && name == "engine") {
          names.insert("stage");
          names.insert("replica");
        } else {
          names.insert(name);
        }
      }
    }
    return std::pair(names, les);
  };

  EXPECT_EQ(by_key.count("vllm:prompt_tokens_recomputed"), 0u);
  EXPECT_EQ(by_key.count("vllm:num_requests_waiting_by_reason"), 1u);
  ASSERT_EQ(by_key.count("vllm:request_num_preemptions"), 1u);
  EXPECT_EQ(shape(*by_key["vllm:request_num_preemptions"], false).second,
            (std::set<std::string>{"1.000000", "2.000000", "3.000000", "4.000000", "5.000000",
                                   "10.000000", "20.000000", "+Inf"}));
  for (const MetricFamily& want : fixture) {
    SCOPED_TRACE(want.name);
    if (FamilyKey(want) == "vllm:prompt_tokens_recomputed") continue;  // removed upstream
    const auto it = by_key.find(FamilyKey(want));
    ASSERT_NE(it, by_key.end());
    const MetricFamily& got = *it->second;
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.help, want.help);
    const auto [want_names, want_les] = shape(want, true);
    const auto [got_names, got_les] = shape(got, false);
    if (want.name != "vllm:cache_config_info") {
      EXPECT_EQ(got_names, want_names);
    }
    EXPECT_EQ(got_les, want_les);
    // Every series: stage + replica from the layout, no engine.
    std::set<std::pair<std::string, std::string>> engines;
    for (const MetricSample& s : got.samples) {
      std::string stage, replica;
      for (const auto& [name, value] : s.labels) {
        EXPECT_NE(name, "engine");
        if (name == "stage") stage = value;
        if (name == "replica") replica = value;
      }
      engines.insert({stage, replica});
    }
    const std::set<std::pair<std::string, std::string>> layout = {
        {"0", "0"}, {"1", "0"}, {"1", "1"}, {"2", "0"}};
    EXPECT_EQ(engines, layout);
    // The fixture's extra-label values (finished_reason, sleep_state, source) all bound.
    if (want.type != MetricType::kHistogram) {
      size_t want_series = want.samples.size();
      size_t got_series = 0;
      for (const MetricSample& s : got.samples) got_series += !s.name.ends_with("_created");
      EXPECT_EQ(got_series, want_series * 4);
    }
  }

  // Values of engine (1, 1).
  const auto at = At("1", "1");
  auto with = [&](std::vector<LabelPair> extra) {
    extra.insert(extra.end(), at.begin(), at.end());
    return extra;
  };

  EXPECT_EQ(Value(ours, "vllm:kv_cache_usage_perc", at), 0.25);
  EXPECT_EQ(Value(ours, "vllm:prefix_cache_hits_total", at), 60);
  EXPECT_EQ(Value(ours, "vllm:external_prefix_cache_queries_total", at), 40);
  EXPECT_EQ(Value(ours, "vllm:mm_cache_hits_total", at), 1);
  EXPECT_EQ(
      Value(ours, "vllm:prompt_tokens_by_source_total", with({{"source", "local_cache_hit"}})), 60);
  EXPECT_EQ(Value(ours, "vllm:request_success_total", with({{"finished_reason", "length"}})), 1);
  EXPECT_EQ(Value(ours, "vllm:request_success_total", with({{"finished_reason", "stop"}})), 0);
  EXPECT_EQ(Value(ours, "vllm:engine_sleep_state", with({{"sleep_state", "awake"}})), 1);
  EXPECT_EQ(Value(ours, "vllm:iteration_tokens_total_sum", at), 30);  // computed + generated
  EXPECT_EQ(Value(ours, "vllm:num_requests_waiting", at), 3);         // waiting + deferred
  EXPECT_EQ(Value(ours, "vllm:num_requests_waiting_by_reason", with({{"reason", "capacity"}})), 2);
  EXPECT_EQ(Value(ours, "vllm:num_requests_waiting_by_reason", with({{"reason", "deferred"}})), 1);
  EXPECT_EQ(Value(ours, "vllm:inter_token_latency_seconds_count", at), 2);
  EXPECT_EQ(Value(ours, "vllm:request_prefill_kv_computed_tokens_sum", at), 10);
  EXPECT_EQ(Value(ours, "vllm:request_params_max_tokens_bucket", with({{"le", "100.0"}})), 1);
  EXPECT_EQ(Value(ours, "vllm:nixl_bytes_transferred_sum", at), 4096 + (1 << 20));
  EXPECT_EQ(Value(ours, "vllm:cache_config_info",
                  with({{"num_gpu_blocks", "112009"}, {"block_size", "16"}})),
            1);
}

INSTANTIATE_TEST_SUITE_P(Formats, EngineStatsRender,
                         ::testing::Values(Format::kText, Format::kOpenMetrics),
                         [](const auto& info) {
                           return info.param == Format::kText ? "Text" : "OpenMetrics";
                         });

// §4.8: with log-stats off the per-engine families are not registered at all; the omni
// families (eager children) still render. The reference's "1358 lines on, 124 off" shape.
TEST(EngineStatsLogger, GatedOffRegistersNoVllmFamily) {
  auto build = [](bool enabled) {
    auto registry = std::make_unique<Registry>(RegistryOptions{.enabled = enabled});
    registry
        ->AddGauge(
            {.name = "vllm_omni:num_requests_running", .help = "running", .labels = {"model_name"}})
        ->Bind({"m"});
    auto logger = NewLogger(*registry, {.model_name = "m", .engines = {1, 2, 1}});
    EXPECT_NE(logger, nullptr);
    EXPECT_EQ(logger->enabled(), enabled);
    RecordEverything(*logger, 1);
    EXPECT_TRUE(logger->LogEngineInitialized({}).ok());
    EXPECT_TRUE(logger->SetSleepState(1, 2));
    return std::pair(std::move(registry), std::move(logger));
  };
  const auto [on, on_logger] = build(true);
  const auto [off, off_logger] = build(false);
  const std::string on_text = on->Render(Format::kText);
  const std::string off_text = off->Render(Format::kText);
  EXPECT_EQ(off_text.find("vllm:"), std::string::npos) << off_text;
  EXPECT_NE(off_text.find("vllm_omni:num_requests_running{model_name=\"m\"} 0"), std::string::npos);
  EXPECT_EQ(off->RemovePrefix("vllm:"), 0u);
  const auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(lines(off_text), 3);  // HELP, TYPE, one sample
  EXPECT_GT(lines(on_text), 40 * lines(off_text));
  for (const Format format : {Format::kText, Format::kOpenMetrics}) {
    for (const MetricFamily& f : ParsedFamilies(*off, format))
      EXPECT_FALSE(f.name.starts_with("vllm:"));
  }
}

// §4.10: creating a logger drops the previous `vllm:*` families (upstream's unregister), never
// a `vllm_omni:*` one; a re-created logger takes the names over; stale handles stay safe.
TEST(EngineStatsLogger, ScopedUnregisterKeepsOmniFamilies) {
  Registry registry;
  Family<Counter>* omni = registry.AddCounter(
      {.name = "vllm_omni:requests_success", .help = "x", .labels = {"model_name"}});
  omni->Bind({"m"}).Inc();
  auto first = NewLogger(registry, {.model_name = "m", .engines = {1}});
  ASSERT_NE(first, nullptr);
  std::string error;
  auto second = NewLogger(registry, {.model_name = "m", .engines = {1, 1}});
  ASSERT_NE(second, nullptr) << error;
  IterationStats it{.num_generation_tokens = 7};
  ASSERT_TRUE(first->Record(0, nullptr, &it).ok());  // stale: safe, invisible
  ASSERT_TRUE(second->Record(1, nullptr, &it).ok());
  const auto families = ParsedFamilies(registry);
  EXPECT_EQ(Value(families, "vllm:generation_tokens_total", At("0", "0")), 0);
  EXPECT_EQ(Value(families, "vllm:generation_tokens_total", At("1", "0")), 7);
  EXPECT_EQ(Value(families, "vllm_omni:requests_success_total", {{"model_name", "m"}}), 1);
  // vLLM main's 35 families of a plain set-up (no connector, no cache_config_info yet).
  constexpr size_t kPlainFamilies = 36;
  EXPECT_EQ(families.size(), kPlainFamilies + 1);

  EXPECT_EQ(registry.RemovePrefix(kEnginePrefix), kPlainFamilies);
  const auto after = ParsedFamilies(registry);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].name, "vllm_omni:requests_success_total");
}

// No throttle in the logger (the scheduler's make_stats() gates stats, §4.9): every Record sets
// the gauges, waiting counts the deferred requests too, counters sum every call.
TEST(EngineStatsLogger, EveryRecordIsRecorded) {
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {1, 2}});
  ASSERT_NE(logger, nullptr);
  for (uint64_t running : {1, 2, 3}) {
    SchedulerStats s{.num_running_reqs = running,
                     .num_waiting_reqs = 4,
                     .num_skipped_waiting_reqs = running,
                     .prefix_cache_stats = {.queries = 10, .hits = 4}};
    ASSERT_TRUE(logger->Record(1, &s, nullptr).ok());  // scheduler stats only
  }
  const auto families = ParsedFamilies(registry);
  const auto at = At("1", "0");
  EXPECT_EQ(Value(families, "vllm:num_requests_running", at), 3);
  EXPECT_EQ(Value(families, "vllm:num_requests_waiting", at), 7);
  std::vector<LabelPair> deferred = at;
  deferred.push_back({"reason", "deferred"});
  EXPECT_EQ(Value(families, "vllm:num_requests_waiting_by_reason", deferred), 3);
  EXPECT_EQ(Value(families, "vllm:prefix_cache_queries_total", at), 30);
  EXPECT_EQ(Value(families, "vllm:num_requests_running", At("0", "0")), 0);
  // No connector configured: no connector family, and connector stats are ignored.
  SchedulerStats nixl{.kv_connector_stats = KvConnectorStats{.num_failed_transfers = 1}};
  ASSERT_TRUE(logger->Record(0, &nixl, nullptr).ok());
  EXPECT_EQ(registry.Render(Format::kText).find("nixl"), std::string::npos);
  // A call with neither record is a no-op.
  ASSERT_TRUE(logger->Record(0, nullptr, nullptr).ok());
}

// vLLM's build_1_2_5_buckets(max_model_len) for the token-count histograms.
TEST(EngineStatsLogger, TokenCountBucketsFollowMaxModelLen) {
  EXPECT_EQ(BuildOneTwoFiveBuckets(4096),
            (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}));
  EXPECT_EQ(BuildOneTwoFiveBuckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(BuildOneTwoFiveBuckets(0), std::vector<double>{});
  EXPECT_EQ(BuildOneTwoFiveBuckets(UINT64_MAX).size(), 57u);  // 1 .. 5e18, no overflow
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {1}, .max_model_len = 131072});
  ASSERT_NE(logger, nullptr);
  const std::string text = registry.Render(Format::kText);
  for (std::string_view family : kEngineTokenCountFamilies) {
    EXPECT_NE(text.find(std::string(family) + "_bucket{le=\"100000.0\""), std::string::npos)
        << family;
  }
  // Fixed buckets stay fixed.
  EXPECT_EQ(text.find("vllm:iteration_tokens_total_bucket{le=\"100000.0\""), std::string::npos);
}

TEST(SchedulerStatsThrottle, AdmitsOncePerInterval) {
  SchedulerStatsThrottle throttle;
  EXPECT_FALSE(throttle.Admit(0.0));
  EXPECT_FALSE(throttle.Admit(0.999));
  EXPECT_TRUE(throttle.Admit(1.0));
  EXPECT_FALSE(throttle.Admit(1.5));
  EXPECT_TRUE(throttle.Admit(2.25));
  EXPECT_FALSE(throttle.Admit(3.0));
  EXPECT_TRUE(throttle.Admit(100.0));
  SchedulerStatsThrottle fast(0.1);
  EXPECT_TRUE(fast.Admit(0.1));
  EXPECT_TRUE(fast.Admit(0.2));
}

TEST(EngineStatsLogger, SleepStateAndCacheConfigInfo) {
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {2}});
  ASSERT_NE(logger, nullptr);
  EXPECT_TRUE(logger->SetSleepState(1, 1, 1));  // engine (0, 1) offloads its weights
  auto families = ParsedFamilies(registry);
  auto sleep = [&](std::string replica, std::string state) {
    std::vector<LabelPair> want = At("0", replica);
    want.push_back({"sleep_state", state});
    return Value(families, "vllm:engine_sleep_state", want);
  };
  EXPECT_EQ(sleep("0", "awake"), 1);
  EXPECT_EQ(sleep("1", "awake"), 0);
  EXPECT_EQ(sleep("1", "weights_offloaded"), 1);
  EXPECT_EQ(sleep("1", "discard_all"), 0);
  EXPECT_TRUE(logger->SetSleepState(1, 2));  // every engine
  families = ParsedFamilies(registry);
  EXPECT_EQ(sleep("0", "discard_all"), 1);
  EXPECT_EQ(sleep("1", "weights_offloaded"), 0);
  EXPECT_EQ(sleep("1", "discard_all"), 1);

  // cache_config_info: labelled with whatever keys the installed vLLM's CacheConfig has, in
  // order, then stage and replica; a second call replaces the family.
  const std::array<std::pair<std::string_view, std::string_view>, 2> info = {
      {{"kv_cache_size_tokens", "438960"}, {"user_specified_mamba_block_size", "None"}}};
  std::string error;
  ASSERT_OK(logger->LogEngineInitialized(info));
  families = ParsedFamilies(registry);
  std::vector<LabelPair> want = At("0", "1");
  want.push_back({"kv_cache_size_tokens", "438960"});
  EXPECT_EQ(Value(families, "vllm:cache_config_info", want), 1);
  const std::array<std::pair<std::string_view, std::string_view>, 1> next = {
      {{"block_size", "32"}}};
  ASSERT_OK(logger->LogEngineInitialized(next));
  const std::string text = registry.Render(Format::kText);
  EXPECT_EQ(text.find("kv_cache_size_tokens"), std::string::npos);
  EXPECT_NE(text.find("vllm:cache_config_info{block_size=\"32\",replica=\"0\""), std::string::npos)
      << text;
  const std::array<std::pair<std::string_view, std::string_view>, 1> stage = {{{"stage", "9"}}};
  EXPECT_FALSE(logger->LogEngineInitialized(stage).ok());
  const std::array<std::pair<std::string_view, std::string_view>, 1> bad = {{{"a-b", "1"}}};
  EXPECT_FALSE(Ok(logger->LogEngineInitialized(bad), &error));
  EXPECT_NE(error.find("a-b"), std::string::npos);
}

// Upstream's per-request guards: a -1 num_cached_tokens sentinel counts as 0 cached, cached >
// prompt observes 0 (not negative), an unset or zero max_tokens is not observed.
TEST(EngineStatsLogger, FinishedRequestEdgeCases) {
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {1}});
  ASSERT_NE(logger, nullptr);
  IterationStats it;
  it.finished_requests.push_back(
      {.finish_reason = FinishReason::kAbort, .num_prompt_tokens = 7, .num_cached_tokens = -1});
  it.finished_requests.push_back({.finish_reason = FinishReason::kRepetition,
                                  .num_prompt_tokens = 5,
                                  .max_tokens_param = 0,
                                  .num_cached_tokens = 9});
  ASSERT_TRUE(logger->Record(0, nullptr, &it).ok());
  const auto families = ParsedFamilies(registry);
  const auto at = At("0", "0");
  EXPECT_EQ(Value(families, "vllm:request_prefill_kv_computed_tokens_sum", at), 7);
  EXPECT_EQ(Value(families, "vllm:request_prefill_kv_computed_tokens_count", at), 2);
  EXPECT_EQ(Value(families, "vllm:request_params_max_tokens_count", at), 0);
  EXPECT_EQ(
      Value(families, "vllm:request_success_total", {{"finished_reason", "abort"}, {"stage", "0"}}),
      1);
  EXPECT_EQ(Value(families, "vllm:request_success_total",
                  {{"finished_reason", "repetition"}, {"stage", "0"}}),
            1);
  EXPECT_EQ(FinishReasonName(FinishReason::kError), "error");
}

// Hot path from several threads, one engine each plus a shared one: totals add up.
TEST(EngineStatsLogger, ConcurrentRecordsAddUp) {
  Registry registry;
  auto logger = NewLogger(registry, {.model_name = "m", .engines = {1, 2, 1}});
  ASSERT_NE(logger, nullptr);
  constexpr int kSteps = 2000;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      SchedulerStats s{.num_running_reqs = t, .prefix_cache_stats = {.queries = 2}};
      IterationStats it{.num_generation_tokens = 1};
      it.time_to_first_tokens_iter = {0.01};
      for (int i = 0; i < kSteps; ++i) {
        EXPECT_TRUE(logger->Record(t, &s, &it).ok());
        EXPECT_TRUE(logger->Record(size_t{0}, nullptr, &it).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const auto families = ParsedFamilies(registry);
  EXPECT_EQ(Value(families, "vllm:generation_tokens_total", At("0", "0")), 5 * kSteps);
  EXPECT_EQ(Value(families, "vllm:generation_tokens_total", At("2", "0")), kSteps);
  EXPECT_EQ(Value(families, "vllm:time_to_first_token_seconds_count", At("0", "0")), 5 * kSteps);
  EXPECT_EQ(Value(families, "vllm:prefix_cache_queries_total", At("1", "1")), 2 * kSteps);
  EXPECT_EQ(Value(families, "vllm:num_requests_running", At("1", "1")), 2);
}

}  // namespace
}  // namespace modelmetrics::pipeline
