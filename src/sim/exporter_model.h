// One simulated exporter process: what it counts for each request and each tick, and how it
// renders that (the same family names, labels, TYPE/HELP habits, bucket lists and float spelling
// as its upstream client library). Each exporter keeps its state in typed structs in its own file
// under exporters/ (see sim_exporter.h for the descriptor that names it); pod_model.h drives one
// through the seeded traffic.
//
// A family that upstream creates with labels exports nothing before its first observation, so
// e.g. SGLang's inter-token histogram appears only once a request streams and the routers' error
// counters only after the first error.
//
// Thread-safety: models are plain values; callers serialise access to one.
#ifndef MODELMETRICS_SIM_EXPORTER_MODEL_H_
#define MODELMETRICS_SIM_EXPORTER_MODEL_H_

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "kube/objects.h"
#include "sim/sim_variant.h"
#include "sim_histogram.h"
#include "traffic.h"

namespace modelmetrics::sim {

using deployment::RoleKind;

struct WorkerRef {
  std::string url;  // e.g. http://127.0.0.1:40123
  RoleKind role = RoleKind::kServer;
};

struct ExporterConfig {
  RoleKind role = RoleKind::kServer;  // engines: the Pod's role kind
  bool prefill_decode = false;        // the deployment pairs prefill and decode roles
  bool kv_connector = false;          // vLLM: the Pod renders --kv-transfer-config
  bool kv_pool = false;               // a KV cache pool is attached
  bool host_tier = false;             // SGLang: the Pod builds a host-memory cache tier
  bool storage_tier = false;          // SGLang: the Pod builds a storage-backend tier
  std::string model = "Qwen/Qwen2.5-0.5B-Instruct";
  std::string pool_name = "chat";  // llm-d: the inference pool
  std::vector<WorkerRef> workers;  // routers: the engine Pods they route to
  double requests_per_second = 8;  // this Pod's share of the traffic
  // Later shares: from `tick` (counted from the start of the simulation, after the warm-up) on,
  // this Pod's share is `requests_per_second`. In tick order.
  struct RateStep {
    uint64_t tick = 0;
    double requests_per_second = 0;
  };
  std::vector<RateStep> rate_steps;
  // The engine's batch: at most this many requests run at once, the rest wait (vLLM's
  // max_num_seqs, SGLang's max_running_requests); 0: no limit.
  int max_running = 0;
  uint64_t seed = 1;
  uint64_t pod_key = 0;  // distinguishes the random streams of Pods sharing a seed
  bool idle = false;
  double warm_seconds = 30;          // busy Pods' history before the simulation starts
  std::vector<SimVariant> variants;  // the deployment's upstream variants (sim_variant.h)

  bool Has(SimVariant variant) const { return HasVariant(variants, variant); }
  // This Pod is the prefill (decode) half of a P/D pair.
  bool PrefillHalf() const { return prefill_decode && role == RoleKind::kPrefill; }
  bool DecodeHalf() const { return prefill_decode && role == RoleKind::kDecode; }
  // The fraction of the KV cache `running` requests hold: with a batch limit, the engine sized its
  // cache for a full batch, so a full one holds most of it; without one, each holds a sliver.
  template <typename Random>
  double KvFraction(double running, Random& rng) const {
    if (max_running > 0) return std::min(1.0, running / max_running * rng.Between(0.75, 0.95));
    return std::min(1.0, running * rng.Between(0.004, 0.01));
  }
  // This Pod's share at `tick` ticks after the start of the simulation.
  double RateAt(uint64_t tick) const {
    double rate = requests_per_second;
    for (const RateStep& step : rate_steps) {
      if (step.tick <= tick) rate = step.requests_per_second;
    }
    return rate;
  }
};

// What one tick leaves in flight, drawn once by the Pod model for every exporter.
struct TickLoad {
  double in_flight_mean = 0;  // Little's law around the tick's busy time
  double running = 0;         // a Poisson draw around in_flight_mean
  double waiting = 0;
};

class ExporterModel {
 public:
  explicit ExporterModel(ExporterConfig config) : config_(std::move(config)) {}
  virtual ~ExporterModel() = default;
  const ExporterConfig& config() const { return config_; }
  virtual std::unique_ptr<ExporterModel> Clone() const = 0;
  // One request, as this exporter counts it.
  virtual void Record(const RequestDraw& request, Rng& rng) = 0;
  // The gauges at the end of a tick.
  virtual void SetGauges(const TickLoad& load, Rng& rng) = 0;
  // Every counter and histogram halved (the counter-reset fault).
  virtual void HalveCounters() = 0;
  // Takes `other`'s gauges (a model of the same exporter), keeps this one's counters.
  virtual void CopyGaugesFrom(const ExporterModel& other) = 0;
  // The exposition, without padding.
  virtual std::string Render() const = 0;

 protected:
  ExporterConfig config_;
};

// Halving, for the members of an exporter's counter struct (each lists its members once in its
// Halve()); a test halves every registered exporter and checks every rendered counter.
inline void Halve(double& value) { value = std::floor(value / 2); }
inline void Halve(SimHistogram& histogram) { histogram.Halve(); }
inline void Halve(std::optional<double>& value) {
  if (value) Halve(*value);
}
inline void Halve(std::vector<double>& values) {
  for (double& value : values) Halve(value);
}
template <typename Key>
void Halve(std::map<Key, double>& values) {
  for (auto& [key, value] : values) Halve(value);
}
template <typename... T>
void HalveAll(T&... values) {
  (Halve(values), ...);
}

// The common part of a model: `Counters` (counters and histograms, with a Halve() member) and
// `Gauges`, each a plain struct of the exporter's own file.
template <typename Self, typename Counters, typename Gauges>
class ExporterModelOf : public ExporterModel {
 public:
  explicit ExporterModelOf(ExporterConfig config) : ExporterModel(std::move(config)) {}

  std::unique_ptr<ExporterModel> Clone() const override {
    return std::make_unique<Self>(static_cast<const Self&>(*this));
  }
  void HalveCounters() override { k_.Halve(); }
  void CopyGaugesFrom(const ExporterModel& other) override {
    assert(typeid(other) == typeid(Self));
    g_ = static_cast<const ExporterModelOf&>(other).g_;
  }

 protected:
  Counters k_;
  Gauges g_;
};

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_EXPORTER_MODEL_H_
