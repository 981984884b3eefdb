// One simulated Pod's exporter process over time: its exporter's model (exporter_model.h) driven
// by the seeded traffic (traffic.h).
//
// Traffic is simulated in 100 ms ticks. Tick k's requests come from a random stream seeded by
// (seed, Pod key, k) alone, so the state after tick k is a pure function of the configuration,
// whatever the scrape timing. A busy Pod starts with `warm_seconds` of history; an idle Pod has
// served nothing (SGLang: its warmup request only) and does not advance.
//
// Thread-safety: a PodModel is a plain value; callers serialise access to one model.
#ifndef MODELMETRICS_SIM_POD_MODEL_H_
#define MODELMETRICS_SIM_POD_MODEL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "exporter_model.h"
#include "sim_exporter.h"

namespace modelmetrics::sim {

inline constexpr std::chrono::milliseconds kTrafficTick{100};

class PodModel {
 public:
  PodModel(const SimExporter& exporter, const ExporterConfig& config);
  PodModel(const PodModel& other);
  PodModel& operator=(const PodModel& other);

  const SimExporter& exporter() const { return *exporter_; }
  const ExporterConfig& config() const { return model_->config(); }
  // Ticks applied so far, warm history included.
  uint64_t tick() const { return tick_; }
  // The tick at which the simulated wall clock starts (the end of the warm history).
  uint64_t start_tick() const { return start_tick_; }

  // Applies ticks up to (excluding) `tick`; no-op when idle or already there.
  void AdvanceTo(uint64_t tick);
  // The process restarted: counters and histograms back to a fresh start, at the current tick.
  void Restart();
  // Every counter and histogram halved: counter-reset fault.
  void HalveCounters() { model_->HalveCounters(); }
  // Takes `other`'s gauges (keeps this model's counters); `other` plays the same exporter.
  void CopyGaugesFrom(const PodModel& other) { model_->CopyGaugesFrom(*other.model_); }

  // The exposition, without padding.
  std::string Render() const { return model_->Render(); }

 private:
  void Step(uint64_t tick);

  const SimExporter* exporter_;
  std::unique_ptr<ExporterModel> model_;
  uint64_t tick_ = 0;
  uint64_t start_tick_ = 0;
};

// Extra, static, realistic series (an HTTP framework's per-handler histograms) of about `bytes`
// bytes in the exporter's style, appended to a Pod's scrape so it reaches a benchmark size.
std::shared_ptr<const std::string> RenderPadding(const SimExporter& exporter, size_t bytes);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_POD_MODEL_H_
