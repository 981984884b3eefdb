// The stage pools' sticky routing as the metrics layer sees it: which replica of `stage` serves
// `request_id`, or nullopt when unknown (observations that need it are then skipped, §4.13).
//
// Thread-safety: a resolver may be called from any thread the observe layer runs on.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_REPLICA_RESOLVER_H_
#define MODELMETRICS_PIPELINE_REPLICA_RESOLVER_H_

#include <functional>
#include <optional>
#include <string_view>

namespace modelmetrics::pipeline {

using ReplicaResolver = std::function<std::optional<int>(int stage, std::string_view request_id)>;

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_REPLICA_RESOLVER_H_
