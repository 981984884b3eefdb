// The merged scrape of a shared segment (segment_merge.cc) with real processes, live, dead and
// marked dead: every MultiprocessMode of a gauge, counters and histograms summed over every
// process, a process that never made a child not counting, a pid seen in two slots, the stamps
// gauges carry, and SharedSegment::Render compared line by line with what prometheus_client's
// multiprocess mode prints for the same values. The prometheus_client text below was made by
// prometheus_client 0.16's MultiProcessCollector and generate_latest from files holding the
// same values (pids 101, 202, 303 stand for this test's processes); its `mostrecent` rule is
// read from later releases' multiprocess.py (the value with the latest timestamp, no `pid`).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/segment_layout.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"

namespace modelmetrics {
namespace {

using segment_testing::Attach;
using segment_testing::Child;
using segment_testing::Find;
using segment_testing::LiveChild;
using segment_testing::StrictParse;
using segment_testing::Tamper;
using segment_testing::UniqueName;
using segment_testing::Wait;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr size_t kMergeBytes = size_t{4} << 20;

// The index of the `nth` series record of family `family` (by name), or UINT32_MAX.
uint32_t SeriesOf(Tamper& t, const std::string& family, int nth = 0) {
  const uint32_t n = t.header->series.load();
  for (uint32_t s = 0; s < n; ++s) {
    const segment::FamilyRecord& f = t.families[t.series[s].family];
    if (std::string_view(t.arena + f.name.offset, f.name.size) == family && nth-- == 0) return s;
  }
  return UINT32_MAX;
}

double StampOf(Tamper& t, uint32_t slot, uint32_t series) {
  return std::bit_cast<double>(t.CellsOf(slot, series)[1].load());
}

void SetStamp(Tamper& t, uint32_t slot, uint32_t series, double stamp) {
  t.CellsOf(slot, series)[1].store(std::bit_cast<uint64_t>(stamp));
}

// (pid, value) of each merged child of a family; pid 0 where the mode has none.
std::vector<std::pair<int, double>> Values(const std::vector<MergedFamily>& merged,
                                           const std::string& family) {
  std::vector<std::pair<int, double>> out;
  const MergedFamily* f = Find(merged, family);
  if (f == nullptr) return out;
  for (const MergedChild& c : f->children) out.emplace_back(c.pid, c.value);
  return out;
}

const std::vector<std::pair<MultiprocessMode, std::string>>& AllModes() {
  static const std::vector<std::pair<MultiprocessMode, std::string>> modes = {
      {MultiprocessMode::kAll, "all"},
      {MultiprocessMode::kLiveAll, "liveall"},
      {MultiprocessMode::kMin, "min"},
      {MultiprocessMode::kLiveMin, "livemin"},
      {MultiprocessMode::kMax, "max"},
      {MultiprocessMode::kLiveMax, "livemax"},
      {MultiprocessMode::kSum, "sum"},
      {MultiprocessMode::kLiveSum, "livesum"},
      {MultiprocessMode::kMostRecent, "mostrecent"},
      {MultiprocessMode::kLiveMostRecent, "livemostrecent"},
  };
  return modes;
}

// One gauge family per mode, each with child {"x"} set to `value` by the calling process.
void SetEveryMode(const std::map<std::string, Family<Gauge>*>& gauges, double value) {
  for (const auto& [mode, family] : gauges) family->Labels({"x"}).Set(value);
}

// Four processes: this one (5, slot 0), one dead (-3, slot 1), one dead and marked (10, slot 2),
// one running (7, slot 3). Most-recent order, fixed through the stamps: the dead one's latest,
// then the marked one's, the running one's, this one's.
TEST(SegmentMerge, EveryGaugeModeOverLiveDeadAndMarkedProcesses) {
  const std::string name = UniqueName("modes");
  auto segment = Attach(name, 8, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  std::map<std::string, Family<Gauge>*> gauges;
  for (const auto& [mode, mode_name] : AllModes()) {
    gauges[mode_name] =
        registry.AddGauge({.name = "g_" + mode_name, .labels = {"k"}, .multiprocess_mode = mode});
    ASSERT_NE(gauges[mode_name], nullptr);
  }
  SetEveryMode(gauges, 5);
  const pid_t dead = Child([&] {
    SetEveryMode(gauges, -3);
    return segment->slot();
  });
  ASSERT_EQ(Wait(dead), 1);
  const pid_t marked = Child([&] {
    SetEveryMode(gauges, 10);
    return segment->slot();
  });
  ASSERT_EQ(Wait(marked), 2);
  ASSERT_EQ(segment->MarkProcessDead(marked), 1u);
  LiveChild running([&] {
    SetEveryMode(gauges, 7);
    return segment->slot();
  });
  ASSERT_EQ(running.result(), 3);
  Tamper t(name, kMergeBytes);
  for (const char* mode : {"mostrecent", "livemostrecent"}) {
    const uint32_t s = SeriesOf(t, std::string("g_") + mode);
    ASSERT_NE(s, UINT32_MAX);
    const double stamps[] = {100, 400, 300, 200};  // by slot
    for (uint32_t slot = 0; slot < 4; ++slot) SetStamp(t, slot, s, stamps[slot]);
  }
  const auto merged = segment->Collect();
  using V = std::vector<std::pair<int, double>>;
  const int me = getpid();
  EXPECT_EQ(Values(merged, "g_all"), (V{{me, 5}, {dead, -3}, {marked, 10}, {running.pid(), 7}}));
  EXPECT_EQ(Values(merged, "g_liveall"), (V{{me, 5}, {running.pid(), 7}}));
  EXPECT_EQ(Values(merged, "g_min"), (V{{0, -3}}));
  EXPECT_EQ(Values(merged, "g_livemin"), (V{{0, 5}}));
  EXPECT_EQ(Values(merged, "g_max"), (V{{0, 10}}));
  EXPECT_EQ(Values(merged, "g_livemax"), (V{{0, 7}}));
  EXPECT_EQ(Values(merged, "g_sum"), (V{{0, 19}}));
  EXPECT_EQ(Values(merged, "g_livesum"), (V{{0, 12}}));
  EXPECT_EQ(Values(merged, "g_mostrecent"), (V{{0, -3}}));
  EXPECT_EQ(Values(merged, "g_livemostrecent"), (V{{0, 7}}));
  for (const auto& [mode, mode_name] : AllModes()) {
    const MergedFamily* f = Find(merged, "g_" + mode_name);
    ASSERT_NE(f, nullptr) << mode_name;
    EXPECT_EQ(f->type, MetricType::kGauge);
    EXPECT_EQ(f->options.multiprocess_mode, mode) << "the mode as registered";
    EXPECT_EQ(f->options.labels, std::vector<std::string>{"k"});
    for (const MergedChild& c : f->children) {
      EXPECT_EQ(c.label_values, std::vector<std::string>{"x"});
    }
  }
  // Once the running process is gone too, the live modes have only this process.
  ASSERT_EQ(running.Release(), 3);
  const auto after = segment->Collect();
  EXPECT_EQ(Values(after, "g_liveall"), (V{{me, 5}}));
  EXPECT_EQ(Values(after, "g_livesum"), (V{{0, 5}}));
  EXPECT_EQ(Values(after, "g_livemostrecent"), (V{{0, 5}}));
  EXPECT_EQ(Values(after, "g_all").size(), 4u) << "dead processes' gauges stay in `all`";
  EXPECT_EQ(Values(after, "g_sum"), (V{{0, 19}}));
}

// A process that never made a child adds nothing to it (no 0 pulling `min` down); one that made
// it without setting it adds its 0, as prometheus_client writes a child's value when it is made.
TEST(SegmentMerge, OnlyProcessesThatMadeAChildCount) {
  const std::string name = UniqueName("made");
  auto segment = Attach(name, 8, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  auto* low = registry.AddGauge(
      {.name = "low", .labels = {"k"}, .multiprocess_mode = MultiprocessMode::kMin});
  auto* high = registry.AddGauge(
      {.name = "high", .labels = {"k"}, .multiprocess_mode = MultiprocessMode::kMax});
  auto* every = registry.AddGauge({.name = "every", .labels = {"k"}});
  LiveChild other([&] {  // forked before this process made any child: none is its
    low->Labels({"b"}).Set(-1);
    low->Labels({"c"}).Set(3);
    high->Labels({"c"}).Set(-2);
    every->Labels({"b"}).Set(1);
    return 0;
  });
  ASSERT_EQ(other.result(), 0);
  low->Labels({"a"}).Set(5);
  (void)low->Labels({"c"});  // made, never set: 0
  (void)high->Labels({"c"});
  every->Labels({"a"}).Set(2);
  const auto merged = segment->Collect();
  const MergedFamily* l = Find(merged, "low");
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(l->children.size(), 3u);  // in the order the label sets were registered: b, c, a
  EXPECT_EQ(l->children[0].label_values, std::vector<std::string>{"b"});
  EXPECT_EQ(l->children[0].value, -1);
  EXPECT_EQ(l->children[1].label_values, std::vector<std::string>{"c"});
  EXPECT_EQ(l->children[1].value, 0) << "this process's made child: min(0, 3)";
  EXPECT_EQ(l->children[2].label_values, std::vector<std::string>{"a"});
  EXPECT_EQ(l->children[2].value, 5) << "the other process never made {a}";
  ASSERT_EQ(Find(merged, "high")->children.size(), 1u);
  EXPECT_EQ(Find(merged, "high")->children[0].value, 0) << "max(-2, 0)";
  using V = std::vector<std::pair<int, double>>;
  EXPECT_EQ(Values(merged, "every"), (V{{other.pid(), 1}, {getpid(), 2}}));
  EXPECT_EQ(other.Release(), 0);
}

// Counters and histograms sum over every process that ever held a slot, dead or alive, marked
// or not; a child made and never incremented shows 0.
TEST(SegmentMerge, CountersAndHistogramsSumOverEveryProcess) {
  const std::string name = UniqueName("sums");
  auto segment = Attach(name, 8, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  auto* jobs = registry.AddCounter({.name = "jobs", .help = "Jobs.", .labels = {"k"}});
  auto* took = registry.AddHistogram(
      {.name = "took_seconds", .labels = {"k"}, .buckets = {0.5, 1, 2}, .unit = "seconds"});
  jobs->Labels({"a"}).Add(uint64_t{1});
  took->Labels({"a"}).Observe(0.25);
  auto work = [&](uint64_t n, double seconds) {
    jobs->Labels({"a"}).Add(n);
    jobs->Labels({"b"}).Add(0.5);
    for (uint64_t i = 0; i < n; ++i) took->Labels({"a"}).Observe(seconds);
    return segment->slot();
  };
  const pid_t dead = Child([&] { return work(2, 0.75); });
  ASSERT_EQ(Wait(dead), 1);
  const pid_t marked = Child([&] { return work(4, 1.5); });
  ASSERT_EQ(Wait(marked), 2);
  ASSERT_EQ(segment->MarkProcessDead(marked), 1u);
  LiveChild running([&] { return work(8, 3); });
  ASSERT_EQ(running.result(), 3);
  (void)jobs->Labels({"never"});
  const auto merged = segment->Collect();
  const MergedFamily* j = Find(merged, "jobs");
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->type, MetricType::kCounter);
  EXPECT_EQ(j->options.help, "Jobs.");
  ASSERT_EQ(j->children.size(), 3u);
  EXPECT_EQ(j->children[0].value, 15);   // 1 + 2 + 4 + 8
  EXPECT_EQ(j->children[1].value, 1.5);  // b: 0.5 from each child
  EXPECT_EQ(j->children[2].label_values, std::vector<std::string>{"never"});
  EXPECT_EQ(j->children[2].value, 0);
  for (const MergedChild& c : j->children) EXPECT_EQ(c.pid, 0);
  const MergedFamily* h = Find(merged, "took_seconds");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->options.buckets, (std::vector<double>{0.5, 1, 2}));
  EXPECT_EQ(h->options.unit, "seconds");
  ASSERT_EQ(h->children.size(), 1u);
  EXPECT_EQ(h->children[0].buckets, (std::vector<uint64_t>{1, 2, 4, 8})) << "per bucket";
  EXPECT_EQ(h->children[0].count, 15u);
  EXPECT_EQ(h->children[0].sum, 0.25 + 2 * 0.75 + 4 * 1.5 + 8 * 3);
  const std::string text = segment->Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("took_seconds_bucket{k=\"a\",le=\"0.5\"} 1.0\n"
                              "took_seconds_bucket{k=\"a\",le=\"1.0\"} 3.0\n"
                              "took_seconds_bucket{k=\"a\",le=\"2.0\"} 7.0\n"
                              "took_seconds_bucket{k=\"a\",le=\"+Inf\"} 15.0\n"
                              "took_seconds_count{k=\"a\"} 15.0\n"
                              "took_seconds_sum{k=\"a\"} 31.75\n"));
  EXPECT_THAT(text, HasSubstr("jobs_total{k=\"never\"} 0.0\n"));
  ASSERT_EQ(running.Release(), 3);
  EXPECT_EQ(Find(segment->Collect(), "jobs")->children[0].value, 15) << "dead ones stay counted";
}

// The system may give a later process a dead one's pid: `all` shows that pid once, with the
// running process's value; of two dead slots with one pid, the first slot's.
TEST(SegmentMerge, APidInTwoSlotsShowsOnce) {
  const std::string name = UniqueName("pids");
  auto segment = Attach(name, 8, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  auto* every = registry.AddGauge({.name = "every", .help = "E."});  // no child in this process
  auto* live = registry.AddGauge(
      {.name = "live_every", .help = "L.", .multiprocess_mode = MultiprocessMode::kLiveAll});
  auto set = [&](double v) {
    every->Labels({}).Set(v);
    live->Labels({}).Set(v);
    return segment->slot();
  };
  const pid_t dead = Child([&] { return set(3); });
  ASSERT_EQ(Wait(dead), 1);
  LiveChild running([&] { return set(8); });
  ASSERT_EQ(running.result(), 2);
  const pid_t also_dead = Child([&] { return set(6); });
  ASSERT_EQ(Wait(also_dead), 3);
  Tamper t(name, kMergeBytes);
  using V = std::vector<std::pair<int, double>>;
  EXPECT_EQ(Values(segment->Collect(), "every"),
            (V{{dead, 3}, {running.pid(), 8}, {also_dead, 6}}));
  t.slots[1].pid.store(running.pid());  // the dead slot 1 names the running process's pid
  auto merged = segment->Collect();
  EXPECT_EQ(Values(merged, "every"), (V{{running.pid(), 8}, {also_dead, 6}}));
  EXPECT_EQ(Values(merged, "live_every"), (V{{running.pid(), 8}}));
  t.slots[1].pid.store(424242);  // two dead slots with one pid: the first one's value
  t.slots[3].pid.store(424242);
  merged = segment->Collect();
  EXPECT_EQ(Values(merged, "every"), (V{{424242, 3}, {running.pid(), 8}}));
  const std::string text = segment->Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("# HELP every E.\n# TYPE every gauge\nevery{pid=\"424242\"} 3.0\n"
                              "every{pid=\"" +
                              std::to_string(running.pid()) + "\"} 8.0\n# HELP"));
  EXPECT_EQ(running.Release(), 2);
}

// The second word of a gauge's cells says how it was last written: made (the least stamp), set
// (1.0), or, for most-recent gauges, set at a wall-clock second.
TEST(SegmentMerge, GaugeStampsSayHowEachValueWasWritten) {
  const std::string name = UniqueName("stamps");
  auto segment = Attach(name, 4, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  auto* plain = registry.AddGauge({.name = "plain", .labels = {"k"}});
  auto* recent = registry.AddGauge(
      {.name = "recent", .labels = {"k"}, .multiprocess_mode = MultiprocessMode::kLiveMostRecent});
  (void)plain->Labels({"made"});
  plain->Labels({"set"}).Set(2);
  plain->Labels({"added"}).Add(-4);
  (void)recent->Labels({"made"});
  recent->Labels({"set"}).Set(3);
  recent->Labels({"added"}).Inc();
  Tamper t(name, kMergeBytes);
  const uint32_t slot = static_cast<uint32_t>(segment->slot());
  EXPECT_EQ(StampOf(t, slot, SeriesOf(t, "plain", 0)), segment::kCreatedStamp);
  EXPECT_EQ(StampOf(t, slot, SeriesOf(t, "plain", 1)), 1.0);
  EXPECT_EQ(StampOf(t, slot, SeriesOf(t, "plain", 2)), 1.0);
  EXPECT_EQ(StampOf(t, slot, SeriesOf(t, "recent", 0)), segment::kCreatedStamp);
  EXPECT_GT(StampOf(t, slot, SeriesOf(t, "recent", 1)), 1.6e9) << "wall seconds";
  EXPECT_GT(StampOf(t, slot, SeriesOf(t, "recent", 2)), 1.6e9);
  // A made, never set child is still the most recent when it is the only one.
  using V = std::vector<std::pair<int, double>>;
  EXPECT_EQ(Values(segment->Collect(), "recent"), (V{{0, 0}, {0, 3}, {0, 1}}));
  // Other slots' cells are untouched: nothing made there.
  EXPECT_EQ(StampOf(t, slot + 1, SeriesOf(t, "plain", 0)), 0);
}

// A family no process gave a sample is not written, as MultiProcessCollector writes only
// metrics some file holds; nothing at all is an empty exposition.
TEST(SegmentMerge, FamiliesWithoutASampleAreNotWritten) {
  const std::string name = UniqueName("empty");
  auto segment = Attach(name, 4, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "no_children", .help = "None."});
  auto* live = registry.AddGauge(
      {.name = "live_only", .help = "L.", .multiprocess_mode = MultiprocessMode::kLiveMax});
  EXPECT_EQ(Wait(Child([&] {
              live->Labels({}).Set(4);
              return 0;
            })),
            0);
  EXPECT_EQ(segment->Render(Format::kText), "");
  EXPECT_EQ(segment->Render(Format::kOpenMetrics), "# EOF\n");
  EXPECT_TRUE(segment->Collect().empty());
  EXPECT_EQ(segment->Stats().families, 2u);
  EXPECT_EQ(segment->Stats().series, 1u);
  live->Labels({}).Set(1);
  EXPECT_EQ(segment->Render(Format::kText),
            "# HELP live_only L.\n# TYPE live_only gauge\n"
            "live_only 1.0\n");
}

// Values past the finite range merge as floats do: +Inf counters, a NaN gauge in a sum.
TEST(SegmentMerge, NonFiniteValuesMergeAsFloats) {
  const std::string name = UniqueName("inf");
  auto segment = Attach(name, 4, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  Counter counter = registry.AddCounter({.name = "c", .help = "C."})->Labels({});
  Gauge total =
      registry
          .AddGauge({.name = "total", .help = "T.", .multiprocess_mode = MultiprocessMode::kSum})
          ->Labels({});
  Gauge top =
      registry.AddGauge({.name = "top", .help = "M.", .multiprocess_mode = MultiprocessMode::kMax})
          ->Labels({});
  Histogram h = registry.AddHistogram({.name = "h", .help = "H.", .buckets = {1}})->Labels({});
  counter.Add(uint64_t{2});
  total.Set(1);
  top.Set(-std::numeric_limits<double>::infinity());
  h.Observe(-std::numeric_limits<double>::infinity());
  EXPECT_EQ(Wait(Child([&] {
              counter.AddFloat(std::numeric_limits<double>::infinity());
              total.Set(std::nan(""));
              top.Set(3);
              return 0;
            })),
            0);
  const std::string text = segment->Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("\nc_total +Inf\n"));
  EXPECT_THAT(text, HasSubstr("\ntotal NaN\n"));
  EXPECT_THAT(text, HasSubstr("\ntop 3.0\n"));
  EXPECT_THAT(text, HasSubstr("h_bucket{le=\"1.0\"} 1.0\nh_bucket{le=\"+Inf\"} 1.0\nh_count 1.0\n"
                              "h_sum -Inf\n"));
  StrictParse(text);
}

// `text` with each "{P}", "{D}", "{L}" replaced by that process's pid.
std::string WithPids(std::string text, int p, int d, int l) {
  for (const auto& [key, pid] : {std::pair<std::string, int>{"{P}", p}, {"{D}", d}, {"{L}", l}}) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
      text.replace(at, key.size(), std::to_string(pid));
    }
  }
  return text;
}

// The exposition's families, each as its HELP and TYPE lines and its sorted sample lines, in
// name order: prometheus_client orders families by the files it globbed and a histogram's
// samples `_sum` first; the families and lines are the same.
std::map<std::string, std::vector<std::string>> ByFamily(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(text);
  std::string family;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# HELP ")) family = line.substr(7, line.find(' ', 7) - 7);
    out[family].push_back(line);
  }
  for (auto& [name, lines] : out) std::sort(lines.begin() + 2, lines.end());
  return out;
}

// prometheus_client 0.16, MultiProcessCollector + generate_latest: a counter and a histogram
// written by this process {P}, a dead one {D} and a running one {L}.
constexpr char kPrometheusClientSums[] = R"(# HELP latency_seconds Latency \\ of\nrequests.
# TYPE latency_seconds histogram
latency_seconds_sum{handler="h",route="a"} 1.00000000275e+09
latency_seconds_sum{handler="h",route="q\"\\\n"} 0.05
latency_seconds_bucket{handler="h",le="0.1",route="a"} 0.0
latency_seconds_bucket{handler="h",le="1.0",route="a"} 2.0
latency_seconds_bucket{handler="h",le="1.23456789e+08",route="a"} 3.0
latency_seconds_bucket{handler="h",le="+Inf",route="a"} 4.0
latency_seconds_count{handler="h",route="a"} 4.0
latency_seconds_bucket{handler="h",le="0.1",route="q\"\\\n"} 1.0
latency_seconds_bucket{handler="h",le="1.0",route="q\"\\\n"} 1.0
latency_seconds_bucket{handler="h",le="1.23456789e+08",route="q\"\\\n"} 1.0
latency_seconds_bucket{handler="h",le="+Inf",route="q\"\\\n"} 1.0
latency_seconds_count{handler="h",route="q\"\\\n"} 1.0
# HELP requests_total Requests served.
# TYPE requests_total counter
requests_total{code="200",route="a"} 5.0
requests_total{code="500",route="b"} 1.5
)";

TEST(SegmentRender, CountersAndHistogramsPrintAsPrometheusClientPrintsThem) {
  const std::string name = UniqueName("render-sums");
  auto segment = Attach(name, 4, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  auto* requests = registry.AddCounter(
      {.name = "requests", .help = "Requests served.", .labels = {"route", "code"}});
  auto* latency = registry.AddHistogram({.name = "latency_seconds",
                                         .help = "Latency \\ of\nrequests.",
                                         .labels = {"route", "handler"},
                                         .buckets = {0.1, 1, 123456789}});
  requests->Labels({"a", "200"}).Add(uint64_t{2});
  latency->Labels({"a", "h"}).Observe(0.25);
  const pid_t dead = Child([&] {
    requests->Labels({"a", "200"}).Add(uint64_t{3});
    requests->Labels({"b", "500"}).Inc();
    latency->Labels({"a", "h"}).Observe(0.5);
    latency->Labels({"a", "h"}).Observe(2);
    return 0;
  });
  ASSERT_EQ(Wait(dead), 0);
  LiveChild running([&] {
    requests->Labels({"b", "500"}).Add(0.5);
    latency->Labels({"a", "h"}).Observe(1e9);
    latency->Labels({"q\"\\\n", "h"}).Observe(0.05);
    return 0;
  });
  ASSERT_EQ(running.result(), 0);
  const std::string text = segment->Render(Format::kText);
  EXPECT_EQ(text,
            "# HELP requests_total Requests served.\n"
            "# TYPE requests_total counter\n"
            "requests_total{code=\"200\",route=\"a\"} 5.0\n"
            "requests_total{code=\"500\",route=\"b\"} 1.5\n"
            "# HELP latency_seconds Latency \\\\ of\\nrequests.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{handler=\"h\",le=\"0.1\",route=\"a\"} 0.0\n"
            "latency_seconds_bucket{handler=\"h\",le=\"1.0\",route=\"a\"} 2.0\n"
            "latency_seconds_bucket{handler=\"h\",le=\"1.23456789e+08\",route=\"a\"} 3.0\n"
            "latency_seconds_bucket{handler=\"h\",le=\"+Inf\",route=\"a\"} 4.0\n"
            "latency_seconds_count{handler=\"h\",route=\"a\"} 4.0\n"
            "latency_seconds_sum{handler=\"h\",route=\"a\"} 1.00000000275e+09\n"
            "latency_seconds_bucket{handler=\"h\",le=\"0.1\",route=\"q\\\"\\\\\\n\"} 1.0\n"
            "latency_seconds_bucket{handler=\"h\",le=\"1.0\",route=\"q\\\"\\\\\\n\"} 1.0\n"
            "latency_seconds_bucket{handler=\"h\",le=\"1.23456789e+08\",route=\"q\\\"\\\\\\n\"} "
            "1.0\n"
            "latency_seconds_bucket{handler=\"h\",le=\"+Inf\",route=\"q\\\"\\\\\\n\"} 1.0\n"
            "latency_seconds_count{handler=\"h\",route=\"q\\\"\\\\\\n\"} 1.0\n"
            "latency_seconds_sum{handler=\"h\",route=\"q\\\"\\\\\\n\"} 0.05\n");
  EXPECT_EQ(ByFamily(text), ByFamily(kPrometheusClientSums));
  StrictParse(text);
  // OpenMetrics, as prometheus_client's openmetrics exposition names a counter family.
  const std::string om = segment->Render(Format::kOpenMetrics);
  EXPECT_THAT(om, ::testing::StartsWith("# HELP requests Requests served.\n"
                                        "# TYPE requests counter\n"
                                        "requests_total{code=\"200\",route=\"a\"} 5.0\n"));
  EXPECT_THAT(om, ::testing::EndsWith("latency_seconds_sum{handler=\"h\",route=\"q\\\"\\\\\\n\"} "
                                      "0.05\n# EOF\n"));
  EXPECT_EQ(running.Release(), 0);
}

// prometheus_client 0.16 for every gauge mode it has: this process {P} (1), a dead process
// marked dead {D} (2, or -7 and 7), a running one {L} (3 or 3.5).
constexpr char kPrometheusClientGauges[] = R"(# HELP g_liveall Gauge liveall.
# TYPE g_liveall gauge
g_liveall{a="x",pid="{P}",zone="z1"} 1.0
g_liveall{a="x",pid="{L}",zone="z1"} 3.0
# HELP g_livesum Gauge livesum.
# TYPE g_livesum gauge
g_livesum{a="x",zone="z1"} 4.5
# HELP g_livemax Gauge livemax.
# TYPE g_livemax gauge
g_livemax{a="x",zone="z1"} 3.0
# HELP g_all Gauge all.
# TYPE g_all gauge
g_all{a="x",pid="{L}",zone="z1"} 3.0
g_all{a="x",pid="{P}",zone="z1"} 1.0
g_all{a="x",pid="{D}",zone="z1"} 2.0
# HELP g_max Gauge max.
# TYPE g_max gauge
g_max{a="x",zone="z1"} 7.0
# HELP g_min Gauge min.
# TYPE g_min gauge
g_min{a="x",zone="z1"} -7.0
# HELP g_livemin Gauge livemin.
# TYPE g_livemin gauge
g_livemin{a="x",zone="z1"} 1.0
# HELP g_sum Gauge sum.
# TYPE g_sum gauge
g_sum{a="x",zone="z1"} 6.5
)";

TEST(SegmentRender, GaugesPrintAsPrometheusClientPrintsThemInEveryMode) {
  const std::string name = UniqueName("render-gauges");
  auto segment = Attach(name, 4, kMergeBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  std::map<std::string, Family<Gauge>*> gauges;
  for (const auto& [mode, mode_name] : AllModes()) {
    gauges[mode_name] = registry.AddGauge({.name = "g_" + mode_name,
                                           .help = "Gauge " + mode_name + ".",
                                           .labels = {"zone", "a"},
                                           .multiprocess_mode = mode});
  }
  // Per mode: this process's value, the dead one's, the running one's.
  const std::map<std::string, std::vector<double>> values = {
      {"all", {1, 2, 3}},           {"liveall", {1, 2, 3}},   {"min", {1, -7, 3}},
      {"livemin", {1, -7, 3}},      {"max", {1, 7, 3}},       {"livemax", {1, 7, 3}},
      {"sum", {1, 2, 3.5}},         {"livesum", {1, 2, 3.5}}, {"mostrecent", {1, 2, 3}},
      {"livemostrecent", {1, 2, 3}}};
  auto set = [&](size_t who) {
    for (const auto& [mode, v] : values) gauges[mode]->Labels({"z1", "x"}).Set(v[who]);
    return 0;
  };
  set(0);
  const pid_t dead = Child([&] { return set(1); });
  ASSERT_EQ(Wait(dead), 0);
  ASSERT_EQ(segment->MarkProcessDead(dead), 1u);
  LiveChild running([&] { return set(2); });
  ASSERT_EQ(running.result(), 0);
  Tamper t(name, kMergeBytes);
  for (const char* mode : {"g_mostrecent", "g_livemostrecent"}) {  // the dead one's write last
    const double stamps[] = {100, 300, 200};
    for (uint32_t slot = 0; slot < 3; ++slot) SetStamp(t, slot, SeriesOf(t, mode), stamps[slot]);
  }
  const std::string text = segment->Render(Format::kText);
  const int p = getpid(), l = running.pid();
  EXPECT_EQ(
      text,
      WithPids("# HELP g_all Gauge all.\n# TYPE g_all gauge\n"
               "g_all{a=\"x\",pid=\"{P}\",zone=\"z1\"} 1.0\n"
               "g_all{a=\"x\",pid=\"{D}\",zone=\"z1\"} 2.0\n"
               "g_all{a=\"x\",pid=\"{L}\",zone=\"z1\"} 3.0\n"
               "# HELP g_liveall Gauge liveall.\n# TYPE g_liveall gauge\n"
               "g_liveall{a=\"x\",pid=\"{P}\",zone=\"z1\"} 1.0\n"
               "g_liveall{a=\"x\",pid=\"{L}\",zone=\"z1\"} 3.0\n"
               "# HELP g_min Gauge min.\n# TYPE g_min gauge\ng_min{a=\"x\",zone=\"z1\"} -7.0\n"
               "# HELP g_livemin Gauge livemin.\n# TYPE g_livemin gauge\n"
               "g_livemin{a=\"x\",zone=\"z1\"} 1.0\n"
               "# HELP g_max Gauge max.\n# TYPE g_max gauge\ng_max{a=\"x\",zone=\"z1\"} 7.0\n"
               "# HELP g_livemax Gauge livemax.\n# TYPE g_livemax gauge\n"
               "g_livemax{a=\"x\",zone=\"z1\"} 3.0\n"
               "# HELP g_sum Gauge sum.\n# TYPE g_sum gauge\ng_sum{a=\"x\",zone=\"z1\"} 6.5\n"
               "# HELP g_livesum Gauge livesum.\n# TYPE g_livesum gauge\n"
               "g_livesum{a=\"x\",zone=\"z1\"} 4.5\n"
               "# HELP g_mostrecent Gauge mostrecent.\n# TYPE g_mostrecent gauge\n"
               "g_mostrecent{a=\"x\",zone=\"z1\"} 2.0\n"
               "# HELP g_livemostrecent Gauge livemostrecent.\n"
               "# TYPE g_livemostrecent gauge\n"
               "g_livemostrecent{a=\"x\",zone=\"z1\"} 3.0\n",
               p, dead, l));
  // prometheus_client's families and lines, where it has the mode.
  auto ours = ByFamily(text);
  ours.erase("g_mostrecent");
  ours.erase("g_livemostrecent");
  EXPECT_EQ(ours, ByFamily(WithPids(kPrometheusClientGauges, p, dead, l)));
  StrictParse(text);
  EXPECT_EQ(running.Release(), 0);
}

}  // namespace
}  // namespace modelmetrics
