// See pod_model.h.
#include "pod_model.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "exposition_writer.h"

namespace modelmetrics::sim {

PodModel::PodModel(const SimExporter& exporter, const ExporterConfig& config)
    : exporter_(&exporter), model_(exporter.fresh(config)) {
  if (!config.idle) {
    start_tick_ = static_cast<uint64_t>(config.warm_seconds * 1000 / kTrafficTick.count());
    AdvanceTo(start_tick_);
  }
}

PodModel::PodModel(const PodModel& other)
    : exporter_(other.exporter_),
      model_(other.model_->Clone()),
      tick_(other.tick_),
      start_tick_(other.start_tick_) {}

PodModel& PodModel::operator=(const PodModel& other) {
  if (this != &other) {
    exporter_ = other.exporter_;
    model_ = other.model_->Clone();
    tick_ = other.tick_;
    start_tick_ = other.start_tick_;
  }
  return *this;
}

void PodModel::AdvanceTo(uint64_t tick) {
  if (config().idle) return;
  for (; tick_ < tick; ++tick_) Step(tick_);
}

void PodModel::Restart() { model_ = exporter_->fresh(config()); }

void PodModel::Step(uint64_t tick) {
  const ExporterConfig& config = model_->config();
  Rng rng(config.seed, config.pod_key, tick);
  const double dt = kTrafficTick.count() / 1000.0;
  const double rate = config.RateAt(tick > start_tick_ ? tick - start_tick_ : 0);
  const int requests = rng.Poisson(rate * dt);
  const bool prefill = config.PrefillHalf();
  double busy_seconds = 0;  // request-seconds started this tick, for the running gauges
  for (int r = 0; r < requests; ++r) {
    RequestDraw q = DrawRequest(rng, prefill, config.DecodeHalf());
    if (config.Has(SimVariant::kNonStreaming)) q.streaming = false;
    busy_seconds += q.e2e;
    model_->Record(q, rng);
  }
  // What is in flight at the end of the tick: Little's law around the busy time.
  TickLoad load;
  const double mean_busy = requests > 0 ? busy_seconds / requests : 0.6;
  load.in_flight_mean = rate * (prefill ? 0.03 : mean_busy);
  const double in_flight = rng.Poisson(load.in_flight_mean);
  // A full batch leaves the rest waiting; an arrival burst can wait a moment in any case.
  load.running =
      config.max_running > 0 ? std::min<double>(in_flight, config.max_running) : in_flight;
  load.waiting = in_flight - load.running + (rng.Chance(0.1) ? rng.Poisson(1.0) : 0);
  model_->SetGauges(load, rng);
}

std::shared_ptr<const std::string> RenderPadding(const SimExporter& exporter, size_t bytes) {
  auto out = std::make_shared<std::string>();
  if (bytes == 0) return out;
  // One handler per served LoRA adapter path.
  const PaddingStyle& padding = exporter.padding;
  const std::string family(padding.family);
  Writer w(padding.style, padding.blank_between_families);
  w.Family(family, "histogram",
           "Latency with many buckets by handler. Made for more accurate percentile "
           "calculations.");
  SimHistogram h({0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0,  1.5, 2.0,
                  2.5,  3.0,   3.5,  4.0,   4.5, 5.0,  7.5, 10.0, 30.0, 60.0});
  Rng rng(0x5eed, 0, 0);
  for (int adapter = 0; w.out().size() < bytes; ++adapter) {
    for (int i = 0; i < 20; ++i) h.Observe(rng.LogNormal(0.4, 0.8), 1 + rng.Pick(50));
    char handler[64];
    std::snprintf(handler, sizeof(handler), "/v1/adapters/lora-%04d/chat/completions", adapter);
    w.Histogram(family, {{"handler", handler}, {"method", "POST"}}, h);
  }
  *out = std::move(w.out());
  return out;
}

}  // namespace modelmetrics::sim
