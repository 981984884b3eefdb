// Registry: registration rules, gating, removal, collectors and the rendered exposition (checked
// by the project's strict parser and, when installed, by promtool).
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"

namespace modelmetrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Registry, RendersCountersWithTotalExactlyOnce) {
  Registry registry;
  auto* with = registry.AddCounter({.name = "vllm_omni:a_total", .help = "A.", .labels = {"x"}});
  auto* without = registry.AddCounter({.name = "vllm_omni:b", .help = "B."});
  ASSERT_NE(with, nullptr);
  ASSERT_NE(without, nullptr);
  with->Labels({"1"}).Add(uint64_t{2});
  without->Labels({}).Inc();
  const std::string text = registry.Render(Format::kText);
  EXPECT_EQ(text,
            "# HELP vllm_omni:a_total A.\n"
            "# TYPE vllm_omni:a_total counter\n"
            "vllm_omni:a_total{x=\"1\"} 2.0\n"
            "# HELP vllm_omni:b_total B.\n"
            "# TYPE vllm_omni:b_total counter\n"
            "vllm_omni:b_total 1.0\n");
  EXPECT_THAT(text, Not(HasSubstr("_total_total")));
  const std::string om = registry.Render(Format::kOpenMetrics);
  EXPECT_EQ(om,
            "# HELP vllm_omni:a A.\n"
            "# TYPE vllm_omni:a counter\n"
            "vllm_omni:a_total{x=\"1\"} 2.0\n"
            "# HELP vllm_omni:b B.\n"
            "# TYPE vllm_omni:b counter\n"
            "vllm_omni:b_total 1.0\n"
            "# EOF\n");
}

// prometheus_client's `_created` series: a gauge family of its own after the family in text,
// inline after each child in OpenMetrics; gauges and childless families get none.
TEST(Registry, CreatedSeriesFollowPrometheusClientPlacement) {
  Registry registry;
  auto* c = registry.AddCounter({.name = "c", .help = "C.", .labels = {"x"}});
  auto* h = registry.AddHistogram({.name = "h", .help = "H.", .buckets = {1}});
  auto* g = registry.AddGauge({.name = "g", .help = "G."});
  registry.AddCounter({.name = "empty", .help = "E.", .labels = {"x"}});
  c->Labels({"1"}).Inc();
  h->Labels({}).Observe(0.5);
  g->Labels({}).Set(3);
  const RenderOptions created{.created_series = true};
  const std::string text = registry.Render(Format::kText, created);
  // Replace each timestamp with T so the layout can be compared whole.
  auto mask = [](std::string s) {
    std::string out;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);) {
      const size_t sp = line.rfind(' ');
      if (line.find("_created") != std::string::npos && line[0] != '#') {
        const double v = std::stod(line.substr(sp + 1));
        EXPECT_GT(v, 1.6e9) << line;  // wall seconds
        line = line.substr(0, sp) + " T";
      }
      out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(mask(text),
            "# HELP c_total C.\n# TYPE c_total counter\nc_total{x=\"1\"} 1.0\n"
            "# HELP c_created C.\n# TYPE c_created gauge\nc_created{x=\"1\"} T\n"
            "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1.0\"} 1.0\nh_bucket{le=\"+Inf\"} 1.0\n"
            "h_count 1.0\nh_sum 0.5\n"
            "# HELP h_created H.\n# TYPE h_created gauge\nh_created T\n"
            "# HELP g G.\n# TYPE g gauge\ng 3.0\n"
            "# HELP empty_total E.\n# TYPE empty_total counter\n");
  const std::string om = registry.Render(Format::kOpenMetrics, created);
  EXPECT_EQ(mask(om),
            "# HELP c C.\n# TYPE c counter\nc_total{x=\"1\"} 1.0\nc_created{x=\"1\"} T\n"
            "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1.0\"} 1.0\nh_bucket{le=\"+Inf\"} 1.0\n"
            "h_count 1.0\nh_sum 0.5\nh_created T\n"
            "# HELP g G.\n# TYPE g gauge\ng 3.0\n"
            "# HELP empty E.\n# TYPE empty counter\n# EOF\n");
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("_created")));
}

TEST(Registry, CollectReturnsChildrenAsValues) {
  Registry registry;
  auto* c = registry.AddCounter({.name = "c", .help = "C.", .labels = {"b", "a"}});
  auto* h = registry.AddHistogram({.name = "h", .help = "H.", .labels = {"x"}, .buckets = {1, 2}});
  c->Labels({"1", ""}).Add(uint64_t{3});
  c->Labels({"2", "z"}).Add(0.5);
  h->Labels({"q"}).Observe(1.5);
  h->Labels({"q"}).Observe(9);
  std::vector<const metrics_internal::FamilyBase*> families = registry.Families();
  ASSERT_EQ(families.size(), 2u);
  std::vector<CollectedChild> cs = families[0]->Collect();
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].label_values, (std::vector<std::string>{"1", ""}));
  EXPECT_EQ(cs[0].value, 3.0);
  EXPECT_EQ(cs[1].label_values, (std::vector<std::string>{"2", "z"}));
  EXPECT_EQ(cs[1].value, 0.5);
  EXPECT_GT(cs[0].created, 1.6e9);
  EXPECT_LE(cs[0].created, cs[1].created);
  std::vector<CollectedChild> hs = families[1]->Collect();
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].buckets, (std::vector<uint64_t>{0, 1, 1}));
  EXPECT_EQ(hs[0].count, 2u);
  EXPECT_EQ(hs[0].sum, 10.5);
}

TEST(Registry, LabelsRenderSortedByNameWithLeSplicedIn) {
  // prometheus_client sorts label names; `le` sorts among them (§1).
  Registry registry;
  auto* h = registry.AddHistogram(
      {.name = "vllm_omni:transfer_size_bytes",
       .help = "Size.",
       .labels = {"model_name", "from_stage", "from_replica", "to_stage", "to_replica"},
       .buckets = {1024, 1048576}});
  h->Labels({"m", "7", "0", "8", "1"}).Observe(2000);
  const std::string text = registry.Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("vllm_omni:transfer_size_bytes_bucket{from_replica=\"0\","
                              "from_stage=\"7\",le=\"1024.0\",model_name=\"m\",to_replica=\"1\","
                              "to_stage=\"8\"} 0.0\n"));
  EXPECT_THAT(text, HasSubstr("le=\"1.048576e+06\",model_name=\"m\",to_replica=\"1\","
                              "to_stage=\"8\"} 1.0\n"));
  EXPECT_THAT(text, HasSubstr("le=\"+Inf\",model_name=\"m\",to_replica=\"1\",to_stage=\"8\"} 1.0"));
  EXPECT_THAT(text, HasSubstr("vllm_omni:transfer_size_bytes_count{from_replica=\"0\","
                              "from_stage=\"7\",model_name=\"m\",to_replica=\"1\",to_stage=\"8\"} "
                              "1.0\n"));
  EXPECT_THAT(text, HasSubstr("_sum{from_replica=\"0\",from_stage=\"7\",model_name=\"m\","
                              "to_replica=\"1\",to_stage=\"8\"} 2000.0\n"));
}

TEST(Registry, LabelValuesAreEscaped) {
  Registry registry;
  registry.AddGauge({.name = "g", .labels = {"path"}})->Labels({"C:\\a \"b\"\nc"}).Set(1);
  EXPECT_THAT(registry.Render(Format::kText), HasSubstr("g{path=\"C:\\\\a \\\"b\\\"\\nc\"} 1.0"));
}

TEST(Registry, ALabelValueOverTheBoundGetsAnInertHandle) {
  Registry registry;
  Family<Counter>* c = registry.AddCounter({.name = "c", .labels = {"reason"}});
  const std::string at_bound(kMaxLabelValueBytes, 'a'), over(kMaxLabelValueBytes + 1, 'b');
  Counter kept = c->Labels({at_bound});
  Counter refused = c->Labels({over});
  EXPECT_TRUE(kept.live());
  EXPECT_FALSE(refused.live());
  kept.Inc();
  refused.Inc();  // a no-op, never a crash
  const std::string text = registry.Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("c_total{reason=\"" + at_bound + "\"} 1.0"));
  EXPECT_THAT(text, Not(HasSubstr(over)));
}

// Shards are made at a slot's first write: counts from several threads, the shared slot's racing
// writers included, all arrive, and a child one thread wrote reads the same.
TEST(Registry, ShardsMadeOnFirstWriteLoseNothing) {
  Registry registry;
  Family<Counter>* c = registry.AddCounter({.name = "c", .labels = {"k"}});
  Family<Histogram>* h = registry.AddHistogram({.name = "h", .labels = {"k"}, .buckets = {1, 2}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 24; ++t) {  // more threads than owned slots: some share kSharedSlot
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        c->Labels({std::to_string(i % 10)}).Inc();
        h->Labels({std::to_string(i % 10)}).Observe(t % 3);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double counted = 0, observed = 0;
  for (int k = 0; k < 10; ++k) {
    counted += c->Labels({std::to_string(k)}).Value();
    observed += static_cast<double>(h->Labels({std::to_string(k)}).Read().count);
  }
  EXPECT_EQ(counted, 24 * 1000);
  EXPECT_EQ(observed, 24 * 1000);
}

TEST(Registry, RejectsDuplicatesCollisionsAndBadDefinitions) {
  Registry registry;
  std::string error;
  Family<Counter>* x = registry.AddCounter({.name = "x"});
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(registry.AddCounter({.name = "x"}), x);        // identical definition: shared
  EXPECT_EQ(registry.AddCounter({.name = "x_total"}), x);  // the same counter, spelled with _total
  EXPECT_EQ(registry.AddCounter({.name = "x", .help = "other"}, &error), nullptr);
  EXPECT_EQ(error, "x: name collides with a registered family");
  EXPECT_EQ(registry.AddGauge({.name = "x"}, &error), nullptr);
  EXPECT_EQ(registry.AddGauge({.name = "x_total"}, &error), nullptr);  // counter x renders it
  ASSERT_NE(registry.AddHistogram({.name = "h"}), nullptr);
  EXPECT_EQ(registry.AddGauge({.name = "h_bucket"}, &error), nullptr);
  EXPECT_EQ(registry.AddGauge({.name = "9bad"}, &error), nullptr);
  EXPECT_EQ(error, "9bad: invalid metric name");
  EXPECT_EQ(registry.AddGauge({.name = "g", .labels = {"a", "a"}}, &error), nullptr);
  EXPECT_EQ(error, "g: repeated label name a");
  EXPECT_EQ(registry.AddGauge({.name = "g", .labels = {"__x"}}, &error), nullptr);
  EXPECT_EQ(registry.AddHistogram({.name = "g", .labels = {"le"}}, &error), nullptr);
  EXPECT_EQ(registry.AddHistogram({.name = "g", .buckets = {1, 1}}, &error), nullptr);
  EXPECT_EQ(error, "g: buckets must be finite and strictly increasing");
  EXPECT_EQ(registry.AddHistogram({.name = "g", .buckets = {1, INFINITY}}, &error), nullptr);
  EXPECT_EQ(registry.AddGauge({.name = "g", .buckets = {1}}, &error), nullptr);
  EXPECT_EQ(registry.AddGauge({.name = "g_seconds", .unit = "bytes"}, &error), nullptr);
  EXPECT_NE(registry.AddGauge({.name = "g"}, &error), nullptr);  // the failures reserved nothing
}

TEST(Registry, GatedOffEagerChildrenRenderZeroLazyOnesNeverAppear) {
  Registry registry(RegistryOptions{.enabled = false});
  auto* running = registry.AddGauge({.name = "vllm_omni:running", .labels = {"model_name"}});
  auto* success = registry.AddCounter({.name = "vllm_omni:ok", .labels = {"model_name", "r"}});
  Gauge eager = running->Bind({"m"});
  Counter lazy = success->Labels({"m", "stop"});
  eager.Set(5);
  lazy.Inc();
  EXPECT_FALSE(eager.live());
  EXPECT_FALSE(lazy.live());
  EXPECT_FALSE(running->Labels({"m"}).live());  // the eager child exists, but handles are inert
  const std::string text = registry.Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("vllm_omni:running{model_name=\"m\"} 0.0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vllm_omni:ok_total counter\n"));
  EXPECT_THAT(text, Not(HasSubstr("vllm_omni:ok_total{")));
}

TEST(Registry, RemovePrefixKeepsOmniFamiliesAndStaleHandlesStaySafe) {
  Registry registry;
  Counter engine = registry.AddCounter({.name = "vllm:prompt_tokens"})->Labels({});
  registry.AddGauge({.name = "vllm_omni:running"})->Labels({}).Set(1);
  engine.Inc();
  EXPECT_EQ(registry.RemovePrefix("vllm:"), 1u);
  engine.Inc();  // stale handle: still safe, no longer rendered
  const std::string text = registry.Render(Format::kText);
  EXPECT_THAT(text, Not(HasSubstr("vllm:prompt_tokens")));
  EXPECT_THAT(text, HasSubstr("vllm_omni:running 1.0"));
  EXPECT_NE(registry.AddCounter({.name = "vllm:prompt_tokens"}), nullptr);  // name free again
}

TEST(Registry, FamilyRemoveDropsOneChild) {
  Registry registry;
  auto* waiting = registry.AddGauge({.name = "w", .labels = {"replica"}});
  Gauge dead = waiting->Labels({"0"});
  waiting->Labels({"1"}).Set(3);
  dead.Set(7);
  EXPECT_TRUE(waiting->Remove({"0"}));
  EXPECT_FALSE(waiting->Remove({"0"}));
  dead.Set(9);  // safe, invisible
  const std::string text = registry.Render(Format::kText);
  EXPECT_THAT(text, Not(HasSubstr("replica=\"0\"")));
  EXPECT_THAT(text, HasSubstr("w{replica=\"1\"} 3.0"));
  EXPECT_EQ(waiting->Labels({"0"}).Value(), 0);  // a new series
}

TEST(Registry, ChildrenTakeAGivenCreatedTime) {
  Registry registry;
  auto* family = registry.AddGauge({.name = "g", .labels = {"k"}});
  const std::string_view a[] = {"a"};
  Gauge g = family->Labels(std::span<const std::string_view>(a), 1234.5);
  g.Set(3);
  std::vector<CollectedChild> children = family->Collect();
  ASSERT_EQ(children.size(), 1u);
  EXPECT_EQ(children[0].created, 1234.5);
  EXPECT_TRUE(family->Remove(std::span<const std::string_view>(a)));
  g.Set(4);  // a removed child's handle stays safe
  Gauge again = family->Labels({"a"});
  EXPECT_EQ(again.Value(), 0);  // a fresh child, as prometheus_client makes after remove()
}

TEST(Registry, CollectorsRenderAfterFamilies) {
  Registry registry;
  registry.AddGauge({.name = "a"})->Labels({}).Set(1);
  registry.AddCollector("extra", [](ExpositionWriter& w) {
    w.BeginFamily("vllm:external", MetricType::kGauge, "From elsewhere.", true);
    w.SampleWithLabelText("vllm:external", "stage=\"1\",replica=\"0\"", 4);
  });
  EXPECT_EQ(registry.Render(Format::kText),
            "# TYPE a gauge\na 1.0\n"
            "# HELP vllm:external From elsewhere.\n# TYPE vllm:external gauge\n"
            "vllm:external{stage=\"1\",replica=\"0\"} 4.0\n");
}

// A registry with every instrument kind, checked by the strict parser in both formats.
TEST(Registry, RenderedExpositionParsesStrictlyInBothFormats) {
  Registry registry;
  auto* c = registry.AddCounter({.name = "vllm_omni:requests", .help = "R.", .labels = {"m"}});
  auto* g = registry.AddGauge({.name = "vllm_omni:waiting", .help = "W \\ \n.", .labels = {"m"}});
  auto* h = registry.AddHistogram({.name = "vllm_omni:latency_seconds",
                                   .help = "L.",
                                   .labels = {"stage", "m"},
                                   .buckets = {0.05, 0.1, 0.25},
                                   .unit = "seconds"});
  c->Labels({"a"}).Add(3.5);
  g->Labels({"a"}).Set(-2);
  for (double v : {0.01, 0.07, 0.2, 9.0}) h->Labels({"0", "a"}).Observe(v);
  for (Format format : {Format::kText, Format::kOpenMetrics}) {
    const std::string text = registry.Render(format);
    ParseOptions options;
    options.format = format;
    std::vector<ParseError> errors;
    std::vector<MetricFamily> families = ParseFamilies(text, options, &errors);
    ASSERT_TRUE(errors.empty()) << errors.front().ToString() << "\n" << text;
    ASSERT_EQ(families.size(), 3u);
    EXPECT_EQ(families[0].type, MetricType::kCounter);
    EXPECT_EQ(families[0].samples.at(0).value, 3.5);
    EXPECT_EQ(families[1].help, "W \\ \n.");
    const MetricFamily& hist = families[2];
    EXPECT_EQ(hist.type, MetricType::kHistogram);
    ASSERT_EQ(hist.samples.size(), 6u);   // 3 bounds + Inf, count, sum
    EXPECT_EQ(hist.samples[3].value, 4);  // +Inf
    EXPECT_EQ(hist.samples[4].name, "vllm_omni:latency_seconds_count");
    EXPECT_EQ(hist.samples[4].value, 4);
    EXPECT_DOUBLE_EQ(hist.samples[5].value, 9.28);
    if (format == Format::kOpenMetrics) {
      EXPECT_EQ(hist.unit, "seconds");
    }
  }
}

TEST(Registry, PromtoolAcceptsTheExposition) {
  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_SKIP() << "promtool not installed";
  Registry registry;
  registry.AddCounter({.name = "vllm_omni:requests", .help = "Requests.", .labels = {"m"}})
      ->Labels({"a"})
      .Inc();
  registry
      .AddHistogram({.name = "vllm_omni:e2e_request_latency_s",
                     .help = "Latency.",
                     .labels = {"model_name"},
                     .buckets = {0.05, 0.1}})
      ->Labels({"a"})
      .Observe(0.07);
  const std::string path =
      (std::filesystem::temp_directory_path() / "mm_registry_promtool.prom").string();
  std::ofstream(path) << registry.Render(Format::kText);
  const std::string out_path = path + ".out";
  const int status =
      std::system(("promtool check metrics < " + path + " > " + out_path + " 2>&1").c_str());
  std::ifstream out(out_path);
  const std::string output((std::istreambuf_iterator<char>(out)), {});
  // promtool 2.42 lints every name with ':' (all vLLM names) and `_s` units (the spec's names);
  // anything else it prints is a real finding.
  EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3))
      << output;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(line.ends_with("metric names should not contain ':'") ||
                line.ends_with("metric names should not contain abbreviated units"))
        << line;
  }
  std::remove(path.c_str());
  std::remove(out_path.c_str());
}

}  // namespace
}  // namespace modelmetrics
