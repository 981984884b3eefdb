// The duplex observe layer. See duplex_metrics.h for the contract.
#include "pipeline/duplex_metrics.h"

#include "base/mutex.h"

namespace modelmetrics::pipeline {
namespace {

bool IsDuplex(const FamilySpec& spec) { return spec.group == Group::kDuplex; }

// The index of `value` in `allowed`; allowed.size() (the fallback's slot) when absent.
size_t BoundedIndex(std::string_view value, std::span<const std::string_view> allowed) {
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i] == value) return i;
  }
  return allowed.size();
}

}  // namespace

DuplexMetrics::DuplexMetrics(Registry& registry, std::string model_name,
                             std::optional<bool> log_stats)
    : log_stats_(log_stats.value_or(registry.enabled())),
      model_name_(std::move(model_name)),
      families_(registry, IsDuplex) {
  ok_ = families_.Complete();
  if (!ok_) {
    log_stats_ = false;
    return;
  }
  // Eager (bound now, zeros from the start): the sessions row's eager_values in order (active,
  // closing), the model's gauges and the affinity-loss counter.
  auto* sessions = families_.Get<OmniFamily::kDuplexSessions>();
  active_ = sessions->Bind({model_name_, kDuplexSessionStates[0]});
  closing_ = sessions->Bind({model_name_, kDuplexSessionStates[1]});
  affinity_loss_ = families_.Get<OmniFamily::kDuplexReplicaAffinityLoss>()->Bind({model_name_});
  context_tokens_ = families_.Get<OmniFamily::kDuplexContextTokens>()->Bind({model_name_});
  context_limit_ = families_.Get<OmniFamily::kDuplexContextLimitTokens>()->Bind({model_name_});
  utilization_ = families_.Get<OmniFamily::kDuplexContextUtilization>()->Bind({model_name_});
  receipts_ = families_.Get<OmniFamily::kDuplexAppendReceipts>()->Bind({model_name_});
  journal_tokens_ = families_.Get<OmniFamily::kDuplexReplayJournalTokens>()->Bind({model_name_});
  journal_bytes_ = families_.Get<OmniFamily::kDuplexReplayJournalBytes>()->Bind({model_name_});
  generation_ = families_.Get<OmniFamily::kDuplexResourceGeneration>()->Bind({model_name_});
}

template <OmniFamily F>
void DuplexMetrics::SetGauge(const Gauge& gauge, double value) const {
  if (ApplyGuard(families_.Spec<F>().guard, value)) gauge.Set(value);
}

void DuplexMetrics::SetSessions(double active, double closing) const {
  if (!log_stats_) return;
  SetGauge<OmniFamily::kDuplexSessions>(active_, active);
  SetGauge<OmniFamily::kDuplexSessions>(closing_, closing);
}

void DuplexMetrics::ObserveAppend(std::string_view outcome, double latency_s) {
  if (!log_stats_) return;
  const std::string_view label =
      Bounded(outcome, kDuplexAppendOutcomes, kDuplexAppendOutcomeFallback);
  const size_t slot = BoundedIndex(label, kDuplexAppendOutcomes);  // the fallback is in the set
  std::pair<Counter, Histogram> handles;
  {
    base::MutexLock lock(&mu_);
    auto& cached = append_[slot];
    if (!cached) {
      cached.emplace(
          families_.Get<OmniFamily::kDuplexAppendRequests>()->Labels({model_name_, label}),
          families_.Get<OmniFamily::kDuplexAppendLatencyS>()->Labels({model_name_, label}));
    }
    handles = *cached;
  }
  handles.first.Inc();
  if (ApplyGuard(families_.Spec<OmniFamily::kDuplexAppendLatencyS>().guard, latency_s)) {
    handles.second.Observe(latency_s);
  }
}

void DuplexMetrics::ObserveControlQueueWait(std::string_view operation, double queue_wait_s) {
  if (!log_stats_) return;
  if (!ApplyGuard(families_.Spec<OmniFamily::kDuplexControlQueueWaitS>().guard, queue_wait_s)) {
    return;
  }
  const size_t slot = BoundedIndex(operation, kDuplexControlOperations);
  const std::string_view label =
      Bounded(operation, kDuplexControlOperations, kDuplexControlOperationFallback);
  Histogram histogram;
  {
    base::MutexLock lock(&mu_);
    auto& cached = queue_wait_[slot];
    if (!cached) {
      cached = families_.Get<OmniFamily::kDuplexControlQueueWaitS>()->Labels({model_name_, label});
    }
    histogram = *cached;
  }
  histogram.Observe(queue_wait_s);
}

void DuplexMetrics::SetContext(double max_tokens, double max_limit_tokens, double max_utilization,
                               double max_receipts) const {
  if (!log_stats_) return;
  SetGauge<OmniFamily::kDuplexContextTokens>(context_tokens_, max_tokens);
  SetGauge<OmniFamily::kDuplexContextLimitTokens>(context_limit_, max_limit_tokens);
  SetGauge<OmniFamily::kDuplexContextUtilization>(utilization_, max_utilization);
  SetGauge<OmniFamily::kDuplexAppendReceipts>(receipts_, max_receipts);
}

void DuplexMetrics::IncReplicaAffinityLoss(double count) const {
  if (!log_stats_) return;
  if (ApplyGuard(families_.Spec<OmniFamily::kDuplexReplicaAffinityLoss>().guard, count)) {
    affinity_loss_.Add(count);
  }
}

void DuplexMetrics::SetRecoveryState(double max_journal_tokens, double max_journal_bytes,
                                     double max_resource_generation) const {
  if (!log_stats_) return;
  SetGauge<OmniFamily::kDuplexReplayJournalTokens>(journal_tokens_, max_journal_tokens);
  SetGauge<OmniFamily::kDuplexReplayJournalBytes>(journal_bytes_, max_journal_bytes);
  SetGauge<OmniFamily::kDuplexResourceGeneration>(generation_, max_resource_generation);
}

void DuplexMetrics::IncKvRecovery(std::string_view reason, std::string_view outcome, double count) {
  if (!log_stats_) return;
  if (!ApplyGuard(families_.Spec<OmniFamily::kDuplexKvRebuilds>().guard, count)) return;
  const std::string_view r =
      Bounded(reason, kDuplexKvRebuildReasons, kDuplexKvRebuildReasonFallback);
  const std::string_view o =
      Bounded(outcome, kDuplexKvRebuildOutcomes, kDuplexKvRebuildOutcomeFallback);
  const size_t slot = BoundedIndex(r, kDuplexKvRebuildReasons) * kRebuildOutcomes +
                      BoundedIndex(o, kDuplexKvRebuildOutcomes);
  Counter counter;
  {
    base::MutexLock lock(&mu_);
    auto& cached = rebuilds_[slot];
    if (!cached)
      cached = families_.Get<OmniFamily::kDuplexKvRebuilds>()->Labels({model_name_, r, o});
    counter = *cached;
  }
  counter.Add(count);
}

}  // namespace modelmetrics::pipeline
