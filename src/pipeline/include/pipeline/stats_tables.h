// The log path of the pipeline metrics: upstream's OrchestratorAggregator (§5 of
// docs/pipeline-behaviour.md) and its tables.
//
// Contract. The aggregator keeps the per-request records the orchestrator feeds it (stage events,
// per-edge transfer accumulators, per-request E2E records, stage first/last timestamps) and
// renders them with BuildAndLogSummary(): the "Overall Summary" table, then per request (sorted
// by id) the RequestE2EStats table, the one-line `[OmniTiming]` summary, the StageRequestStats
// table and the TransferEdgeStats table, in PrettyTable's default layout and upstream's cell
// formatting (§5.3). It also owns the cross-stage transfer emit (§4.13): every TX/RX record
// resolves the edge's replicas and forwards one observation per physical hop to a
// TransferEmitter (TransferMetrics), so the tables and `/metrics` share one data source.
//
// With log_stats off, nothing is retained (stage events, transfers and E2E records are dropped,
// the per-request diffusion bucket is still popped into the stage record) and
// BuildAndLogSummary() returns "" and writes nothing.
//
// Times are seconds on the caller's clock (a wall clock, as upstream's time.time()); `now`
// comes from the clock given at construction.
//
// Why a C++ copy beside the Python one (python/modelmetrics/vllm_omni/metrics/stats.py). The
// C++ observe layer (OmniMetrics) feeds it from its own hooks, so a C++ host (the pipeline
// simulator, `modelmetrics demo`, a future native orchestrator) gets upstream's log tables and
// its transfer families from one data source without an interpreter. The Python drop-in cannot
// forward to it: upstream's orchestrator mutates the aggregator's dataclass records in place and
// its tests read the dict/list attributes and call private helpers, a surface a C++ object would
// have to rebuild on every call. Both are held to the same upstream acceptance cases
// (tests/pipeline/stats_tables_test.cc, tests/python/test_stats.py).
//
// Thread-safety: every public method takes the aggregator's mutex; the emitter is called with
// it held and must not call back into the aggregator.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_STATS_TABLES_H_
#define MODELMETRICS_PIPELINE_STATS_TABLES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "pipeline/replica_resolver.h"

namespace modelmetrics::pipeline {

// A string-keyed bag of numbers (pipeline_timings, diffusion metrics). A present key with 0 is a
// measured zero; an absent key is "missing" (§4.14).
using Timings = std::map<std::string, double, std::less<>>;

// One finished stage output of one request (upstream StageRequestStats, §5.1), fields in
// upstream's table order. Zero/empty values are "not reported" in the tables.
struct StageRequestStats {
  int64_t batch_id = 0;
  int64_t batch_size = 0;
  int64_t num_tokens_in = 0;
  int64_t num_tokens_out = 0;
  double stage_gen_time_ms = 0;
  int64_t rx_transfer_bytes = 0;
  double rx_decode_time_ms = 0;
  double rx_in_flight_time_ms = 0;
  int stage_id = 0;
  std::optional<int> replica_id;
  std::string final_output_type;
  std::optional<std::string> finish_reason;
  std::string request_id;
  double postprocess_time_ms = 0;
  // Filled by the aggregator from the request's diffusion bucket (seconds keys, §4.17).
  std::optional<Timings> diffusion_metrics;
  int64_t audio_generated_frames = 0;
  int64_t audio_sample_rate = 0;
  double audio_duration_s = 0;
  int64_t image_pixels = 0;
  int64_t num_inference_steps = 0;
  double denoise_step_latency_ms = 0;  // computed by the aggregator for image outputs
  Timings pipeline_timings;            // queue_wait_ms, preprocess_ms, ar2diffusion_ms, ...
  std::string output_unit_type;        // "text", "image", "video", "audio", ...
  int64_t output_unit_count = 0;
  double serving_time_to_first_output_ms = 0;
  double image_time_to_first_output_ms = 0;
  double time_per_output_unit_ms = 0;
  double inter_output_latency_ms = 0;
  std::vector<double> inter_output_latencies_ms;
  double vllm_ttft_ms = 0;
  double vllm_tpot_ms = 0;
  double vllm_itl_ms = 0;
  std::vector<double> vllm_itls_ms;

  double tokens_per_s() const;
  double rx_mbps() const;
};

// Merges the streamed snapshots of one stage (upstream `_merge_stage_metric_event`, §5.4), in
// order: tokens, gen and postprocess ms, audio frames and duration, image pixels and output unit
// count are summed; sample rate, serving/image time-to-first-output and vLLM TTFT keep their first
// positive value; finish reason, output/final types and denoise step latency keep the last
// present (positive) value; inter-output and vLLM ITL lists are concatenated and their means
// recomputed; vLLM TPOT is token-weighted (weight max(tokens_out - 1, 1) when tpot > 0); and
// time_per_output_unit_ms = max(gen - ttfo, 0) / (count - 1) when count > 1, else 0. The first
// event's other fields (ids, stage, replica) are kept.
StageRequestStats MergeStageMetricEvents(std::span<const StageRequestStats> events);

// Per (from_stage, to_stage, request) accumulator (§4.13).
struct TransferEdgeStats {
  int from_stage = 0;
  int to_stage = 0;
  std::string request_id;
  int64_t size_bytes = 0;
  double tx_time_ms = 0;
  bool used_shm = false;
  double rx_decode_time_ms = 0;
  double in_flight_time_ms = 0;
  double total_time_ms() const { return tx_time_ms + rx_decode_time_ms + in_flight_time_ms; }
};

struct RequestE2EStats {
  std::string request_id;
  double e2e_total_ms = 0;
  int64_t e2e_total_tokens = 0;
  double transfers_total_time_ms = 0;
  int64_t transfers_total_bytes = 0;
  double e2e_tpt() const { return e2e_total_tokens > 0 ? e2e_total_ms / e2e_total_tokens : 0; }
};

// One replica edge of one physical hop.
struct TransferEdge {
  int from_stage = 0;
  int from_replica = 0;
  int to_stage = 0;
  int to_replica = 0;
  friend bool operator==(const TransferEdge&, const TransferEdge&) = default;
};

// Receives one observation per physical hop (implemented by TransferMetrics).
class TransferEmitter {
 public:
  virtual ~TransferEmitter() = default;
  virtual void ObserveTransferSize(const TransferEdge& edge, double bytes) = 0;
  virtual void ObserveTransferTxTime(const TransferEdge& edge, double seconds) = 0;
  virtual void ObserveTransferRxTime(const TransferEdge& edge, double seconds) = 0;
  virtual void ObserveTransferInFlightTime(const TransferEdge& edge, double seconds) = 0;
};

// The replica a request is bound to on a stage (the stage pool's sticky routing); nullopt when
// the stage is out of range or the request is unbound.

class OrchestratorAggregator {
 public:
  struct Options {
    int num_stages = 1;
    bool log_stats = true;
    double wall_start_ts = 0;
    std::function<double()> clock;       // seconds; default: system clock
    TransferEmitter* emitter = nullptr;  // may be null: accumulation only
    ReplicaResolver replica_resolver;    // may be empty: cache only
    std::ostream* sink = nullptr;        // where BuildAndLogSummary writes; may be null
  };
  explicit OrchestratorAggregator(Options options);

  bool log_stats() const { return options_.log_stats; }
  void SetEmitter(TransferEmitter* emitter);
  void SetReplicaResolver(ReplicaResolver resolver);

  // Sums one diffusion stage output's engine metrics into the request's bucket: the *_ms keys
  // of §4.17 become *_s (/1000); other keys are summed as given. No-op unless stage_type is
  // "diffusion".
  void AccumulateDiffusionMetrics(std::string_view stage_type, std::string_view request_id,
                                  const Timings& engine_metrics);
  // Records a finished stage output: pops the request's diffusion bucket into
  // stats.diffusion_metrics, computes denoise_step_latency_ms for image outputs with steps > 0,
  // updates the stage's last timestamp, stores the event and records the RX side (§4.13).
  // Returns the completed record (also when log_stats is off, when nothing is stored).
  StageRequestStats OnStageMetrics(StageRequestStats stats);
  // Marks a stage's first input time (the stage submit time, or now) if unset.
  void OnStageSubmit(int stage_id, std::optional<double> submit_ts = std::nullopt);
  // A forward to the next stage: first-input time of `to` if unset, then the TX record.
  void OnForward(int from_stage, int to_stage, std::string_view request_id, int64_t size_bytes,
                 double tx_ms, bool used_shm);
  void RecordTransferTx(int from_stage, int to_stage, std::string_view request_id,
                        int64_t size_bytes, double tx_ms, bool used_shm);
  void RecordTransferRx(const StageRequestStats& stats);
  // Once per request: the E2E record (§5.2). Returns false if the request was finalized before.
  bool OnFinalizeRequest(int stage_id, std::string_view request_id, double req_start_ts);

  // The §5.3 log text (blocks separated by '\n', ending with '\n'), also written to the sink;
  // "" when log_stats is off.
  std::string BuildAndLogSummary();

  // Test and introspection helpers (copies).
  std::optional<TransferEdgeStats> transfer(int from_stage, int to_stage,
                                            std::string_view request_id) const;
  std::vector<StageRequestStats> stage_events(std::string_view request_id) const;
  std::vector<RequestE2EStats> e2e_events() const;

 private:
  void RecordTransferRxLocked(const StageRequestStats& stats) REQUIRES(mu_);
  std::string OverallTableLocked() const REQUIRES(mu_);
  void AppendRequestBlocksLocked(const std::string& rid, std::vector<std::string>* blocks) const
      REQUIRES(mu_);
  TransferEdgeStats& EdgeLocked(int from_stage, int to_stage, std::string_view request_id)
      REQUIRES(mu_);
  std::optional<TransferEdge> ResolveEdgeLocked(int from_stage, int to_stage,
                                                std::string_view request_id) REQUIRES(mu_);
  double Now() const;

  Options options_;
  mutable base::Mutex mu_;
  std::map<std::string, std::vector<StageRequestStats>, std::less<>> stage_events_ GUARDED_BY(mu_);
  // Insertion order kept for the [OmniTiming] transfers list.
  std::vector<TransferEdgeStats> transfer_events_ GUARDED_BY(mu_);
  std::vector<RequestE2EStats> e2e_events_ GUARDED_BY(mu_);
  std::set<std::string, std::less<>> e2e_done_ GUARDED_BY(mu_);
  std::map<std::string, Timings, std::less<>> diffusion_buckets_ GUARDED_BY(mu_);
  std::map<std::pair<int, std::string>, int, std::less<>> replica_cache_ GUARDED_BY(mu_);
  std::vector<std::optional<double>> stage_first_ts_ GUARDED_BY(mu_);
  std::vector<std::optional<double>> stage_last_ts_ GUARDED_BY(mu_);
  double last_finish_ts_ GUARDED_BY(mu_) = 0;
  int64_t e2e_count_ = 0;
  int64_t e2e_total_tokens_ = 0;
};

// ---- Formatting helpers (upstream utils._format_table), exposed for the tests ----

// One table cell: None, bool, int, float, str or list of floats.
struct Cell {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kList };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<double> list;

  static Cell None() { return {}; }
  static Cell Bool(bool v);
  static Cell Int(int64_t v);
  static Cell Float(double v);
  static Cell Str(std::string v);
  static Cell List(std::vector<double> v);
  // Upstream's "v not in (0, 0.0, None, '')"; an empty list also counts as zero here.
  bool IsZero() const;
  std::string Format() const;  // bool True/False, int "1,234", float "1,234.568", list mean
};

std::string FormatThousands(int64_t value);              // Python f"{v:,}"
std::string FormatFloatThousands(double value, int dp);  // Python f"{v:,.{dp}f}"

// PrettyTable default layout under a "[title]" line; "[title] <empty>" when there are no rows.
// Column 0 is left-aligned, the others right-aligned (headers too).
std::string RenderTable(std::string_view title, const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows);

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_STATS_TABLES_H_
