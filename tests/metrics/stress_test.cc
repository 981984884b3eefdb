// Concurrency: threads observing shared and separate series while scrapes run. Nothing may be
// lost, every scrape must be internally consistent, and TSan must stay quiet (the test script
// runs this binary under TSan).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "metrics/thread_slot.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"

namespace modelmetrics {
namespace {

// Checks one scrape: for every histogram series, the `+Inf` bucket equals `_count` and buckets
// are cumulative (non-decreasing). Returns the number of histogram series checked.
int CheckConsistent(const std::string& text) {
  ParseOptions options;
  options.format = Format::kText;
  std::vector<ParseError> errors;
  std::vector<MetricFamily> families = ParseFamilies(text, options, &errors);
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front().ToString());
  int checked = 0;
  for (const MetricFamily& f : families) {
    if (f.type != MetricType::kHistogram) continue;
    double last_bucket = -1, inf_bucket = -1;
    for (const MetricSample& s : f.samples) {
      if (s.name.ends_with("_bucket")) {
        EXPECT_GE(s.value, last_bucket) << s.name;
        last_bucket = s.value;
        for (const auto& [k, v] : s.labels) {
          if (k == "le" && v == "+Inf") inf_bucket = s.value;
        }
      } else if (s.name.ends_with("_count")) {
        EXPECT_EQ(s.value, inf_bucket) << f.name;
        last_bucket = -1;
        ++checked;
      }
    }
  }
  return checked;
}

void Hammer(int threads, int per_thread) {
  Registry registry;
  auto* counters = registry.AddCounter({.name = "c", .labels = {"series"}});
  auto* histograms =
      registry.AddHistogram({.name = "h", .labels = {"series"}, .buckets = {0.25, 0.5, 0.75}});
  auto* gauge = registry.AddGauge({.name = "g"});
  std::atomic<bool> done{false};
  std::atomic<int> scrapes{0};
  std::thread scraper([&] {
    while (!done.load()) {
      CheckConsistent(registry.Render(Format::kText));
      scrapes.fetch_add(1);
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      // Handles made per thread, as a caller would.
      Counter shared_counter = counters->Labels({"shared"});
      Counter own_counter = counters->Labels({"own-" + std::to_string(t)});
      Histogram shared_hist = histograms->Labels({"shared"});
      Histogram own_hist = histograms->Labels({"own-" + std::to_string(t)});
      Gauge g = gauge->Labels({});
      for (int i = 0; i < per_thread; ++i) {
        shared_counter.Inc();
        own_counter.Add(uint64_t{2});
        shared_counter.Add(0.5);
        shared_hist.Observe((i % 4) * 0.25);
        own_hist.Observe(1.0);
        g.Add(1.0);
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  scraper.join();
  EXPECT_GT(scrapes.load(), 0);

  const double n = static_cast<double>(threads) * per_thread;
  EXPECT_EQ(counters->Labels({"shared"}).Value(), n * 1.5);
  Histogram::Snapshot shared = histograms->Labels({"shared"}).Read();
  EXPECT_EQ(shared.count, static_cast<uint64_t>(n));
  // (i % 4) * 0.25 hits 0, 0.25 -> le 0.25; 0.5 -> le 0.5; 0.75 -> le 0.75, in equal shares.
  const uint64_t quarter = static_cast<uint64_t>(n / 4);
  EXPECT_EQ(shared.buckets, (std::vector<uint64_t>{2 * quarter, quarter, quarter, 0}));
  EXPECT_DOUBLE_EQ(shared.sum, n / 4 * (0 + 0.25 + 0.5 + 0.75));
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(counters->Labels({"own-" + std::to_string(t)}).Value(), 2.0 * per_thread);
    EXPECT_EQ(histograms->Labels({"own-" + std::to_string(t)}).Read().buckets.back(),
              static_cast<uint64_t>(per_thread));
  }
  EXPECT_EQ(gauge->Labels({}).Value(), n);
  EXPECT_EQ(CheckConsistent(registry.Render(Format::kText)), threads + 1);
}

TEST(MetricsStress, TwoThreadsSharedAndSeparateSeriesWhileScraping) { Hammer(2, 200000); }

TEST(MetricsStress, FourThreadsSharedAndSeparateSeriesWhileScraping) { Hammer(4, 100000); }

// More live threads than owned slots: the overflow threads share one shard.
TEST(MetricsStress, MoreThreadsThanSlots) { Hammer(metrics_internal::kOwnedSlots + 5, 20000); }

// Threads that come and go hand their slots on; sums continue.
TEST(MetricsStress, SlotsAreReusedAcrossThreadGenerations) {
  Registry registry;
  Counter c = registry.AddCounter({.name = "c"})->Labels({});
  for (int generation = 0; generation < 5; ++generation) {
    std::vector<std::thread> threads;
    for (int t = 0; t < metrics_internal::kOwnedSlots; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) c.Inc();
      });
    }
    for (auto& t : threads) t.join();
  }
  EXPECT_EQ(c.Value(), 5.0 * metrics_internal::kOwnedSlots * 1000);
}

}  // namespace
}  // namespace modelmetrics
