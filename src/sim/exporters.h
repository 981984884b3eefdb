// The exporters a simulated deployment's Pods imitate, and the seeded traffic model behind them.
//
// Each PodModel is one exporter process: a vLLM or SGLang engine in a role (server, prefill or
// decode), an llm-d router (EPP), a vllm-router (normal or P/D mode) or an SGLang gateway (smg).
// It keeps that process's counters, gauges and histograms and renders them as its exporter does:
// the same family names, labels, TYPE/HELP habits, bucket lists and float spelling (`1.0` and
// `8.128902e+06` from Python's prometheus_client, `1e+06` from Go's client, `1` from Rust's
// metrics exporter, blank lines between vllm-router families). A family that upstream creates
// with labels exports nothing before its first observation, so e.g. SGLang's inter-token
// histogram appears only once a request streams and the routers' error counters only after the
// first error.
//
// Traffic is simulated in 100 ms ticks. Tick k's requests come from a random stream seeded by
// (seed, Pod key, k) alone, so the state after tick k is a pure function of the configuration,
// whatever the scrape timing. A busy Pod starts with `warm_seconds` of history; an idle Pod has
// served nothing (SGLang: its warmup request only) and does not advance.
//
// Thread-safety: a PodModel is a plain value; callers serialise access to one model.
#ifndef MODELMETRICS_SIM_EXPORTERS_H_
#define MODELMETRICS_SIM_EXPORTERS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "number_spelling.h"  // PythonFloat, GoFloat, RustFloat (tests use them from here)

namespace modelmetrics::sim {

inline constexpr std::chrono::milliseconds kTrafficTick{100};

enum class ExporterKind { kVllm, kSglang, kLlmdRouter, kVllmRouter, kSglangGateway };

struct WorkerRef {
  std::string url;        // e.g. http://127.0.0.1:40123
  std::string role_kind;  // server | prefill | decode
};

struct ExporterConfig {
  ExporterKind kind = ExporterKind::kVllm;
  std::string role_kind = "server";  // engines: server | prefill | decode
  bool prefill_decode = false;       // the deployment pairs prefill and decode roles
  bool kv_connector = false;         // vLLM: the Pod renders --kv-transfer-config
  bool kv_pool = false;              // a KV cache pool is attached
  bool host_tier = false;            // SGLang: the Pod builds a host-memory cache tier
  bool storage_tier = false;         // SGLang: the Pod builds a storage-backend tier
  std::string model = "Qwen/Qwen2.5-0.5B-Instruct";
  std::string pool_name = "chat";  // llm-d: the inference pool
  std::vector<WorkerRef> workers;  // routers: the engine Pods they route to
  double requests_per_second = 8;  // this Pod's share of the traffic
  uint64_t seed = 1;
  uint64_t pod_key = 0;  // distinguishes the random streams of Pods sharing a seed
  bool idle = false;
  double warm_seconds = 30;  // busy Pods' history before the simulation starts
};

// A fixed-bucket histogram as prometheus_client keeps it (non-cumulative counts per bucket).
struct SimHistogram {
  std::vector<double> bounds;  // upper bounds, increasing, without +Inf
  std::vector<double> counts;  // bounds.size() + 1 entries; the last is the +Inf bucket
  double sum = 0;
  double count = 0;
  bool observed = false;  // a labeled histogram exports nothing before this

  SimHistogram() = default;
  explicit SimHistogram(std::vector<double> upper_bounds);
  // `n` observations of `value` (n may be > 1 for aggregated observations).
  void Observe(double value, double n = 1);
  // Halves counts and sum (floor on counts keeps buckets cumulative-consistent).
  void Halve();
};

class Rng;
struct RequestDraw;

class PodModel {
 public:
  explicit PodModel(ExporterConfig config);

  const ExporterConfig& config() const { return config_; }
  // Ticks applied so far, warm history included.
  uint64_t tick() const { return tick_; }
  // The tick at which the simulated wall clock starts (the end of the warm history).
  uint64_t start_tick() const { return start_tick_; }

  // Applies ticks up to (excluding) `tick`; no-op when idle or already there.
  void AdvanceTo(uint64_t tick);
  // The process restarted: counters and histograms back to a fresh start, at the current tick.
  void Restart();
  // Every counter and histogram halved: counter-reset fault.
  void HalveCounters();
  // Takes `other`'s gauges (keeps this model's counters).
  void CopyGaugesFrom(const PodModel& other);

  // The exposition, without padding.
  std::string Render() const;

 private:
  void Step(uint64_t tick);
  // One request, as each exporter counts it.
  void RecordVllm(const RequestDraw& q, Rng& rng);
  void RecordSglang(const RequestDraw& q, Rng& rng);
  void RecordLlmdRouter(const RequestDraw& q, Rng& rng);
  void RecordVllmRouter(const RequestDraw& q, Rng& rng);
  void RecordSglangGateway(const RequestDraw& q, Rng& rng);
  void SetGauges(Rng& rng, int requests, double busy_seconds, bool prefill, bool decode);
  void FreshProcess();

  ExporterConfig config_;
  uint64_t tick_ = 0;
  uint64_t start_tick_ = 0;
  // Counters by name (labels folded into the key where an exporter has several series),
  // gauges by name, histograms by name. The renderers know which exist for each exporter.
  std::map<std::string, double, std::less<>> counters_;
  std::map<std::string, double, std::less<>> gauges_;
  std::map<std::string, SimHistogram, std::less<>> histograms_;
};

// Extra, static, realistic series (an HTTP framework's per-handler histograms) of about `bytes`
// bytes in the exporter's style, appended to a Pod's scrape so it reaches a benchmark size.
std::shared_ptr<const std::string> RenderPadding(ExporterKind kind, size_t bytes);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_EXPORTERS_H_
