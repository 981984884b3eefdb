// The transfer histograms. See transfer_metrics.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/transfer_metrics.h"

#include <utility>

namespace modelmetrics::pipeline {
namespace {

constexpr Group kGroups[] = {Group::kTransfer};

}  // namespace

TransferMetrics::TransferMetrics(Registry& registry, std::string model_name)
    : families_(registry, kGroups),
      recorder_(families_.table(), std::move(model_name), registry.enabled()) {}

void TransferMetrics::ObserveTransferSize(const TransferEdge& edge, double bytes) {
  recorder_.Call<observe::kObserveTransferSize>(edge.from_stage, edge.from_replica, edge.to_stage,
                                                edge.to_replica, bytes);
}
void TransferMetrics::ObserveTransferTxTime(const TransferEdge& edge, double seconds) {
  recorder_.Call<observe::kObserveTransferTxTime>(edge.from_stage, edge.from_replica, edge.to_stage,
                                                  edge.to_replica, seconds);
}
void TransferMetrics::ObserveTransferRxTime(const TransferEdge& edge, double seconds) {
  recorder_.Call<observe::kObserveTransferRxTime>(edge.from_stage, edge.from_replica, edge.to_stage,
                                                  edge.to_replica, seconds);
}
void TransferMetrics::ObserveTransferInFlightTime(const TransferEdge& edge, double seconds) {
  recorder_.Call<observe::kObserveTransferInFlightTime>(edge.from_stage, edge.from_replica,
                                                        edge.to_stage, edge.to_replica, seconds);
}

}  // namespace modelmetrics::pipeline
