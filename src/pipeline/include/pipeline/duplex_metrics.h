// The observe layer of the scheduler-native full-duplex families (kDuplex in catalog.h; upstream's
// duplex methods of OmniPrometheusMetrics, pipeline-behaviour.md §3.9).
//
// Contract.
// - The constructor registers the thirteen kDuplex families with the registry (a second instance
//   on the same registry shares them) and binds the eager children for its model:
//   duplex_sessions{state="active"|"closing"}, the seven model-only gauges and the affinity-loss
//   counter render zeros from the start, even with stats off. Append requests and latency,
//   control-queue wait and KV rebuilds are bound on first use.
// - Label values are bounded as upstream bounds them (catalog.h: kDuplexAppendOutcomes,
//   kDuplexControlOperations, kDuplexKvRebuildReasons/Outcomes; anything else becomes the
//   set's fallback), so a caller cannot grow a family without bound.
// - Each value goes through its family's catalog Guard: gauges and latencies are clamped to
//   >= 0, counts <= 0 are dropped; NaN is dropped (catalog.h, ApplyGuard).
// - Gating: `log_stats` (default: the registry's) false makes every method a no-op.
//
// - Each method is its row of observe_table.h (kPrometheusMethods' duplex rows), carried out by
//   an ObserveRecorder.
//
// Thread-safety: every method may be called from any thread at once (ObserveRecorder).
#ifndef MODELMETRICS_PIPELINE_DUPLEX_METRICS_H_
#define MODELMETRICS_PIPELINE_DUPLEX_METRICS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/observe_recorder.h"

namespace modelmetrics::pipeline {

class DuplexMetrics {
 public:
  DuplexMetrics(Registry& registry, std::string model_name,
                std::optional<bool> log_stats = std::nullopt);
  DuplexMetrics(const DuplexMetrics&) = delete;
  DuplexMetrics& operator=(const DuplexMetrics&) = delete;

  bool ok() const { return ok_; }  // false when a family name was taken by another definition
  bool log_stats() const { return log_stats_; }
  const std::string& model_name() const { return recorder_.model_name(); }

  // duplex_sessions{state="active"} and {state="closing"}.
  void SetSessions(double active, double closing) const;
  // duplex_append_requests_total{outcome} += 1 and duplex_append_latency_s{outcome}.
  void ObserveAppend(std::string_view outcome, double latency_s);
  // duplex_control_queue_wait_s{operation}.
  void ObserveControlQueueWait(std::string_view operation, double queue_wait_s);
  // The four context gauges: retained tokens, limit, utilization, append receipts.
  void SetContext(double max_tokens, double max_limit_tokens, double max_utilization,
                  double max_receipts) const;
  void IncReplicaAffinityLoss(double count = 1) const;
  // The three recovery gauges: journal tokens, journal bytes, resource generation.
  void SetRecoveryState(double max_journal_tokens, double max_journal_bytes,
                        double max_resource_generation) const;
  // duplex_kv_rebuilds_total{reason, outcome} += count.
  void IncKvRecovery(std::string_view reason, std::string_view outcome, double count = 1);

 private:
  FamilySet<OmniFamily> families_;
  bool ok_ = false;
  bool log_stats_ = false;
  ObserveRecorder recorder_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_DUPLEX_METRICS_H_
