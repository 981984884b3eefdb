// The orchestrator's request lifecycle and log path (stats_tables.h), feeding upstream's observe
// classes for the pipeline, image, diffusion-breakdown and transfer families (§3.1, §3.3, §3.4
// of docs/pipeline-behaviour.md): PrometheusMetrics, DiffusionMetrics and TransferMetrics, which
// it owns and exposes (prometheus(), diffusion(), transfer()) for direct observations.
//
// Contract.
// - The constructor builds the three observe classes on the Registry (each registers its
//   catalog groups and binds its eager children, §4.11). One OmniMetrics per Registry (the
//   families are registered once; a second instance on the same registry gets inert handles).
// - Gating (§4.8): a disabled Registry (`--log-stats` off) gives inert handles, so eager children
//   render zeros, lazy ones never appear, and the log tables are empty.
// - The On* methods are the orchestrator/entrypoint events: request lifecycle (§4.6, §4.7,
//   §4.15), finished stage messages (§4.17, consumed once per message id), waiting snapshots and
//   dead replicas (§4.15), kv-wait timers (§4.16) and forwards (§4.13). "Missing" is
//   std::nullopt or an absent Timings key; a present 0 is observed where the reference says so
//   (§4.14).
// - Times: durations in seconds unless the name says _ms; timestamps come from Options::clock
//   (wall seconds, upstream's time.time()).
//
// Thread-safety: every method may be called from any thread. Request state, snapshots and
// kv-wait timers are under one mutex; observations go through the observe classes' lock-free
// handles.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_OMNI_METRICS_H_
#define MODELMETRICS_PIPELINE_OMNI_METRICS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/diffusion_metrics.h"
#include "pipeline/prometheus_metrics.h"
#include "pipeline/stats_tables.h"
#include "pipeline/transfer_metrics.h"

namespace modelmetrics::pipeline {

// §4.6: the reason if it is one of kFailureReasons, else "unknown" (also for nullopt and "").
std::string_view NormalizeFailureReason(std::optional<std::string_view> reason);
// §4.7: outputs[0].finish_reason when present and non-empty, else "stop".
std::string_view FinishedReasonOrDefault(std::optional<std::string_view> reason);
// §4.16: the connector config's type when non-empty, else "unknown".
std::string_view ConnectorTypeOrUnknown(std::optional<std::string_view> type);
// §4.17 extract_queue_wait_s: queue_wait_ms/1000 (when the key exists) plus the diffusion
// scheduler_queue_wait_s (when present); nullopt when neither exists.
std::optional<double> ExtractQueueWaitS(const Timings* pipeline_timings,
                                        const Timings* diffusion_metrics);

// §4.16: the AR scheduler's kv-wait start timestamps (monotonic seconds).
class KvWaitTimers {
 public:
  void Start(std::string_view request_id, double now_s);
  // Pops the start and returns max(now - start, 0); nullopt (and nothing popped) without one.
  std::optional<double> Extract(std::string_view request_id, double now_s);
  // finish_requests (abort, error, removal): drops exactly these ids' starts; idempotent.
  void Discard(std::span<const std::string> request_ids);
  size_t size() const;
  bool contains(std::string_view request_id) const;

 private:
  mutable base::Mutex mu_;
  std::map<std::string, double, std::less<>> start_ GUARDED_BY(mu_);
};

// A finished (or streamed) stage output as the entrypoint sees it (§4.17).
struct StageMessage {
  uint64_t message_id = 0;  // identity of the message; a replay carries the same id
  std::string stage_type;   // "llm", "diffusion", ...
  bool finished = true;
  bool final_stage = false;   // stage_id == the request's final stage for e2e
  double peak_memory_mb = 0;  // engine_outputs.peak_memory_mb
  Timings engine_metrics;     // engine_outputs[0].metrics (diffusion: *_ms keys)
  StageRequestStats stats;    // request_id, stage_id, replica_id, tokens, units, timings, ...
};

struct StageMessageResult {
  bool consumed = false;                // false for a replay or an unknown request
  bool finalized = false;               // this message completed the request (success path)
  std::optional<double> queue_wait_ms;  // stage_durations["queue_wait_ms"] for the client
};

class OmniMetrics {
 public:
  struct Options {
    std::string model_name;
    std::vector<int> replicas_per_stage;  // stage layout: stage i has replicas_per_stage[i]
    std::function<double()> clock;        // wall seconds; default: system clock
    ReplicaResolver replica_resolver;     // stage pools' sticky binding (§4.13)
    std::ostream* log_sink = nullptr;     // where BuildAndLogSummary writes
    // Runs at request finalize after the diffusion breakdown, when the final stage has a
    // replica (the audio finalize, §4.3). Called with the internal mutex held: it must not call
    // back into this OmniMetrics.
    std::function<void(const StageRequestStats&)> on_finalize;
  };

  OmniMetrics(Registry& registry, Options options);
  ~OmniMetrics();
  OmniMetrics(const OmniMetrics&) = delete;
  OmniMetrics& operator=(const OmniMetrics&) = delete;

  bool log_stats() const { return enabled_; }
  const std::string& model_name() const { return options_.model_name; }

  // Upstream's observe classes, as this orchestrator feeds them.
  const PrometheusMetrics& prometheus() const { return prometheus_; }
  const DiffusionMetrics& diffusion() const { return diffusion_; }
  TransferMetrics& transfer() { return transfer_; }

  // ---- Orchestrator / entrypoint events ----
  // A new request: its state (start time = now) and the pipeline gauges.
  void OnRequestAdded(std::string_view request_id);
  // Dispatch to the first stage: the orchestrator's running counter += 1.
  void OnRequestDispatched(std::string_view request_id);
  // A stage submit (the stage's first-input timestamp for the log tables).
  void OnStageSubmitted(int stage_id);
  // §4.17 per-stage emissions, once per message id; on the final stage's finished message the
  // request finalize (§4.7: success counter, e2e, tokens, queue wait, diffusion breakdown).
  StageMessageResult OnStageMessage(StageMessage message);
  // §4.6 _record_request_failure_once: no-op for unknown, succeeded or already-failed requests.
  void OnRequestFailure(std::string_view request_id, std::optional<std::string_view> reason);
  // §4.6/§4.15 _log_summary_and_cleanup: records `reason` once if the request never succeeded,
  // drops its state, decrements the running counter (clamped) and republishes the gauges.
  void OnRequestCleanup(std::string_view request_id,
                        std::optional<std::string_view> reason = "stage_error");
  // §4.15 waiting snapshots: AR scheduler_stats.num_waiting_reqs, or a diffusion output's
  // scheduler_num_waiting_reqs. Publishes the stage's sum and the pipeline gauges.
  void OnWaitingSnapshot(int stage, int replica, int64_t num_waiting);
  // §4.15 a dead replica: its snapshot is removed and the sums republished.
  void OnReplicaDead(int stage, int replica);
  // §4.16 kv-wait timers (monotonic seconds); Extracted observes kv_wait_s and returns it.
  void OnKvWaitStart(std::string_view request_id, double now_s);
  std::optional<double> OnKvWaitExtracted(std::string_view request_id,
                                          std::optional<std::string_view> connector_type,
                                          double now_s);
  void OnKvWaitDiscard(std::span<const std::string> request_ids);
  // §4.13 a forward between stages: the TX record and emit (size observed only when known).
  void OnForward(int from_stage, int to_stage, std::string_view request_id, int64_t size_bytes,
                 double tx_ms, bool used_shm);

  // §5: the log tables ("" when stats are off).
  std::string BuildAndLogSummary() { return aggregator_.BuildAndLogSummary(); }
  OrchestratorAggregator& aggregator() { return aggregator_; }

  // Introspection for tests.
  size_t num_request_states() const;
  int64_t running_counter() const;
  std::optional<int64_t> waiting_snapshot(int stage, int replica) const;
  const KvWaitTimers& kv_wait_timers() const { return kv_wait_; }

 private:
  struct RequestState {
    double start_ts = 0;
    bool e2e_done = false;
    bool failure_recorded = false;
    std::set<uint64_t> consumed_messages;
    int64_t prompt_tokens = 0;
    int64_t generation_tokens = 0;
    bool dispatched = false;
  };
  void PublishRequestGaugesLocked(size_t total) REQUIRES(mu_);
  void PublishStageWaitingLocked(int stage) REQUIRES(mu_);
  void FinalizeLocked(RequestState& state, const StageRequestStats& stats,
                      std::optional<double> queue_wait_s) REQUIRES(mu_);
  void RecordFailureLocked(RequestState& state, std::optional<std::string_view> reason)
      REQUIRES(mu_);
  double Now() const;

  Options options_;
  bool enabled_;
  PrometheusMetrics prometheus_;
  DiffusionMetrics diffusion_;
  TransferMetrics transfer_;  // the aggregator's emitter

  mutable base::Mutex mu_;
  std::map<std::string, RequestState, std::less<>> requests_ GUARDED_BY(mu_);
  std::map<std::pair<int, int>, int64_t> waiting_snapshots_ GUARDED_BY(mu_);
  int64_t running_counter_ GUARDED_BY(mu_) = 0;
  int64_t engines_waiting_ GUARDED_BY(mu_) = 0;
  KvWaitTimers kv_wait_;  // locks itself
  OrchestratorAggregator aggregator_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_OMNI_METRICS_H_
