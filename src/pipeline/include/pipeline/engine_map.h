// Flat engine index <-> (stage, replica), as vLLM-Omni's orchestrator numbers engines
// (docs/pipeline-behaviour.md §4.12): stages in order, replicas within a stage,
// from 0. Pools {1, 2, 1} give 0:(0,0) 1:(1,0) 2:(1,1) 3:(2,0). Label values are the decimal ids
// ("1"). The map is static once built.
//
// Thread-safety: immutable after construction; safe to share between threads.
#ifndef MODELMETRICS_PIPELINE_ENGINE_MAP_H_
#define MODELMETRICS_PIPELINE_ENGINE_MAP_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace modelmetrics::pipeline {

struct StageReplica {
  uint32_t stage = 0;
  uint32_t replica = 0;
  friend bool operator==(const StageReplica&, const StageReplica&) = default;
};

// Flat engine index <-> (stage, replica), as the reference's orchestrator numbers engines.
class EngineMap {
 public:
  EngineMap() = default;  // no engines
  // replicas_per_stage[s] replicas for stage s; a stage with 0 replicas takes no index.
  explicit EngineMap(std::span<const uint32_t> replicas_per_stage);
  EngineMap(std::initializer_list<uint32_t> replicas_per_stage)
      : EngineMap(
            std::span<const uint32_t>(replicas_per_stage.begin(), replicas_per_stage.size())) {}

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<StageReplica>& entries() const { return entries_; }

  // (stage, replica) of flat index `flat`; nullopt when out of range.
  std::optional<StageReplica> At(size_t flat) const;
  // The flat index of (stage, replica); nullopt when the map has no such engine.
  std::optional<size_t> FlatIndex(StageReplica engine) const;
  // The flat index an `engine` label value names: decimal digits only (leading zeros allowed,
  // as Python's int()), within range; nullopt otherwise (the reference raises KeyError).
  std::optional<size_t> FromEngineLabel(std::string_view value) const;
  // Decimal label values of flat index `flat` (< size()).
  std::string_view StageLabel(size_t flat) const { return stage_labels_[flat]; }
  std::string_view ReplicaLabel(size_t flat) const { return replica_labels_[flat]; }

 private:
  std::vector<StageReplica> entries_;
  std::vector<size_t> stage_first_;       // flat index of each stage's replica 0
  std::vector<uint32_t> stage_replicas_;  // replicas of each stage
  std::vector<std::string> stage_labels_;
  std::vector<std::string> replica_labels_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_ENGINE_MAP_H_
