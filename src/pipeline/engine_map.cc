// The flat engine numbering. See engine_map.h.
#include "pipeline/engine_map.h"

namespace modelmetrics::pipeline {

EngineMap::EngineMap(std::span<const uint32_t> replicas_per_stage) {
  stage_first_.reserve(replicas_per_stage.size());
  stage_replicas_.assign(replicas_per_stage.begin(), replicas_per_stage.end());
  for (uint32_t stage = 0; stage < replicas_per_stage.size(); ++stage) {
    stage_first_.push_back(entries_.size());
    for (uint32_t replica = 0; replica < replicas_per_stage[stage]; ++replica) {
      entries_.push_back({stage, replica});
      stage_labels_.push_back(std::to_string(stage));
      replica_labels_.push_back(std::to_string(replica));
    }
  }
}

std::optional<StageReplica> EngineMap::At(size_t flat) const {
  if (flat >= entries_.size()) return std::nullopt;
  return entries_[flat];
}

std::optional<size_t> EngineMap::FlatIndex(StageReplica engine) const {
  if (engine.stage >= stage_replicas_.size()) return std::nullopt;
  if (engine.replica >= stage_replicas_[engine.stage]) return std::nullopt;
  return stage_first_[engine.stage] + engine.replica;
}

std::optional<size_t> EngineMap::FromEngineLabel(std::string_view value) const {
  if (value.empty()) return std::nullopt;
  size_t index = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + static_cast<size_t>(c - '0');
    if (index >= entries_.size()) return std::nullopt;  // also stops any overflow
  }
  return index;
}

}  // namespace modelmetrics::pipeline
