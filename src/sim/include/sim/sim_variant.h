// The upstream variants the exporter simulators can write, beside their default (today's
// exporters with default flags): the cases the deployment snapshot must read right
// (docs/deployment-metrics.md, "Exporter variants"). A variant an exporter has no form of leaves
// its body unchanged.
//
//   priority        SGLang --enable-priority-scheduling: each queue gauge's total under
//                   priority="" beside one series per priority
//   all-schedulers  SGLang --enable-metrics-for-all-schedulers with two TP ranks: every
//                   scheduler series once per rank
//   non-streaming   every request non-streaming (llm-d: TTFT is the whole request, no TPOT)
//   older-names     the names older releases wrote: vLLM before 0.9.2 / 0.11 (gpu_prefix_cache_*,
//                   time_per_output_token_seconds), the llm-d router before llm_d_epp_
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_SIM_SIM_VARIANT_H_
#define MODELMETRICS_SIM_SIM_VARIANT_H_

#include <optional>
#include <string_view>
#include <vector>

namespace modelmetrics::sim {

enum class SimVariant { kPriority, kAllSchedulers, kNonStreaming, kOlderNames };

inline constexpr SimVariant kSimVariants[] = {SimVariant::kPriority, SimVariant::kAllSchedulers,
                                              SimVariant::kNonStreaming, SimVariant::kOlderNames};

std::string_view SimVariantName(SimVariant variant);
std::optional<SimVariant> ParseSimVariant(std::string_view name);

// Whether `variants` holds `variant`.
bool HasVariant(const std::vector<SimVariant>& variants, SimVariant variant);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_SIM_VARIANT_H_
