// A toy engine's simulated exporter, the whole of what the simulator needs to play a new
// exporter's Pods: its container, its counters and gauges in typed structs, and its rendering.
// Registered at run time (RegisterSimExporter) by toy_deployment_test.cc, whose aggregator reads
// these Pods through the toy's profile (deployment/toy_profile.h).
#ifndef MODELMETRICS_TESTS_SIM_TOY_SIM_EXPORTER_H_
#define MODELMETRICS_TESTS_SIM_TOY_SIM_EXPORTER_H_

#include <memory>
#include <string>

#include "sim/deployment_sim.h"
#include "sim/exporter_model.h"
#include "sim/exposition_writer.h"
#include "sim/sim_exporter.h"

namespace modelmetrics::sim::toy {

struct ToyCounters {
  double requests = 0, cache_hits = 0, cache_lookups = 0;
  SimHistogram ttft{{0.1, 0.5, 1, 5}};
  void Halve() { HalveAll(requests, cache_hits, cache_lookups, ttft); }
};

struct ToyGauges {
  double active = 0, queued = 0;
};

class ToyModel : public ExporterModelOf<ToyModel, ToyCounters, ToyGauges> {
 public:
  using ExporterModelOf::ExporterModelOf;
  void Record(const RequestDraw& q, Rng& rng) override;
  void SetGauges(const TickLoad& load, Rng& rng) override;
  std::string Render() const override;
};

inline void ToyModel::Record(const RequestDraw& q, Rng&) {
  k_.requests += 1;
  k_.cache_lookups += q.prompt;
  k_.cache_hits += q.local_hits;
  k_.ttft.Observe(q.ttft);
}

inline void ToyModel::SetGauges(const TickLoad& load, Rng&) {
  g_.active = load.running;
  g_.queued = load.waiting;
}

inline std::string ToyModel::Render() const {
  Writer w(Style::kGo, false);
  const Labels model = {{"model", config_.model}};
  w.Family("toy_active_requests", "gauge", "Requests being generated.");
  w.Sample("toy_active_requests", model, g_.active);
  w.Family("toy_queued_requests", "gauge", "Requests waiting.");
  w.Sample("toy_queued_requests", model, g_.queued);
  w.Family("toy_first_token_seconds", "histogram", "Time to first token.");
  w.Histogram("toy_first_token_seconds", model, k_.ttft);
  w.Family("toy_requests_total", "counter", "Requests served.");
  w.Sample("toy_requests_total", model, k_.requests);
  w.Family("toy_cache_hits", "counter", "Prompt tokens found in the cache.");
  w.Sample("toy_cache_hits", model, k_.cache_hits);
  w.Family("toy_cache_lookups", "counter", "Prompt tokens looked up in the cache.");
  w.Sample("toy_cache_lookups", model, k_.cache_lookups);
  return std::move(w.out());
}

inline const SimExporter kToySim{
    .name = "toyllm",
    .version = "0.1.0",
    .container =
        [](const SimPodContext& pod, SimContainer* c, ExporterConfig*) {
          c->name = "engine";
          c->image = "example.invalid/toyllm:0.1.0";
          c->args = {"--model", pod.options.model, "--port", pod.port};
        },
    .fresh = [](const ExporterConfig& config) -> std::unique_ptr<ExporterModel> {
      return std::make_unique<ToyModel>(config);
    },
    .padding = {Style::kGo, "toy_http_request_duration_seconds", false},
};

}  // namespace modelmetrics::sim::toy

#endif  // MODELMETRICS_TESTS_SIM_TOY_SIM_EXPORTER_H_
