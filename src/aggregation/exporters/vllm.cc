// vLLM's engine metrics (§3): request gauges, the local and external prefix caches, and
// the TTFT/TPOT/ITL histograms.
//
// Older names (vllm/v1/metrics/loggers.py): the ITL histogram was
// vllm:time_per_output_token_seconds until 0.11 renamed it (written beside the new name in 0.11,
// hidden in 0.12, removed after), and the prefix cache counters carried a gpu_ prefix before 0.9.2.
// The KV-cache usage gauge was vllm:gpu_cache_usage_perc until 0.10 named it kv_cache_usage_perc
// (the old name written beside it, then hidden from 0.11).
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "exporters/builtin.h"
#include "kube/objects.h"
#include "reasons.h"

namespace modelmetrics::deployment {
namespace {

// vLLM counts every token any KV connector loads as an external hit: the scope is the shared
// store's only when the Pod renders a connector, attaches the pool, and is not a decode half.
std::optional<std::string_view> CheckScope(std::string_view scope, const CounterPair& current,
                                           const PodView& pod) {
  if (scope != "external-store") return std::nullopt;
  if (current.queries == 0 && !RendersKvConnector(pod.pod)) return reason::kVllmNoKvConnector;
  // A connector is proven here (rendered, or its queries moved), but its hits are not the
  // store's alone.
  if (!pod.md.kv_cache || (pod.pd && pod.decode)) return reason::kVllmExternalNotStore;
  return std::nullopt;
}

}  // namespace

bool RendersKvConnector(const Pod& pod) { return PassesFlag(pod, "--kv-transfer-config"); }

const ExporterProfile exporters::kVllm{
    .name = kEngineVllm,
    .role = PodRole::kEngine,
    .gauges = {{"running", "vllm:num_requests_running", kUnitRequests},
               {"waiting", "vllm:num_requests_waiting", kUnitRequests, true}},
    // One series per engine (data-parallel rank): the Pod's value is their mean.
    .utilization = {{.key = kKvCacheUsage,
                     .family = "vllm:kv_cache_usage_perc",
                     .older = {{"vllm:gpu_cache_usage_perc", "vLLM before 0.10"}}}},
    .windows =
        {
            {"ttft", "vllm:time_to_first_token_seconds", WindowKind::kHistogram, Area::kLatency,
             kUnitSeconds},
            {"tpot", "vllm:request_time_per_output_token_seconds", WindowKind::kHistogram,
             Area::kLatency, kUnitSeconds, "", Applies::kUnlessPdPrefill},
            {.key = "itl",
             .family = "vllm:inter_token_latency_seconds",
             .unit = kUnitSeconds,
             .applies = Applies::kUnlessPdPrefill,
             .older = {{"vllm:time_per_output_token_seconds", "vLLM before 0.11"}}},
        },
    .idle_key = "ttft",
    .cache = {{.scope = "local-prefix",
               .hits = "vllm:prefix_cache_hits",
               .queries = "vllm:prefix_cache_queries",
               .source = "vllm:prefix_cache",
               .older = {{"vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_queries",
                          "vLLM before 0.9.2"}}},
              {"external-store", "vllm:external_prefix_cache_hits",
               "vllm:external_prefix_cache_queries", "vllm:external_prefix_cache"}},
    .scope_check = CheckScope,
};

}  // namespace modelmetrics::deployment
