// Every simulated exporter, built-in or added, as the faults use it: the counter-reset fault
// halves every counter and histogram it renders (a member left out of a Halve() list would keep
// its value), a copy renders as the original, and a restart starts from a fresh process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace modelmetrics::sim
