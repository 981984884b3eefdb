// Tests for the web page's history: one point per number per read, gaps for numbers a read
// lacks, and the span, point and series bounds.
#include "ui/history.h"

#include <gtest/gtest.h>

namespace modelmetrics::ui {
namespace {

using deployment::Snapshot;
using deployment::WallTime;

Snapshot At(int seconds, double running, bool with_window = true) {
  Snapshot s;
  s.timestamp = WallTime(std::chrono::seconds(1'800'000'000 + seconds));
  s.processing.push_back({"running", "vllm:num_requests_running", "engine/server", "requests",
                          running, 1, s.timestamp});
  if (with_window) {
    s.latency.push_back({.name = "ttft",
                         .pod = "p0",
                         .source = "vllm:time_to_first_token_seconds",
                         .scope = "engine/server",
                         .unit = "seconds",
                         .value = 0.25,
                         .samples = 4,
                         .window_seconds = 5});
  }
  return s;
}

const nlohmann::json* Series(const nlohmann::json& history, std::string_view name) {
  for (const auto& s : history["series"]) {
    if (s["name"] == name) return &s;
  }
  return nullptr;
}

TEST(DeploymentHistory, OnePointPerNumberPerReadAndGapsForWhatAReadLacks) {
  DeploymentHistory history;
  history.Add(At(0, 3));
  history.Add(At(5, 0, /*with_window=*/false));  // a measured zero; no TTFT this time
  history.Add(At(10, 2));
  const nlohmann::json json = history.ToJson();
  const nlohmann::json* running = Series(json, "running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ((*running)["area"], "processing");
  EXPECT_EQ((*running)["scope"], "engine/server");
  EXPECT_EQ((*running)["points"].size(), 3u);
  EXPECT_EQ((*running)["points"][1][1], 0.0);
  const nlohmann::json* ttft = Series(json, "ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ((*ttft)["pod"], "p0");
  ASSERT_EQ((*ttft)["points"].size(), 2u);  // the gap at 5 s stays a gap
  EXPECT_EQ((*ttft)["points"][0][0], 1'800'000'000.0);
  EXPECT_EQ((*ttft)["points"][1][0], 1'800'000'010.0);
  // The same read twice adds nothing.
  history.Add(At(10, 9));
  EXPECT_EQ((*Series(history.ToJson(), "running"))["points"].size(), 3u);
}

TEST(DeploymentHistory, KeepsItsSpanPointsAndSeriesBounds) {
  DeploymentHistory history({.span = std::chrono::seconds(60), .max_points = 5, .max_series = 2});
  for (int t = 0; t <= 100; t += 5) history.Add(At(t, t));
  const nlohmann::json json = history.ToJson();
  const nlohmann::json* running = Series(json, "running");
  ASSERT_NE(running, nullptr);
  ASSERT_EQ((*running)["points"].size(), 5u);
  EXPECT_EQ((*running)["points"][0][1], 80.0);
  EXPECT_EQ((*running)["points"][4][1], 100.0);
  // A third series makes room by dropping the one updated longest ago.
  Snapshot other = At(105, 1, /*with_window=*/false);
  other.queueing.push_back(
      {"waiting", "vllm:num_requests_waiting", "engine/server", "requests", 2, 1, other.timestamp});
  history.Add(other);
  EXPECT_EQ(history.series(), 2u);
  EXPECT_EQ(Series(history.ToJson(), "ttft"), nullptr);
  // Past the span, a series with no new point goes.
  history.Add(At(200, 1, false));
  EXPECT_EQ(Series(history.ToJson(), "waiting"), nullptr);
}

}  // namespace
}  // namespace modelmetrics::ui
