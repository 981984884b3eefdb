// More of the registry (registry.cc), beyond registry_test.cc: every sample name a family renders
// reserved against other families (and freed by RemovePrefix); which differences make a second
// registration a collision; handles (and removed families) staying valid and counted through
// Remove and RemovePrefix, also while other threads record; label values and HELP escaped as
// prometheus_client escapes them, in both formats; `_created` samples with the times children
// were given; gating (inert handles, Bind rendering zeros, in a process and in a shared segment);
// the bound on label values; collectors and appending renders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"
#include "test_deadlines.h"

namespace modelmetrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Registers `second` after `first` in a fresh registry: whether it was accepted, and the error.
struct Outcome {
  bool accepted;
  std::string error;
};
Outcome RegisterAfter(const std::function<bool(Registry&)>& first,
                      const std::function<bool(Registry&, std::string*)>& second) {
  Registry registry;
  EXPECT_TRUE(first(registry));
  Outcome out;
  out.accepted = second(registry, &out.error);
  return out;
}

auto Counter_(std::string name) {
  return [name](Registry& r, std::string* e = nullptr) {
    return r.AddCounter({.name = name}, e) != nullptr;
  };
}
auto Gauge_(std::string name) {
  return [name](Registry& r, std::string* e = nullptr) {
    return r.AddGauge({.name = name}, e) != nullptr;
  };
}
auto Histogram_(std::string name) {
  return [name](Registry& r, std::string* e = nullptr) {
    return r.AddHistogram({.name = name}, e) != nullptr;
  };
}

TEST(RegistryNames, EverySampleNameAFamilyRendersIsReserved) {
  struct Case {
    std::function<bool(Registry&)> first;
    std::function<bool(Registry&, std::string*)> second;
    std::string second_name;
    bool accepted;
  };
  const std::vector<Case> cases = {
      // A histogram renders h, h_bucket, h_sum, h_count.
      {Histogram_("h"), Gauge_("h_bucket"), "h_bucket", false},
      {Histogram_("h"), Gauge_("h_sum"), "h_sum", false},
      {Histogram_("h"), Counter_("h_count"), "h_count", false},
      {Histogram_("h"), Counter_("h"), "h", false},
      {Histogram_("h"), Gauge_("h_total"), "h_total", true},
      {Histogram_("h"), Gauge_("h_bucket_sum"), "h_bucket_sum", true},
      // A counter renders c_total (and its family name c).
      {Counter_("c"), Gauge_("c_total"), "c_total", false},
      {Counter_("c"), Histogram_("c"), "c", false},
      {Counter_("c"), Histogram_("c_total"), "c_total", false},
      {Counter_("c"), Gauge_("c_count"), "c_count", true},
      // ... and the other way round: the second family's names meet the first's.
      {Gauge_("x_bucket"), Histogram_("x"), "x", false},
      {Gauge_("x_count"), Histogram_("x"), "x", false},
      {Counter_("x_sum"), Histogram_("x"), "x", false},
      {Gauge_("y_total"), Counter_("y"), "y", false},
      {Gauge_("y"), Counter_("y_total"), "y", false},
      {Counter_("z_bucket"), Histogram_("z"), "z", false},
  };
  for (const Case& c : cases) {
    const Outcome out = RegisterAfter(c.first, c.second);
    EXPECT_EQ(out.accepted, c.accepted) << c.second_name;
    if (!c.accepted) {
      EXPECT_EQ(out.error, c.second_name + ": name collides with a registered family");
    }
  }
}

// A second registration of a name returns the family only when everything matches; any one
// difference is a collision.
TEST(RegistryNames, AnyDifferenceInTheDefinitionIsACollision) {
  const FamilyOptions base{.name = "g_seconds",
                           .help = "G.",
                           .labels = {"a", "b"},
                           .unit = "seconds",
                           .multiprocess_mode = MultiprocessMode::kMax};
  Registry registry;
  Family<Gauge>* family = registry.AddGauge(base);
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(registry.AddGauge(base), family);
  std::vector<FamilyOptions> different(6, base);
  different[0].help = "Other.";
  different[1].labels = {"b", "a"};
  different[2].labels = {"a"};
  different[3].unit = "";
  different[4].multiprocess_mode = MultiprocessMode::kMin;
  different[5].help = "";
  for (const FamilyOptions& o : different) {
    std::string error;
    EXPECT_EQ(registry.AddGauge(o, &error), nullptr);
    EXPECT_EQ(error, "g_seconds: name collides with a registered family");
  }
  Registry histograms;
  auto* h = histograms.AddHistogram({.name = "h", .buckets = {1, 2}});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(histograms.AddHistogram({.name = "h", .buckets = {1, 2}}), h);
  EXPECT_EQ(histograms.AddHistogram({.name = "h", .buckets = {1, 3}}), nullptr);
  EXPECT_EQ(histograms.AddHistogram({.name = "h"}), nullptr);
  EXPECT_EQ(histograms.Families().size(), 1u);
}

// prometheus_client's registry reserves `<name>_created` for counters and histograms (the sample
// their children render with created series on), so a gauge cannot take it: with created series
// on (the Python package's default) the text exposition would hold two `c_created` families.
TEST(RegistryNames, CreatedSampleNamesAreReservedToo) {
  Registry registry;
  registry.AddCounter({.name = "c", .help = "C."})->Labels({}).Inc();
  std::string error;
  EXPECT_EQ(registry.AddGauge({.name = "c_created", .help = "G."}, &error), nullptr);
  EXPECT_EQ(registry.AddGauge({.name = "h_created"}, &error) != nullptr &&
                registry.AddHistogram({.name = "h"}, &error) != nullptr,
            false);
  const std::string text = registry.Render(Format::kText, {.created_series = true});
  EXPECT_EQ(text.find("# TYPE c_created"), text.rfind("# TYPE c_created")) << text;
}

TEST(RegistryNames, RemovePrefixFreesEveryReservedName) {
  Registry registry;
  ASSERT_NE(registry.AddHistogram({.name = "vllm:h"}), nullptr);
  ASSERT_NE(registry.AddCounter({.name = "vllm:c"}), nullptr);
  ASSERT_NE(registry.AddGauge({.name = "vllm_omni:g"}), nullptr);
  EXPECT_EQ(registry.AddGauge({.name = "vllm:h_count"}), nullptr);
  EXPECT_EQ(registry.RemovePrefix("vllm:"), 2u);
  EXPECT_EQ(registry.RemovePrefix("vllm:"), 0u);
  EXPECT_EQ(registry.RemovePrefix("nothing"), 0u);
  for (const char* name :
       {"vllm:h", "vllm:h_bucket", "vllm:h_sum", "vllm:h_count", "vllm:c", "vllm:c_total"}) {
    EXPECT_NE(registry.AddGauge({.name = name}), nullptr) << name << " is free again";
  }
  EXPECT_EQ(registry.AddGauge({.name = "vllm_omni:g", .help = "Other."}), nullptr)
      << "`vllm_omni:` does not start with `vllm:`";
  EXPECT_EQ(registry.RemovePrefix("vllm"), 7u) << "both prefixes";
  EXPECT_TRUE(registry.Families().empty());
  EXPECT_EQ(registry.Render(Format::kText), "");
}

// Removed families and children keep their series: handles taken before stay live and keep
// counting, the removed family's own methods still work, and none of it renders.
TEST(RegistryRemoval, HandlesAndRemovedFamiliesStayValid) {
  Registry registry;
  auto* counters = registry.AddCounter({.name = "vllm:requests", .labels = {"k"}});
  auto* hist = registry.AddHistogram({.name = "vllm:latency", .buckets = {1}});
  registry.AddGauge({.name = "vllm_omni:kept"})->Labels({}).Set(1);
  registry.AddCollector("after", [](ExpositionWriter& w) {
    w.BeginFamily("collected", MetricType::kGauge, "", false);
    w.SampleWithLabelText("collected", "", 2);
  });
  Counter old = counters->Labels({"a"});
  Histogram old_h = hist->Labels({});
  old.Add(uint64_t{3});
  old_h.Observe(0.5);
  EXPECT_EQ(registry.RemovePrefix("vllm:"), 2u);
  old.Inc();
  old_h.Observe(2);
  EXPECT_TRUE(old.live());
  EXPECT_EQ(old.Value(), 4);
  EXPECT_EQ(old_h.Read().buckets, (std::vector<uint64_t>{1, 1}));
  Counter from_removed = counters->Labels({"b"});  // the removed family still makes children
  from_removed.Inc();
  EXPECT_EQ(counters->Collect().size(), 2u);
  EXPECT_TRUE(counters->Remove({"a"}));
  old.Inc();
  EXPECT_EQ(old.Value(), 5) << "a removed child of a removed family";
  EXPECT_EQ(registry.Render(Format::kText),
            "# TYPE vllm_omni:kept gauge\nvllm_omni:kept 1.0\n"
            "# TYPE collected gauge\ncollected 2.0\n");
  EXPECT_EQ(registry.Families().size(), 1u);
  // The name again: a new family with new series, beside the old handles.
  auto* again = registry.AddCounter({.name = "vllm:requests", .labels = {"k"}});
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again, counters);
  EXPECT_EQ(again->Labels({"a"}).Value(), 0);
  again->Labels({"a"}).Inc();
  EXPECT_EQ(old.Value(), 5);
  EXPECT_THAT(registry.Render(Format::kText), HasSubstr("vllm:requests_total{k=\"a\"} 1.0\n"));
}

// Threads recording through handles while their family is removed: every observation lands in
// the series, none is lost, nothing crashes.
TEST(RegistryRemoval, RecordingWhileRemovingLosesNothing) {
  Registry registry;
  auto* family = registry.AddCounter({.name = "vllm:c", .labels = {"k"}});
  constexpr int kThreads = 4, kPerThread = 50000;
  std::vector<Counter> handles;
  for (int t = 0; t < kThreads; ++t) handles.push_back(family->Labels({std::to_string(t)}));
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      started.fetch_add(1);
      for (int i = 0; i < kPerThread; ++i) handles[t].Inc();
    });
  }
  EXPECT_TRUE(modelmetrics::testing::WaitUntil([&] { return started.load() == kThreads; }));
  EXPECT_TRUE(family->Remove({"0"}));
  EXPECT_EQ(registry.RemovePrefix("vllm:"), 1u);
  (void)registry.Render(Format::kText);
  for (std::thread& t : threads) t.join();
  for (const Counter& c : handles) EXPECT_EQ(c.Value(), kPerThread);
}

TEST(RegistryRemoval, RemovingAChildNeedsItsExactLabelSet) {
  Registry registry;
  auto* family = registry.AddGauge({.name = "g", .labels = {"a", "b"}});
  family->Labels({"1", "2"}).Set(3);
  EXPECT_FALSE(family->Remove({"1"})) << "too few values";
  EXPECT_FALSE(family->Remove({"1", "2", "3"}));
  EXPECT_FALSE(family->Remove({"2", "1"}));
  EXPECT_FALSE(family->Remove({"1", "3"}));
  EXPECT_TRUE(family->Remove({"1", "2"}));
  EXPECT_TRUE(family->Collect().empty());
}

TEST(RegistryEscaping, LabelValuesAndHelpAreEscapedAsPrometheusClientEscapesThem) {
  Registry registry;
  auto* g = registry.AddGauge(
      {.name = "g", .help = "Path \"C:\\tmp\"\nsecond line", .labels = {"v", "k"}});
  g->Labels({"back\\slash", "1"}).Set(1);
  g->Labels({"quo\"te", "2"}).Set(2);
  g->Labels({"new\nline", "3"}).Set(3);
  g->Labels({"tab\tcr\r", "4"}).Set(4);
  g->Labels({"{},= \xc3\xa9", "5"}).Set(5);
  g->Labels({"", "6"}).Set(6);
  const std::string samples =
      "g{k=\"1\",v=\"back\\\\slash\"} 1.0\n"
      "g{k=\"2\",v=\"quo\\\"te\"} 2.0\n"
      "g{k=\"3\",v=\"new\\nline\"} 3.0\n"
      "g{k=\"4\",v=\"tab\tcr\r\"} 4.0\n"
      "g{k=\"5\",v=\"{},= \xc3\xa9\"} 5.0\n"
      "g{k=\"6\",v=\"\"} 6.0\n";
  EXPECT_EQ(registry.Render(Format::kText),
            "# HELP g Path \"C:\\\\tmp\"\\nsecond line\n# TYPE g gauge\n" + samples);
  EXPECT_EQ(
      registry.Render(Format::kOpenMetrics),
      "# HELP g Path \\\"C:\\\\tmp\\\"\\nsecond line\n# TYPE g gauge\n" + samples + "# EOF\n");
  std::vector<CollectedChild> children = registry.Families()[0]->Collect();
  ASSERT_EQ(children.size(), 6u);
  EXPECT_EQ(children[2].label_values, (std::vector<std::string>{"new\nline", "3"}))
      << "collected as given, unescaped";
}

// `_created` carries each child's creation time, given or taken, spelled as prometheus_client
// spells floats (1.7000000005e+09), labels as the child's without `le`; removed children have
// none; histograms' and counters' only.
TEST(RegistryCreated, CreatedSamplesCarryTheChildrensTimes) {
  Registry registry;
  auto* c = registry.AddCounter({.name = "c", .help = "C.", .labels = {"k"}});
  auto* h = registry.AddHistogram({.name = "h", .labels = {"z"}, .buckets = {1}});
  auto* g = registry.AddGauge({.name = "g", .labels = {"k"}});
  const std::string_view a[] = {"a"}, b[] = {"b"}, gone[] = {"gone"};
  c->Labels(std::span<const std::string_view>(a), 1700000000.5).Inc();
  c->Labels(std::span<const std::string_view>(gone), 1.0).Inc();
  c->Labels(std::span<const std::string_view>(b), 1234.5).Add(uint64_t{2});
  h->Labels(std::span<const std::string_view>(a), 0.25).Observe(0.5);
  g->Labels(std::span<const std::string_view>(a), 99.0).Set(1);
  EXPECT_TRUE(c->Remove({"gone"}));
  const RenderOptions created{.created_series = true};
  EXPECT_EQ(registry.Render(Format::kText, created),
            "# HELP c_total C.\n# TYPE c_total counter\n"
            "c_total{k=\"a\"} 1.0\nc_total{k=\"b\"} 2.0\n"
            "# HELP c_created C.\n# TYPE c_created gauge\n"
            "c_created{k=\"a\"} 1.7000000005e+09\nc_created{k=\"b\"} 1234.5\n"
            "# TYPE h histogram\n"
            "h_bucket{le=\"1.0\",z=\"a\"} 1.0\nh_bucket{le=\"+Inf\",z=\"a\"} 1.0\n"
            "h_count{z=\"a\"} 1.0\nh_sum{z=\"a\"} 0.5\n"
            "# TYPE h_created gauge\nh_created{z=\"a\"} 0.25\n"
            "# TYPE g gauge\ng{k=\"a\"} 1.0\n");
  EXPECT_EQ(registry.Render(Format::kOpenMetrics, created),
            "# HELP c C.\n# TYPE c counter\n"
            "c_total{k=\"a\"} 1.0\nc_created{k=\"a\"} 1.7000000005e+09\n"
            "c_total{k=\"b\"} 2.0\nc_created{k=\"b\"} 1234.5\n"
            "# TYPE h histogram\n"
            "h_bucket{le=\"1.0\",z=\"a\"} 1.0\nh_bucket{le=\"+Inf\",z=\"a\"} 1.0\n"
            "h_count{z=\"a\"} 1.0\nh_sum{z=\"a\"} 0.5\nh_created{z=\"a\"} 0.25\n"
            "# TYPE g gauge\ng{k=\"a\"} 1.0\n# EOF\n");
  // A time is the child's from its creation: asking again with another changes nothing.
  c->Labels(std::span<const std::string_view>(a), 5.0).Inc();
  EXPECT_EQ(c->Collect().at(0).created, 1700000000.5);
  EXPECT_EQ(g->Collect().at(0).created, 99.0) << "kept, though never rendered for gauges";
}

TEST(RegistryGating, ADisabledRegistryHandsOutInertHandlesAndBoundChildrenRenderZero) {
  Registry registry(RegistryOptions{.enabled = false});
  EXPECT_FALSE(registry.enabled());
  auto* c = registry.AddCounter({.name = "c", .help = "C.", .labels = {"k"}});
  auto* g = registry.AddGauge({.name = "g", .labels = {"k"}});
  auto* h = registry.AddHistogram({.name = "h", .labels = {"k"}, .buckets = {0.5, 1}});
  ASSERT_NE(c, nullptr);
  ASSERT_NE(g, nullptr);
  ASSERT_NE(h, nullptr);
  Counter bound = c->Bind({"a"});
  Gauge bound_gauge = g->Bind({"a"});
  Histogram bound_hist = h->Bind({"a"});
  EXPECT_FALSE(bound.live());
  EXPECT_FALSE(bound_gauge.live());
  EXPECT_FALSE(bound_hist.live());
  bound.Add(uint64_t{5});
  bound_gauge.Set(7);
  bound_hist.Observe(0.2);
  const std::string_view lazy[] = {"lazy"};
  EXPECT_FALSE(c->Labels(lazy).live());
  EXPECT_FALSE(c->Labels(std::span<const std::string_view>(lazy), 12.0).live());
  EXPECT_FALSE(c->Bind({"too", "many"}).live());
  EXPECT_EQ(registry.Render(Format::kText),
            "# HELP c_total C.\n# TYPE c_total counter\nc_total{k=\"a\"} 0.0\n"
            "# TYPE g gauge\ng{k=\"a\"} 0.0\n"
            "# TYPE h histogram\n"
            "h_bucket{k=\"a\",le=\"0.5\"} 0.0\nh_bucket{k=\"a\",le=\"1.0\"} 0.0\n"
            "h_bucket{k=\"a\",le=\"+Inf\"} 0.0\nh_count{k=\"a\"} 0.0\nh_sum{k=\"a\"} 0.0\n");
  EXPECT_EQ(c->Collect().size(), 1u) << "the lazy children were never made";
  EXPECT_TRUE(c->Remove({"a"}));
  EXPECT_FALSE(c->Remove({"lazy"}));
  // Enabled, Bind and Labels give the same live series.
  Registry on;
  auto* family = on.AddCounter({.name = "c", .labels = {"k"}});
  Counter eager = family->Bind({"a"});
  ASSERT_TRUE(eager.live());
  eager.Inc();
  family->Labels({"a"}).Inc();
  EXPECT_EQ(eager.Value(), 2);
  EXPECT_FALSE(family->Bind({}).live()) << "wrong arity: inert";
  EXPECT_EQ(family->Collect().size(), 1u);
}

// Gated off and shared: bound children exist in the segment as made (0), and nothing recorded
// reaches it.
TEST(RegistryGating, ADisabledSharedRegistryShowsBoundChildrenAsMade) {
  const std::string name = segment_testing::UniqueName("gated");
  auto segment = segment_testing::Attach(name);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.enabled = false, .shared = segment});
  Counter c = registry.AddCounter({.name = "c", .help = "C."})->Bind({});
  Gauge g = registry.AddGauge({.name = "g", .help = "G."})->Bind({});
  (void)registry.AddCounter({.name = "lazy", .help = "L."})->Labels({});
  c.Inc();
  g.Set(3);
  EXPECT_EQ(segment->Render(Format::kText),
            "# HELP c_total C.\n# TYPE c_total counter\nc_total 0.0\n"
            "# HELP g G.\n# TYPE g gauge\ng{pid=\"" +
                std::to_string(getpid()) + "\"} 0.0\n");
  EXPECT_EQ(segment->Stats().series, 2u);
}

TEST(RegistryBounds, ALabelValueOverTheBoundIsRefusedAndReportedOnce) {
  Registry registry;
  auto* family = registry.AddGauge({.name = "g", .labels = {"a", "b"}});
  const std::string over(kMaxLabelValueBytes + 1, 'x');
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(family->Labels({"ok", over}).live());
  EXPECT_FALSE(family->Labels({over, "ok"}).live());
  EXPECT_FALSE(family->Bind({over, over}).live());
  const std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(warned,
            "modelmetrics: g: a label value over the 4096-byte bound; such label sets are not "
            "recorded\n")
      << "once per family";
  std::string refused;
  const std::string_view values[] = {over, "ok"};
  EXPECT_FALSE(family->Labels(values, Family<Gauge>::kNow, &refused).live());
  EXPECT_EQ(refused, "a label value over the 4096-byte bound") << "told to the caller who asks";
  EXPECT_TRUE(family->Collect().empty());
  EXPECT_TRUE(family->Labels({"ok", std::string(kMaxLabelValueBytes, 'y')}).live());
  EXPECT_FALSE(family->Remove({over, "ok"}));
}

TEST(RegistryRender, FamiliesThenCollectorsInOrderAppendedToTheCallersString) {
  Registry registry;
  registry.AddCollector("second", [](ExpositionWriter& w) {
    w.BeginFamily("z_second", MetricType::kGauge, "", false);
    w.SampleWithLabelText("z_second", "", 2);
  });
  registry.AddGauge({.name = "b"})->Labels({}).Set(1);
  registry.AddCollector("first_added_later", [](ExpositionWriter& w) {
    w.BeginFamily("a_third", MetricType::kGauge, "", false);
    w.SampleWithLabelText("a_third", "x=\"1\"", 3);
  });
  registry.AddCounter({.name = "a"})->Labels({}).Inc();
  std::string out = "kept\n";
  registry.Render(Format::kText, &out);
  EXPECT_EQ(out,
            "kept\n# TYPE b gauge\nb 1.0\n# TYPE a_total counter\na_total 1.0\n"
            "# TYPE z_second gauge\nz_second 2.0\n"
            "# TYPE a_third gauge\na_third{x=\"1\"} 3.0\n");
  std::vector<const metrics_internal::FamilyBase*> families = registry.Families();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0]->options().name, "b");
  EXPECT_EQ(families[1]->options().name, "a");
  EXPECT_EQ(families[1]->type(), MetricType::kCounter);
  std::string om;
  registry.Render(Format::kOpenMetrics, &om);
  EXPECT_THAT(om, ::testing::EndsWith("a_third{x=\"1\"} 3.0\n# EOF\n"));
  EXPECT_THAT(om, HasSubstr("# TYPE a counter\na_total 1.0\n"));
}

}  // namespace
}  // namespace modelmetrics
