// The catalog tables. See catalog.h for the contract and sources.
#include "pipeline/catalog.h"

#include <algorithm>

namespace modelmetrics::pipeline {
namespace {

// ---- vllm_omni:* ----

constexpr FamilySpec kOmniFamilies[] = {MM_VLLM_OMNI_FAMILIES(MM_FAMILY_ROW)};

// ---- vllm:* (generated from the V1 fixture; see catalog.h) ----

constexpr std::string_view kRequestSuccessLabels[] = {"model_name", "stage", "replica",
                                                      "finished_reason"};
constexpr std::string_view kSleepStateLabels[] = {"model_name", "stage", "replica", "sleep_state"};
constexpr std::string_view kPromptSourceLabels[] = {"model_name", "stage", "replica", "source"};
// Upstream builds these from CacheConfig.metrics_info() plus `engine` (last); the key set is the
// fixture's vLLM version's (alphabetical, as exposed).
// clang-format off
constexpr std::string_view kCacheConfigInfoLabels[] = {
    "_block_size_resolved", "block_size", "cache_dtype", "calculate_kv_scales",
    "cpu_kvcache_space_bytes", "enable_prefix_caching", "gpu_memory_utilization",
    "is_attention_free", "kv_cache_memory_bytes", "kv_offloading_backend", "kv_offloading_size",
    "kv_sharing_fast_prefill", "mamba_block_size", "mamba_cache_dtype", "mamba_cache_mode",
    "mamba_page_size_padded", "mamba_ssm_cache_dtype", "num_cpu_blocks", "num_gpu_blocks",
    "num_gpu_blocks_override", "prefix_caching_hash_algo", "sliding_window",
    "user_specified_block_size", "stage", "replica"};
// clang-format on

// Upstream derives the token-count lists from max_model_len (1-2-5 series up to it; 2048 for
// the fixture's TinyLlama) and the others are fixed.
constexpr double kNixlXferTimeBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                           0.2,   0.3,  0.5,   0.75, 1,     5};
constexpr double kNixlPostTimeBuckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                           0.2,   0.3,   0.5,  0.75,  1,    5};
constexpr double kNixlBytesBuckets[] = {2048,      8192,      32768,      131072,
                                        524288,    2097152,   8388608,    33554432,
                                        134217728, 536870912, 2147483648, 8589934592};
constexpr double kNixlDescriptorsBuckets[] = {10,  20,   30,   50,   75,    100,   200,
                                              400, 1000, 2000, 4000, 10000, 20000, 50000};
constexpr double kTokenCountBuckets[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};
constexpr double kIterationTokensBuckets[] = {1,   8,    16,   32,   64,   128,  256,
                                              512, 1024, 2048, 4096, 8192, 16384};
constexpr double kRequestParamsNBuckets[] = {1, 2, 5, 10, 20};
constexpr double kRequestNumPreemptionsBuckets[] = {1, 2, 3, 4, 5, 10, 20};
constexpr double kTtftBuckets[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                   0.25,  0.5,   0.75, 1,    2.5,  5,    7.5,  10,
                                   20,    40,    80,   160,  640,  2560};
constexpr double kTokenLatencyBuckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                           0.75, 1,     2.5,  5,     7.5, 10,   20,  40,  80};
constexpr double kRequestPhaseBuckets[] = {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,  20,
                                           30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680};

constexpr FamilySpec kVllmEngineFamilies[] = {MM_VLLM_ENGINE_FAMILIES(MM_FAMILY_ROW)};

const FamilySpec* Find(std::span<const FamilySpec> table, std::string_view name) {
  auto it = std::find_if(table.begin(), table.end(),
                         [name](const FamilySpec& f) { return f.name == name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

std::string_view KindName(Kind kind) { return MetricTypeName(ToMetricType(kind), Format::kText); }

base::Status RegisterFamily(Registry& registry, const FamilySpec& spec, AnyFamily* out) {
  std::string refused;  // the registry's reason (the metrics library's API)
  const auto made = [&](auto* family) {
    if (family == nullptr) {
      *out = std::monostate{};
      return base::Status::InvalidArgument(std::move(refused));
    }
    *out = family;
    return base::Status::Ok();
  };
  switch (spec.kind) {
    case Kind::kCounter:
      return made(registry.AddCounter(OptionsOf(spec), &refused));
    case Kind::kGauge:
      return made(registry.AddGauge(OptionsOf(spec), &refused));
    case Kind::kHistogram:
      return made(registry.AddHistogram(OptionsOf(spec), &refused));
  }
  *out = std::monostate{};
  return base::Status::InvalidArgument("unknown kind");
}

std::string_view BindName(Bind bind) { return bind == Bind::kEager ? "eager" : "lazy"; }

std::string_view GroupName(Group group) {
  switch (group) {
    case Group::kPipeline:
      return "pipeline";
    case Group::kImage:
      return "image";
    case Group::kDiffusion:
      return "diffusion";
    case Group::kAudio:
      return "audio";
    case Group::kSpeech:
      return "speech";
    case Group::kTransfer:
      return "transfer";
    case Group::kRealtime:
      return "realtime";
    case Group::kDuplex:
      return "duplex";
    case Group::kEngine:
      return "engine";
  }
  return "";
}

std::string_view GuardName(Guard guard) {
  switch (guard) {
    case Guard::kNone:
      return "none";
    case Guard::kSkipNonPositive:
      return "skip <= 0";
    case Guard::kSkipNegative:
      return "skip < 0";
    case Guard::kClampNegative:
      return "clamp to >= 0";
  }
  return "";
}

std::span<const FamilySpec> OmniFamilies() { return kOmniFamilies; }

const FamilySpec& OmniSpec(OmniFamily family) { return kOmniFamilies[static_cast<size_t>(family)]; }

const FamilySpec& EngineSpec(EngineFamily family) {
  return kVllmEngineFamilies[static_cast<size_t>(family)];
}

std::span<const FamilySpec> VllmEngineFamilies() { return kVllmEngineFamilies; }

const FamilySpec* FindOmniFamily(std::string_view name) { return Find(kOmniFamilies, name); }

const FamilySpec* FindVllmEngineFamily(std::string_view name) {
  return Find(kVllmEngineFamilies, name);
}

}  // namespace modelmetrics::pipeline
