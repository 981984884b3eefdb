// Upstream's OmniTransferMetrics (§3.4 of docs/pipeline-behaviour.md): the cross-stage transfer
// histograms by edge (from_stage, from_replica, to_stage, to_replica), one observation per
// physical hop. The log path's OrchestratorAggregator (stats_tables.h) emits into it.
//
// Contract.
// - The constructor registers the kTransfer catalog families (lazy). One TransferMetrics per
//   registry.
// - Each method is its row of observe_table.h (kTransferMethods), carried out by an
//   ObserveRecorder. Gated by the registry (a deliberate difference: upstream's transfer class
//   has no gate).
//
// Thread-safety: every method may be called from any thread at once (ObserveRecorder).
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_TRANSFER_METRICS_H_
#define MODELMETRICS_PIPELINE_TRANSFER_METRICS_H_

#include <string>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/observe_recorder.h"
#include "pipeline/stats_tables.h"

namespace modelmetrics::pipeline {

class TransferMetrics final : public TransferEmitter {
 public:
  TransferMetrics(Registry& registry, std::string model_name);
  TransferMetrics(const TransferMetrics&) = delete;
  TransferMetrics& operator=(const TransferMetrics&) = delete;

  bool ok() const { return families_.Complete(); }

  void ObserveTransferSize(const TransferEdge& edge, double bytes) override;
  void ObserveTransferTxTime(const TransferEdge& edge, double seconds) override;
  void ObserveTransferRxTime(const TransferEdge& edge, double seconds) override;
  void ObserveTransferInFlightTime(const TransferEdge& edge, double seconds) override;

 private:
  FamilySet<OmniFamily> families_;
  ObserveRecorder recorder_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_TRANSFER_METRICS_H_
