// Every simulated exporter, built-in or added, as the faults use it: the counter-reset fault
// halves every counter and histogram it renders (a member left out of a Halve() list would keep
// its value), a copy renders as the original, and a restart starts from a fresh process.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "modelmetrics/scrape.h"
#include "sim/exporter_registry.h"
#include "sim/pod_model.h"
#include "sim/sim_exporter.h"
#include "sim/toy_sim_exporter.h"

namespace modelmetrics::sim {
namespace {

// Counter and histogram samples of an exposition: series (name and labels) -> value.
std::map<std::string, double> CounterSamples(const std::string& text) {
  std::map<std::string, std::string> types;
  std::map<std::string, double> samples;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.rfind("# TYPE ", 0) == 0) {
      const size_t space = line.find(' ', 7);
      types[line.substr(7, space - 7)] = line.substr(space + 1);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t value_at = line.rfind(' ');
    const std::string series = line.substr(0, value_at);
    std::string family = series.substr(0, series.find('{'));
    for (const char* suffix : {"_bucket", "_count", "_sum"}) {
      if (family.ends_with(suffix) && !types.contains(family)) {
        family.resize(family.size() - std::string(suffix).size());
      }
    }
    const std::string& type = types[family];
    if (type == "counter" || type == "histogram") {
      samples[series] = std::strtod(line.c_str() + value_at + 1, nullptr);
    }
  }
  return samples;
}

std::vector<const SimExporter*> AllExporters() {
  std::vector<const SimExporter*> all;
  for (const std::string& name : SimEngineNames()) all.push_back(FindSimEngine(name));
  for (const std::string& name : SimRouterNames()) all.push_back(FindSimRouter(name));
  return all;
}

// A busy Pod of `exporter` in every shape it has: P/D halves, a pool, workers of both kinds.
ExporterConfig BusyConfig(const SimExporter& exporter, RoleKind role) {
  ExporterConfig c;
  c.role = role;
  c.prefill_decode = role != RoleKind::kServer;
  c.kv_connector = c.kv_pool = c.host_tier = c.storage_tier = true;
  c.requests_per_second = 200;
  c.warm_seconds = 60;
  c.seed = 5;
  if (exporter.router) {
    c.workers = {{"http://127.0.0.1:1", c.prefill_decode ? RoleKind::kPrefill : RoleKind::kServer},
                 {"http://127.0.0.1:2", c.prefill_decode ? RoleKind::kDecode : RoleKind::kServer}};
  }
  return c;
}

void ExpectHalved(const SimExporter& exporter, RoleKind role) {
  SCOPED_TRACE(std::string(exporter.name) + " as " + std::string(deployment::RoleKindName(role)));
  PodModel model(exporter, BusyConfig(exporter, role));
  PodModel halved = model;
  EXPECT_EQ(halved.Render(), model.Render());
  halved.HalveCounters();
  const std::map<std::string, double> before = CounterSamples(model.Render());
  const std::map<std::string, double> after = CounterSamples(halved.Render());
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [series, value] : before) {
    ASSERT_TRUE(after.contains(series)) << series;
    EXPECT_LE(after.at(series), value / 2 + 1e-9) << series << " " << value;
    if (value > 0) {
      EXPECT_LT(after.at(series), value) << series;
    }
  }
}

TEST(ExporterModels, CounterResetHalvesEveryCounterOfEveryExporter) {
  RegisterSimExporter(&toy::kToySim);
  for (const SimExporter* exporter : AllExporters()) {
    if (exporter->pipeline) continue;  // its body is a pipeline's registry
    for (RoleKind role : {RoleKind::kServer, RoleKind::kPrefill, RoleKind::kDecode}) {
      ExpectHalved(*exporter, role);
    }
  }
  UnregisterSimExporter(&toy::kToySim);
}

TEST(ExporterModels, ARestartIsAFreshProcessAtTheSameTick) {
  for (const SimExporter* exporter : AllExporters()) {
    if (exporter->pipeline) continue;
    ExporterConfig config = BusyConfig(*exporter, RoleKind::kServer);
    PodModel model(*exporter, config);
    config.idle = true;  // a fresh process that served nothing
    const PodModel fresh(*exporter, config);
    const uint64_t tick = model.tick();
    model.Restart();
    EXPECT_EQ(model.tick(), tick) << exporter->name;
    EXPECT_EQ(CounterSamples(model.Render()), CounterSamples(fresh.Render())) << exporter->name;
  }
}

// What an autoscaler watches: with a batch limit, a load step fills the batch, queues the rest and
// fills the KV cache, for the engines that export those gauges; before the step they idle.
TEST(ExporterModels, ALoadStepFillsTheBatchAndQueuesTheRest) {
  struct Engine {
    const char* name;
    const char* running;
    const char* waiting;
    const char* kv;
  };
  for (const Engine& e : {Engine{"vllm", "vllm:num_requests_running", "vllm:num_requests_waiting",
                                 "vllm:kv_cache_usage_perc"},
                          Engine{"sglang", "sglang:num_running_reqs", "sglang:num_queue_reqs",
                                 "sglang:token_usage"}}) {
    SCOPED_TRACE(e.name);
    ExporterConfig c;
    c.role = RoleKind::kDecode;
    c.prefill_decode = true;
    c.requests_per_second = 1;
    c.rate_steps = {{.tick = 100, .requests_per_second = 60}};  // 10 s after the start
    c.max_running = 4;
    c.seed = 7;
    PodModel model(*FindSimEngine(e.name), c);
    const auto gauges = [&](uint64_t ticks_after_start) {
      model.AdvanceTo(model.start_tick() + ticks_after_start);
      Scrape scrape;
      std::string error;
      EXPECT_TRUE(scrape.Parse(model.Render(), {}, &error)) << error;
      return std::array<double, 3>{scrape.Sum(e.running).value_or(-1),
                                   scrape.Sum(e.waiting).value_or(-1),
                                   scrape.Sum(e.kv).value_or(-1)};
    };
    double quiet_waiting = 0;
    for (uint64_t t = 10; t < 100; t += 10) {
      const auto [running, waiting, kv] = gauges(t);
      EXPECT_LE(running, 4);
      EXPECT_LE(kv, 0.95 + 1e-9);
      quiet_waiting = std::max(quiet_waiting, waiting);
    }
    EXPECT_LE(quiet_waiting, 5);  // arrival bursts only
    double loaded_waiting = 0;
    for (uint64_t t = 110; t < 200; t += 10) {
      const auto [running, waiting, kv] = gauges(t);
      EXPECT_EQ(running, 4);  // about 39 in flight: the batch is full
      EXPECT_GE(kv, 0.75 - 1e-9);
      EXPECT_LE(kv, 0.95 + 1e-9);
      loaded_waiting = std::max(loaded_waiting, waiting);
      EXPECT_GE(waiting, 15);
    }
    EXPECT_GE(loaded_waiting, 30);
  }
}

}  // namespace
}  // namespace modelmetrics::sim
