// The duplex observe layer. See duplex_metrics.h for the contract.
#include "pipeline/duplex_metrics.h"

namespace modelmetrics::pipeline {
namespace {

constexpr Group kGroups[] = {Group::kDuplex};

}  // namespace

DuplexMetrics::DuplexMetrics(Registry& registry, std::string model_name,
                             std::optional<bool> log_stats)
    : families_(registry, kGroups),
      ok_(families_.Complete()),
      log_stats_(ok_ && log_stats.value_or(registry.enabled())),
      recorder_(families_.table(), std::move(model_name), log_stats_) {}

void DuplexMetrics::SetSessions(double active, double closing) const {
  recorder_.Call<observe::kSetDuplexSessions>(active, closing);
}

void DuplexMetrics::ObserveAppend(std::string_view outcome, double latency_s) {
  recorder_.Call<observe::kObserveDuplexAppend>(outcome, latency_s);
}

void DuplexMetrics::ObserveControlQueueWait(std::string_view operation, double queue_wait_s) {
  recorder_.Call<observe::kObserveDuplexControlQueueWait>(operation, queue_wait_s);
}

void DuplexMetrics::SetContext(double max_tokens, double max_limit_tokens, double max_utilization,
                               double max_receipts) const {
  recorder_.Call<observe::kSetDuplexContext>(max_tokens, max_limit_tokens, max_utilization,
                                             max_receipts);
}

void DuplexMetrics::IncReplicaAffinityLoss(double count) const {
  recorder_.Call<observe::kIncDuplexReplicaAffinityLoss>(count);
}

void DuplexMetrics::SetRecoveryState(double max_journal_tokens, double max_journal_bytes,
                                     double max_resource_generation) const {
  recorder_.Call<observe::kSetDuplexRecoveryState>(max_journal_tokens, max_journal_bytes,
                                                   max_resource_generation);
}

void DuplexMetrics::IncKvRecovery(std::string_view reason, std::string_view outcome, double count) {
  recorder_.Call<observe::kIncDuplexKvRecovery>(reason, outcome, count);
}

}  // namespace modelmetrics::pipeline
