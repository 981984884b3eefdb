// In-process engine stats rendered as upstream vLLM's per-engine `vllm:*` families, with the
// `engine` label reshaped into `stage` + `replica`: the C++ counterpart of vLLM-Omni's
// OmniPrometheusStatLogger wrap (docs/pipeline-behaviour.md §3.6, §4.8-§4.12).
//
// A C++ engine fills in the plain records below (vLLM V1's SchedulerStats / IterationStats shape)
// and hands them to EngineStatsLogger::Record with its flat engine index (EngineMap order: stages
// in order, replicas within a stage; pools {1,2,1} -> 0:(0,0) 1:(1,0) 2:(1,1) 3:(2,0)).
//
// Contract: vLLM main's PrometheusStatLogger (docs/pipeline-behaviour.md §3.6).
// - Families: the VllmEngineFamilies() rows, registered by EngineStatsLogger::Create only when
//   the registry is enabled. A disabled registry (log-stats off) registers nothing: /metrics has
//   no `vllm:*` (§4.8); Record then still validates the engine index and records nothing. As in
//   vLLM, the KV-connector families exist only for the configured connector (NIXL's
//   `vllm:nixl_*` with KvConnector::kNixl, none without one), and the token-count histograms
//   (kEngineTokenCountFamilies) take build_1_2_5 buckets up to max_model_len when it is given.
// - Create first drops every family named `vllm:*` from the registry (upstream's scoped
//   unregister, §4.10: `vllm_omni:*` families are kept), so a re-created logger takes over the
//   names; the old logger's handles stay safe and become invisible.
// - Children are bound eagerly per (stage, replica), as upstream's create_metric_per_engine does:
//   every family renders zeros at once. Extra labels bind their whole bounded set:
//   finished_reason (stop, length, abort, error, repetition), sleep_state (awake=1,
//   weights_offloaded=0, discard_all=0), source (local_compute, local_cache_hit,
//   external_kv_transfer) and reason (capacity, deferred). cache_config_info appears once
//   LogEngineInitialized is called, labelled with whatever keys it is given.
// - Relabel (§4.12): the EngineMap is static; an index outside it is an error (Record returns
//   false, sets *error, records nothing): labels are never guessed.
// - No throttle here: every Record with SchedulerStats sets the gauges and adds the counters.
//   The 1 Hz gate is the scheduler's (vLLM-Omni's make_stats(), §4.9; SchedulerStatsThrottle
//   below is that gate, for engines that produce stats).
//
// Field -> family (per (stage, replica); counters are exposed with `_total`):
//   SchedulerStats   num_running_reqs -> num_requests_running; num_waiting_reqs +
//                    num_skipped_waiting_reqs -> num_requests_waiting; num_waiting_reqs ->
//                    num_requests_waiting_by_reason{reason="capacity"}, num_skipped_waiting_reqs
//                    -> {reason="deferred"}; kv_cache_usage -> kv_cache_usage_perc;
//                    prefix_cache_stats.{queries,hits} -> prefix_cache_{queries,hits};
//                    connector_prefix_cache_stats.{queries,hits} ->
//                    external_prefix_cache_{queries,hits}; kv_connector_stats (NIXL, when
//                    configured) -> nixl_xfer_time_seconds, nixl_post_time_seconds,
//                    nixl_bytes_transferred, nixl_num_descriptors (one observation per
//                    transfer), nixl_num_failed_{transfers,notifications},
//                    nixl_num_kv_expired_reqs; perf_stats ->
//                    estimated_{flops,read_bytes,write_bytes}_per_gpu.
//   MultiModalCacheStats (upstream's separate mm_cache_stats argument) -> mm_cache_{queries,hits}.
//   IterationStats   num_preempted_reqs -> num_preemptions; num_prompt_tokens -> prompt_tokens;
//                    prompt_token_stats -> prompt_tokens_by_source{source}, prompt_tokens_cached;
//                    num_generation_tokens -> generation_tokens; computed prompt tokens (cache
//                    hits excluded) + generation tokens of the step -> iteration_tokens_total;
//                    max_num_generation_tokens_iter -> request_max_num_generation_tokens;
//                    n_params_iter -> request_params_n; time_to_first_tokens_iter ->
//                    time_to_first_token_seconds; inter_token_latencies_iter ->
//                    inter_token_latency_seconds.
//   FinishedRequestStats (per finished request) finish_reason -> request_success{finished_reason};
//                    e2e_latency, queued_time, inference_time, prefill_time, decode_time ->
//                    e2e_request_latency_seconds, request_{queue,inference,prefill,decode}_time_
//                    seconds; num_prompt_tokens, num_generation_tokens -> request_prompt_tokens,
//                    request_generation_tokens; mean_time_per_output_token ->
//                    request_time_per_output_token_seconds; max(num_prompt_tokens -
//                    max(num_cached_tokens, 0), 0) -> request_prefill_kv_computed_tokens;
//                    max_tokens_param (when set and non-zero) -> request_params_max_tokens.
// Families without a source in SchedulerStats/IterationStats:
//   engine_sleep_state{sleep_state} -> SetSleepState (upstream's record_sleep_state);
//   cache_config_info -> LogEngineInitialized (upstream's log_engine_initialized; CacheConfig
//   metrics_info() key/value strings, value 1 for every engine).
// Not rendered (vLLM creates them only when configured; a C++ engine has no source for them):
// spec decoding, LoRA, KV-cache residency, corrupted requests. With vLLM installed the Python
// package wraps vLLM's own logger instead, which has them all.
//
// Thread-safety: Record, SetSleepState and LogEngineInitialized may be called from any thread
// concurrently; the hot path is lock-free (cached handles, one atomic compare-exchange for the
// throttle). Concurrent Records for the SAME engine may set gauges in either order (last set
// wins); feed one engine from one thread when gauge order matters. The Registry must outlive the
// logger. The relabel helpers at the bottom are pure functions; EngineLabelMap is a plain value.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_ENGINE_STATS_H_
#define MODELMETRICS_PIPELINE_ENGINE_STATS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/engine_map.h"

namespace modelmetrics::pipeline {

using base::Status;

// ---- Records a C++ engine fills in (vLLM V1 shapes) ----

struct PrefixCacheStats {
  uint64_t queries = 0;  // tokens queried this step
  uint64_t hits = 0;     // tokens found cached this step
};

// NIXL KV-connector transfers of the step: one entry per transfer in each vector.
struct KvConnectorStats {
  std::vector<double> transfer_duration_s;
  std::vector<double> post_duration_s;
  std::vector<double> bytes_transferred;
  std::vector<double> num_descriptors;
  uint64_t num_failed_transfers = 0;
  uint64_t num_failed_notifications = 0;
  uint64_t num_kv_expired_reqs = 0;
};

// Analytic performance estimates of the step, per GPU.
struct PerfStats {
  double num_flops_per_gpu = 0;
  double num_read_bytes_per_gpu = 0;
  double num_write_bytes_per_gpu = 0;
};

struct SchedulerStats {
  uint64_t num_running_reqs = 0;
  uint64_t num_waiting_reqs = 0;          // waiting for capacity
  uint64_t num_skipped_waiting_reqs = 0;  // deferred (LoRA budget, KV transfer, blocked)
  double kv_cache_usage = 0;              // 0..1
  PrefixCacheStats prefix_cache_stats;
  std::optional<PrefixCacheStats> connector_prefix_cache_stats;  // external (KV connector)
  std::optional<KvConnectorStats> kv_connector_stats;
  std::optional<PerfStats> perf_stats;
};

struct MultiModalCacheStats {
  uint64_t queries = 0;
  uint64_t hits = 0;
};

enum class FinishReason : uint8_t { kStop, kLength, kAbort, kError, kRepetition };
std::string_view FinishReasonName(FinishReason reason);  // "stop", "length", ...

struct FinishedRequestStats {
  FinishReason finish_reason = FinishReason::kStop;
  double e2e_latency = 0;  // seconds
  uint64_t num_prompt_tokens = 0;
  uint64_t num_generation_tokens = 0;
  std::optional<uint64_t> max_tokens_param;
  double queued_time = 0;
  double prefill_time = 0;
  double inference_time = 0;
  double decode_time = 0;
  double mean_time_per_output_token = 0;
  int64_t num_cached_tokens = 0;  // may be the -1 "unknown" sentinel
  uint64_t num_preemptions = 0;   // times this request was preempted (vLLM #49984)
};

// Where the step's prompt tokens came from.
struct PromptTokenStats {
  uint64_t computed = 0;              // source="local_compute"
  uint64_t local_cache_hit = 0;       // source="local_cache_hit"
  uint64_t external_kv_transfer = 0;  // source="external_kv_transfer"
  uint64_t cached_tokens = 0;         // prompt_tokens_cached (local + external)
};

struct IterationStats {
  uint64_t num_generation_tokens = 0;
  uint64_t num_prompt_tokens = 0;
  uint64_t num_preempted_reqs = 0;
  PromptTokenStats prompt_token_stats;
  std::vector<FinishedRequestStats> finished_requests;
  std::vector<uint64_t> max_num_generation_tokens_iter;  // per new request
  std::vector<uint64_t> n_params_iter;                   // per new request
  std::vector<double> time_to_first_tokens_iter;         // seconds
  std::vector<double> inter_token_latencies_iter;        // seconds
};

// ---- Throttle ----

inline constexpr double kSchedulerStatsIntervalS = 1.0;

// One scheduler's make_stats() gate (§4.9), for an engine that produces stats: Admit(now) is
// false while now - last < interval, else it sets last = now and is true. `last` starts at 0.0.
// Lock-free; thread-safe. The logger itself does not throttle.
class SchedulerStatsThrottle {
 public:
  explicit SchedulerStatsThrottle(double interval_s = kSchedulerStatsIntervalS)
      : interval_s_(interval_s) {}
  bool Admit(double now_s);

 private:
  double interval_s_;
  std::atomic<double> last_s_{0.0};
};

// ---- The logger ----

// vLLM's kv_transfer_config.kv_connector, for the connector families (vLLM builds them only for
// the configured connector; this logger knows NIXL's).
enum class KvConnector : uint8_t { kNone, kNixl };

// vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to and including max_value.
std::vector<double> BuildOneTwoFiveBuckets(uint64_t max_value);

struct EngineStatsOptions {
  std::string model_name;
  EngineMap engines;  // static stage layout
  // Label values per flat index, overriding the EngineMap's decimal ids (vLLM-Omni's
  // stage_replica_map may name stages, e.g. {"thinker", "0"}); empty: the decimal ids. When
  // given, its size must equal engines.size() (Create fails otherwise).
  std::vector<std::pair<std::string, std::string>> engine_labels;
  // vLLM's model_config.max_model_len: the token-count histograms' buckets (build_1_2_5 up to
  // it). Empty: the catalog's buckets (those of a 2048-token model).
  std::optional<uint64_t> max_model_len;
  KvConnector kv_connector = KvConnector::kNone;
};

class EngineStatsLogger {
 public:
  // Registers the `vllm:*` families and binds every engine's children (see the file comment),
  // into `*out`; an error when a family cannot be registered. A disabled registry yields an inert
  // logger with nothing registered.
  static Status Create(Registry& registry, EngineStatsOptions options,
                       std::unique_ptr<EngineStatsLogger>* out);
  ~EngineStatsLogger();
  EngineStatsLogger(const EngineStatsLogger&) = delete;
  EngineStatsLogger& operator=(const EngineStatsLogger&) = delete;

  // Records one engine step. Either pointer may be null. An error when `engine_index` is not in
  // the EngineMap; nothing is recorded then.
  Status Record(size_t engine_index, const SchedulerStats* scheduler,
                const IterationStats* iteration, const MultiModalCacheStats* mm_cache = nullptr);
  // The same, addressed by (stage, replica) through the reverse map.
  Status Record(StageReplica engine, const SchedulerStats* scheduler,
                const IterationStats* iteration, const MultiModalCacheStats* mm_cache = nullptr);

  // engine_sleep_state: sleep 0 -> awake=1; sleep 1 with level 1 -> weights_offloaded=1, level 2
  // -> discard_all=1 (others 0). For every engine when `engine_index` is empty (upstream), else
  // for that engine only (false when unknown).
  bool SetSleepState(int sleep, int level, std::optional<size_t> engine_index = std::nullopt);

  // cache_config_info: one series per engine, value 1, labelled with the keys of `metrics_info`
  // (upstream's CacheConfig.metrics_info() as strings) in order, then stage and replica. A
  // later call replaces the family. An error when a key is `stage`/`replica` or not a valid
  // label name; the previous family is gone then. Calls race with each other (the last
  // one wins); call it once per engine start, as upstream does.
  Status LogEngineInitialized(std::span<const std::pair<std::string_view, std::string_view>> info);

  bool enabled() const { return enabled_; }
  const EngineMap& engines() const { return options_.engines; }

  struct EngineHandles;  // per (stage, replica) cached handles

 private:
  EngineStatsLogger(Registry& registry, EngineStatsOptions options);
  Status Register();
  Status RegisterFamilies();
  std::unique_ptr<EngineHandles> BindEngine(size_t e);
  template <EngineFamily F>
  FamilyInstrument<F> Child(size_t e) const;
  template <EngineFamily F>
  FamilyInstrument<F> ChildWith(size_t e, std::string_view extra) const;
  bool Registered(const FamilySpec& spec) const;
  std::string_view StageLabel(size_t engine) const;
  std::string_view ReplicaLabel(size_t engine) const;

  Registry& registry_;
  EngineStatsOptions options_;
  bool enabled_;
  std::array<AnyFamily, kEngineFamilyCount> families_;   // by EngineFamily; monostate: not ours
  std::vector<std::unique_ptr<EngineHandles>> handles_;  // by flat index
};

// ---- Relabel helpers: the `engine` -> `stage`, `replica` rewrite of §4.12 as pure functions,
// for wrapping any upstream-shaped family (the reference's _Relabel* classes). ----

// Flat engine index -> (stage, replica) label values (the reference's _ENGINE_INDEX_MAP). Built
// from an EngineMap (decimal ids) or filled explicitly (any label values, sparse indexes).
class EngineLabelMap {
 public:
  EngineLabelMap() = default;
  explicit EngineLabelMap(const EngineMap& map);
  void Set(size_t engine, std::string stage, std::string replica);
  void Clear() { entries_.clear(); }
  // nullptr when absent; the string form takes decimal digits only.
  const std::pair<std::string, std::string>* Find(size_t engine) const;
  const std::pair<std::string, std::string>* Find(std::string_view engine) const;

 private:
  std::map<size_t, std::pair<std::string, std::string>> entries_;
};

struct RelabeledNames {
  std::vector<std::string> names;         // `engine` replaced in place by `stage`, `replica`
  std::optional<size_t> engine_position;  // where `engine` was; empty when absent
  size_t original_size = 0;
};
RelabeledNames RewriteEngineLabelNames(std::span<const std::string_view> names);

// Positional label values, in the order of `names.names`: values already in the rewritten shape
// pass through verbatim; values in the original shape have the engine value (decimal) at
// engine_position replaced by (stage, replica), into `*out`. An error on an unknown engine or a
// count matching neither shape.
Status TranslateEngineLabelValues(const RelabeledNames& names,
                                  std::span<const std::string_view> values,
                                  const EngineLabelMap& map, std::vector<std::string>* out);

// Keyword label values (name, value): `engine=` becomes `stage=`, `replica=`; the result is in
// the order of `names.names`, into `*out`. An error on an unknown engine or a missing/extra name.
Status TranslateEngineLabelPairs(const RelabeledNames& names,
                                 std::span<const std::pair<std::string_view, std::string_view>> kv,
                                 const EngineLabelMap& map, std::vector<std::string>* out);

// Upstream's per_engine_labelvalues setter: {idx: [model_name, str(idx)]} ->
// {idx: [model_name, stage, replica]}; entries whose index the map lacks are dropped.
std::map<size_t, std::vector<std::string>> RewritePerEngineLabelValues(
    const std::map<size_t, std::vector<std::string>>& per_engine, const EngineLabelMap& map);

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_ENGINE_STATS_H_
