// Engine stats -> upstream `vllm:*` families; see engine_stats.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/engine_stats.h"

#include <algorithm>
#include <array>

#include "pipeline/catalog.h"

namespace modelmetrics::pipeline {

namespace {

constexpr std::string_view kStageLabel = "stage";
constexpr std::string_view kReplicaLabel = "replica";
constexpr std::string_view kCacheConfigInfo = FamilyName(EngineFamily::kCacheConfigInfo);

std::string UnknownEngine(size_t index, size_t size) {
  return "unknown engine index " + std::to_string(index) + " (the stage layout has " +
         std::to_string(size) + " engines)";
}

}  // namespace

std::string_view FinishReasonName(FinishReason reason) {
  return kEngineFinishedReasons[static_cast<size_t>(reason)];
}

bool SchedulerStatsThrottle::Admit(double now_s) {
  double last = last_s_.load(std::memory_order_relaxed);
  while (true) {
    if (now_s - last < interval_s_) return false;
    if (last_s_.compare_exchange_weak(last, now_s, std::memory_order_relaxed)) return true;
  }
}

// Per (stage, replica): every handle Record touches, bound once.
struct EngineStatsLogger::EngineHandles {
  // Scheduler stats.
  Gauge running, waiting, kv_cache_usage;
  std::array<Gauge, kEngineWaitingReasons.size()> waiting_by_reason;
  Counter prefix_queries, prefix_hits, external_prefix_queries, external_prefix_hits;
  Histogram nixl_xfer_time, nixl_post_time, nixl_bytes, nixl_descriptors;
  Counter nixl_failed_transfers, nixl_failed_notifications, nixl_kv_expired;
  Counter flops, read_bytes, write_bytes;
  Counter mm_queries, mm_hits;
  // Iteration stats.
  Counter preemptions, prompt_tokens, prompt_cached, generation_tokens;
  std::array<Counter, kEnginePromptTokenSources.size()> prompt_by_source;
  std::array<Counter, kEngineFinishedReasons.size()> request_success;
  Histogram iteration_tokens, max_generation_tokens, params_n, params_max_tokens;
  Histogram ttft, inter_token, time_per_output_token;
  Histogram e2e, queue_time, inference_time, prefill_time, decode_time, num_preemptions;
  Histogram request_prompt_tokens, request_generation_tokens, prefill_kv_computed;
  std::array<Gauge, kEngineSleepStates.size()> sleep_state;
};

EngineStatsLogger::EngineStatsLogger(Registry& registry, EngineStatsOptions options)
    : registry_(registry), options_(std::move(options)), enabled_(registry.enabled()) {}

EngineStatsLogger::~EngineStatsLogger() = default;

std::string_view EngineStatsLogger::StageLabel(size_t engine) const {
  return options_.engine_labels.empty() ? options_.engines.StageLabel(engine)
                                        : std::string_view(options_.engine_labels[engine].first);
}

std::string_view EngineStatsLogger::ReplicaLabel(size_t engine) const {
  return options_.engine_labels.empty() ? options_.engines.ReplicaLabel(engine)
                                        : std::string_view(options_.engine_labels[engine].second);
}

std::vector<double> BuildOneTwoFiveBuckets(uint64_t max_value) {
  std::vector<double> buckets;
  for (uint64_t scale = 1;; scale *= 10) {
    for (uint64_t mantissa : {1, 2, 5}) {
      if (mantissa * scale > max_value) return buckets;
      buckets.push_back(static_cast<double>(mantissa * scale));
    }
    if (scale > UINT64_MAX / 100) return buckets;  // the next decade would overflow
  }
}

bool EngineStatsLogger::Registered(const FamilySpec& spec) const {
  if (spec.name == kCacheConfigInfo) return false;  // by LogEngineInitialized, with its keys
  if (spec.name.starts_with(kEngineNixlPrefix)) return options_.kv_connector == KvConnector::kNixl;
  return true;
}

Status EngineStatsLogger::Create(Registry& registry, EngineStatsOptions options,
                                 std::unique_ptr<EngineStatsLogger>* out) {
  if (!options.engine_labels.empty() && options.engine_labels.size() != options.engines.size()) {
    return Status::InvalidArgument("engine_labels has " +
                                   std::to_string(options.engine_labels.size()) + " entries for " +
                                   std::to_string(options.engines.size()) + " engines");
  }
  std::unique_ptr<EngineStatsLogger> logger(new EngineStatsLogger(registry, std::move(options)));
  if (logger->enabled_) {  // log-stats off: nothing registered (§4.8)
    if (Status registered = logger->Register(); !registered.ok()) return registered;
  }
  *out = std::move(logger);
  return Status::Ok();
}

Status EngineStatsLogger::Register() {
  // Upstream's constructor unregisters the previous logger's families; scoped to `vllm:` (§4.10).
  registry_.RemovePrefix(kEnginePrefix);
  if (Status registered = RegisterFamilies(); !registered.ok()) return registered;
  handles_.reserve(options_.engines.size());
  for (size_t e = 0; e < options_.engines.size(); ++e) handles_.push_back(BindEngine(e));
  return Status::Ok();
}

// The `vllm:*` families this logger exports, token-count buckets from max_model_len.
Status EngineStatsLogger::RegisterFamilies() {
  for (size_t i = 0; i < kEngineFamilyCount; ++i) {
    const FamilySpec& spec = EngineSpec(static_cast<EngineFamily>(i));
    if (!Registered(spec)) continue;
    FamilySpec row = spec;
    std::vector<double> buckets;
    if (options_.max_model_len &&
        std::find(kEngineTokenCountFamilies.begin(), kEngineTokenCountFamilies.end(), spec.name) !=
            kEngineTokenCountFamilies.end()) {
      buckets = BuildOneTwoFiveBuckets(*options_.max_model_len);
      row.buckets = buckets;
    }
    if (Status registered = RegisterFamily(registry_, row, &families_[i]); !registered.ok()) {
      return registered.Prefixed("cannot register " + std::string(spec.name) + ": ");
    }
  }
  return Status::Ok();
}

// Engine `e`'s child of family F: (model, stage, replica), and an extra label value.
template <EngineFamily F>
FamilyInstrument<F> EngineStatsLogger::Child(size_t e) const {
  return FamilyOf<F>(families_[static_cast<size_t>(F)])
      ->Bind({options_.model_name, StageLabel(e), ReplicaLabel(e)});
}
template <EngineFamily F>
FamilyInstrument<F> EngineStatsLogger::ChildWith(size_t e, std::string_view extra) const {
  return FamilyOf<F>(families_[static_cast<size_t>(F)])
      ->Bind({options_.model_name, StageLabel(e), ReplicaLabel(e), extra});
}

// Engine `e`'s children of every family, in the fixture's order.
std::unique_ptr<EngineStatsLogger::EngineHandles> EngineStatsLogger::BindEngine(size_t e) {
  auto h = std::make_unique<EngineHandles>();
  // Fixture order.
  if (options_.kv_connector == KvConnector::kNixl) {
    h->nixl_xfer_time = Child<EngineFamily::kNixlXferTimeSeconds>(e);
    h->nixl_post_time = Child<EngineFamily::kNixlPostTimeSeconds>(e);
    h->nixl_bytes = Child<EngineFamily::kNixlBytesTransferred>(e);
    h->nixl_descriptors = Child<EngineFamily::kNixlNumDescriptors>(e);
    h->nixl_failed_transfers = Child<EngineFamily::kNixlNumFailedTransfers>(e);
    h->nixl_failed_notifications = Child<EngineFamily::kNixlNumFailedNotifications>(e);
    h->nixl_kv_expired = Child<EngineFamily::kNixlNumKvExpiredReqs>(e);
  }
  h->flops = Child<EngineFamily::kEstimatedFlopsPerGpu>(e);
  h->read_bytes = Child<EngineFamily::kEstimatedReadBytesPerGpu>(e);
  h->write_bytes = Child<EngineFamily::kEstimatedWriteBytesPerGpu>(e);
  h->running = Child<EngineFamily::kNumRequestsRunning>(e);
  h->waiting = Child<EngineFamily::kNumRequestsWaiting>(e);
  for (size_t i = 0; i < kEngineWaitingReasons.size(); ++i) {
    h->waiting_by_reason[i] =
        ChildWith<EngineFamily::kNumRequestsWaitingByReason>(e, kEngineWaitingReasons[i]);
  }
  for (size_t i = 0; i < kEngineSleepStates.size(); ++i) {
    h->sleep_state[i] = ChildWith<EngineFamily::kEngineSleepState>(e, kEngineSleepStates[i]);
    h->sleep_state[i].Set(i == 0 ? 1.0 : 0.0);  // awake
  }
  h->kv_cache_usage = Child<EngineFamily::kKvCacheUsagePerc>(e);
  h->prefix_queries = Child<EngineFamily::kPrefixCacheQueries>(e);
  h->prefix_hits = Child<EngineFamily::kPrefixCacheHits>(e);
  h->external_prefix_queries = Child<EngineFamily::kExternalPrefixCacheQueries>(e);
  h->external_prefix_hits = Child<EngineFamily::kExternalPrefixCacheHits>(e);
  h->mm_queries = Child<EngineFamily::kMmCacheQueries>(e);
  h->mm_hits = Child<EngineFamily::kMmCacheHits>(e);
  h->preemptions = Child<EngineFamily::kNumPreemptions>(e);
  h->prompt_tokens = Child<EngineFamily::kPromptTokens>(e);
  for (size_t i = 0; i < kEnginePromptTokenSources.size(); ++i) {
    h->prompt_by_source[i] =
        ChildWith<EngineFamily::kPromptTokensBySource>(e, kEnginePromptTokenSources[i]);
  }
  h->prompt_cached = Child<EngineFamily::kPromptTokensCached>(e);
  h->generation_tokens = Child<EngineFamily::kGenerationTokens>(e);
  for (size_t i = 0; i < kEngineFinishedReasons.size(); ++i) {
    h->request_success[i] = ChildWith<EngineFamily::kRequestSuccess>(e, kEngineFinishedReasons[i]);
  }
  h->request_prompt_tokens = Child<EngineFamily::kRequestPromptTokens>(e);
  h->request_generation_tokens = Child<EngineFamily::kRequestGenerationTokens>(e);
  h->iteration_tokens = Child<EngineFamily::kIterationTokensTotal>(e);
  h->max_generation_tokens = Child<EngineFamily::kRequestMaxNumGenerationTokens>(e);
  h->params_n = Child<EngineFamily::kRequestParamsN>(e);
  h->params_max_tokens = Child<EngineFamily::kRequestParamsMaxTokens>(e);
  h->ttft = Child<EngineFamily::kTimeToFirstTokenSeconds>(e);
  h->inter_token = Child<EngineFamily::kInterTokenLatencySeconds>(e);
  h->time_per_output_token = Child<EngineFamily::kRequestTimePerOutputTokenSeconds>(e);
  h->e2e = Child<EngineFamily::kE2eRequestLatencySeconds>(e);
  h->queue_time = Child<EngineFamily::kRequestQueueTimeSeconds>(e);
  h->inference_time = Child<EngineFamily::kRequestInferenceTimeSeconds>(e);
  h->prefill_time = Child<EngineFamily::kRequestPrefillTimeSeconds>(e);
  h->decode_time = Child<EngineFamily::kRequestDecodeTimeSeconds>(e);
  h->num_preemptions = Child<EngineFamily::kRequestNumPreemptions>(e);
  h->prefill_kv_computed = Child<EngineFamily::kRequestPrefillKvComputedTokens>(e);
  return h;
}

Status EngineStatsLogger::Record(StageReplica engine, const SchedulerStats* scheduler,
                                 const IterationStats* iteration,
                                 const MultiModalCacheStats* mm_cache) {
  const std::optional<size_t> flat = options_.engines.FlatIndex(engine);
  if (!flat) {
    return Status::InvalidArgument("unknown engine stage " + std::to_string(engine.stage) +
                                   " replica " + std::to_string(engine.replica));
  }
  return Record(*flat, scheduler, iteration, mm_cache);
}

Status EngineStatsLogger::Record(size_t engine_index, const SchedulerStats* scheduler,
                                 const IterationStats* iteration,
                                 const MultiModalCacheStats* mm_cache) {
  if (engine_index >= options_.engines.size()) {
    return Status::InvalidArgument(UnknownEngine(engine_index, options_.engines.size()));
  }
  if (!enabled_) return Status::Ok();
  EngineHandles& h = *handles_[engine_index];

  if (scheduler != nullptr) {
    // The scheduler already gated these stats (make_stats(), §4.9): every one is recorded.
    h.running.Set(static_cast<double>(scheduler->num_running_reqs));
    h.waiting.Set(
        static_cast<double>(scheduler->num_waiting_reqs + scheduler->num_skipped_waiting_reqs));
    h.waiting_by_reason[0].Set(static_cast<double>(scheduler->num_waiting_reqs));
    h.waiting_by_reason[1].Set(static_cast<double>(scheduler->num_skipped_waiting_reqs));
    h.kv_cache_usage.Set(scheduler->kv_cache_usage);
    h.prefix_queries.Add(scheduler->prefix_cache_stats.queries);
    h.prefix_hits.Add(scheduler->prefix_cache_stats.hits);
    if (const auto& external = scheduler->connector_prefix_cache_stats) {
      h.external_prefix_queries.Add(external->queries);
      h.external_prefix_hits.Add(external->hits);
    }
    const auto& kv = scheduler->kv_connector_stats;
    if (kv && options_.kv_connector == KvConnector::kNixl) {
      for (double v : kv->transfer_duration_s) h.nixl_xfer_time.Observe(v);
      for (double v : kv->post_duration_s) h.nixl_post_time.Observe(v);
      for (double v : kv->bytes_transferred) h.nixl_bytes.Observe(v);
      for (double v : kv->num_descriptors) h.nixl_descriptors.Observe(v);
      h.nixl_failed_transfers.Add(kv->num_failed_transfers);
      h.nixl_failed_notifications.Add(kv->num_failed_notifications);
      h.nixl_kv_expired.Add(kv->num_kv_expired_reqs);
    }
    if (const auto& perf = scheduler->perf_stats) {
      h.flops.Add(perf->num_flops_per_gpu);
      h.read_bytes.Add(perf->num_read_bytes_per_gpu);
      h.write_bytes.Add(perf->num_write_bytes_per_gpu);
    }
  }

  if (mm_cache != nullptr) {
    h.mm_queries.Add(mm_cache->queries);
    h.mm_hits.Add(mm_cache->hits);
  }

  if (iteration == nullptr) return Status::Ok();
  const IterationStats& it = *iteration;
  h.preemptions.Add(it.num_preempted_reqs);
  h.prompt_tokens.Add(it.num_prompt_tokens);
  const PromptTokenStats& pts = it.prompt_token_stats;
  h.prompt_by_source[0].Add(pts.computed);
  h.prompt_by_source[1].Add(pts.local_cache_hit);
  h.prompt_by_source[2].Add(pts.external_kv_transfer);
  h.prompt_cached.Add(pts.cached_tokens);
  h.generation_tokens.Add(it.num_generation_tokens);
  // Computed prompt tokens only: cache hits cost the step nothing (vLLM main).
  h.iteration_tokens.Observe(static_cast<double>(pts.computed + it.num_generation_tokens));
  for (uint64_t v : it.max_num_generation_tokens_iter) {
    h.max_generation_tokens.Observe(static_cast<double>(v));
  }
  for (uint64_t v : it.n_params_iter) h.params_n.Observe(static_cast<double>(v));
  for (double v : it.time_to_first_tokens_iter) h.ttft.Observe(v);
  for (double v : it.inter_token_latencies_iter) h.inter_token.Observe(v);

  for (const FinishedRequestStats& r : it.finished_requests) {
    const auto reason = static_cast<size_t>(r.finish_reason);
    if (reason < h.request_success.size()) h.request_success[reason].Inc();
    h.e2e.Observe(r.e2e_latency);
    h.queue_time.Observe(r.queued_time);
    h.prefill_time.Observe(r.prefill_time);
    h.inference_time.Observe(r.inference_time);
    h.decode_time.Observe(r.decode_time);
    h.num_preemptions.Observe(static_cast<double>(r.num_preemptions));
    const int64_t cached = std::max<int64_t>(r.num_cached_tokens, 0);
    const auto prompt = static_cast<int64_t>(r.num_prompt_tokens);
    h.prefill_kv_computed.Observe(static_cast<double>(std::max<int64_t>(prompt - cached, 0)));
    h.request_prompt_tokens.Observe(static_cast<double>(r.num_prompt_tokens));
    h.request_generation_tokens.Observe(static_cast<double>(r.num_generation_tokens));
    h.time_per_output_token.Observe(r.mean_time_per_output_token);
    if (r.max_tokens_param.value_or(0) != 0) {
      h.params_max_tokens.Observe(static_cast<double>(*r.max_tokens_param));
    }
  }
  return Status::Ok();
}

bool EngineStatsLogger::SetSleepState(int sleep, int level, std::optional<size_t> engine_index) {
  if (engine_index && *engine_index >= options_.engines.size()) return false;
  if (!enabled_) return true;
  const double awake = sleep == 1 ? 0.0 : 1.0;
  const double offloaded = sleep == 1 && level == 1 ? 1.0 : 0.0;
  const double discard_all = sleep == 1 && level == 2 ? 1.0 : 0.0;
  for (size_t e = 0; e < handles_.size(); ++e) {
    if (engine_index && e != *engine_index) continue;
    handles_[e]->sleep_state[0].Set(awake);
    handles_[e]->sleep_state[1].Set(offloaded);
    handles_[e]->sleep_state[2].Set(discard_all);
  }
  return true;
}

Status EngineStatsLogger::LogEngineInitialized(
    std::span<const std::pair<std::string_view, std::string_view>> info) {
  const FamilySpec* spec = &EngineSpec(EngineFamily::kCacheConfigInfo);
  // Labels: the keys in the order given (upstream's metrics_info().keys()), then the engine's
  // stage and replica (upstream appends `engine`).
  FamilyOptions family{.name = std::string(kCacheConfigInfo), .help = std::string(spec->help)};
  std::vector<std::string_view> values;
  for (const auto& [key, value] : info) {
    if (key == kStageLabel || key == kReplicaLabel) {
      return Status::InvalidArgument("cache_config_info key " + std::string(key) +
                                     " is an engine label");
    }
    family.labels.emplace_back(key);
    values.push_back(value);
  }
  family.labels.emplace_back(kStageLabel);
  family.labels.emplace_back(kReplicaLabel);
  if (!enabled_) return Status::Ok();
  // A second call (new keys) replaces the family, as upstream's re-registration would.
  registry_.RemovePrefix(kCacheConfigInfo);
  std::string why;
  Family<Gauge>* gauge = registry_.AddGauge(std::move(family), &why);
  if (gauge == nullptr) {
    return Status::InvalidArgument("cannot register vllm:cache_config_info: " + why);
  }
  values.resize(values.size() + 2);
  for (size_t e = 0; e < options_.engines.size(); ++e) {
    values[values.size() - 2] = StageLabel(e);
    values[values.size() - 1] = ReplicaLabel(e);
    gauge->Labels(std::span<const std::string_view>(values)).Set(1.0);
  }
  return Status::Ok();
}

// ---- Relabel helpers ----

EngineLabelMap::EngineLabelMap(const EngineMap& map) {
  for (size_t e = 0; e < map.size(); ++e) {
    Set(e, std::string(map.StageLabel(e)), std::string(map.ReplicaLabel(e)));
  }
}

void EngineLabelMap::Set(size_t engine, std::string stage, std::string replica) {
  entries_[engine] = {std::move(stage), std::move(replica)};
}

const std::pair<std::string, std::string>* EngineLabelMap::Find(size_t engine) const {
  const auto it = entries_.find(engine);
  return it == entries_.end() ? nullptr : &it->second;
}

const std::pair<std::string, std::string>* EngineLabelMap::Find(std::string_view engine) const {
  if (engine.empty() || engine.size() > 18) return nullptr;
  size_t index = 0;
  for (const char c : engine) {
    if (c < '0' || c > '9') return nullptr;
    index = index * 10 + static_cast<size_t>(c - '0');
  }
  return Find(index);
}

RelabeledNames RewriteEngineLabelNames(std::span<const std::string_view> names) {
  RelabeledNames out;
  out.original_size = names.size();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "engine" && !out.engine_position) {
      out.engine_position = i;
      out.names.emplace_back(kStageLabel);
      out.names.emplace_back(kReplicaLabel);
    } else {
      out.names.emplace_back(names[i]);
    }
  }
  return out;
}

Status TranslateEngineLabelValues(const RelabeledNames& names,
                                  std::span<const std::string_view> values,
                                  const EngineLabelMap& map, std::vector<std::string>* out) {
  if (values.size() == names.names.size()) {
    out->assign(values.begin(),
                values.end());  // already rewritten (per_engine_labelvalues 3-tuples)
    return Status::Ok();
  }
  if (!names.engine_position || values.size() != names.original_size) {
    return Status::InvalidArgument("incorrect label count " + std::to_string(values.size()) +
                                   " (expected " + std::to_string(names.names.size()) + ")");
  }
  const size_t at = *names.engine_position;
  const auto* labels = map.Find(values[at]);
  if (labels == nullptr) {
    return Status::InvalidArgument("unknown engine " + std::string(values[at]));
  }
  out->assign(values.begin(), values.begin() + static_cast<ptrdiff_t>(at));
  out->push_back(labels->first);
  out->push_back(labels->second);
  out->insert(out->end(), values.begin() + static_cast<ptrdiff_t>(at) + 1, values.end());
  return Status::Ok();
}

Status TranslateEngineLabelPairs(const RelabeledNames& names,
                                 std::span<const std::pair<std::string_view, std::string_view>> kv,
                                 const EngineLabelMap& map, std::vector<std::string>* out) {
  std::vector<std::optional<std::string>> slots(names.names.size());
  auto put = [&](std::string_view name, std::string_view value) {
    const auto it = std::find(names.names.begin(), names.names.end(), name);
    if (it == names.names.end()) return false;
    auto& slot = slots[static_cast<size_t>(it - names.names.begin())];
    if (slot) return false;
    slot = std::string(value);
    return true;
  };
  for (const auto& [name, value] : kv) {
    if (name == "engine" && names.engine_position) {
      const auto* labels = map.Find(value);
      if (labels == nullptr) {
        return Status::InvalidArgument("unknown engine " + std::string(value));
      }
      if (!put(kStageLabel, labels->first) || !put(kReplicaLabel, labels->second)) {
        return Status::InvalidArgument("stage/replica given twice");
      }
    } else if (!put(name, value)) {
      return Status::InvalidArgument("unexpected or repeated label " + std::string(name));
    }
  }
  out->clear();
  out->reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i]) return Status::InvalidArgument("missing label " + names.names[i]);
    out->push_back(std::move(*slots[i]));
  }
  return Status::Ok();
}

std::map<size_t, std::vector<std::string>> RewritePerEngineLabelValues(
    const std::map<size_t, std::vector<std::string>>& per_engine, const EngineLabelMap& map) {
  std::map<size_t, std::vector<std::string>> out;
  for (const auto& [index, values] : per_engine) {
    const auto* labels = map.Find(index);
    if (labels == nullptr || values.empty()) continue;
    out[index] = {values.front(), labels->first, labels->second};
  }
  return out;
}

}  // namespace modelmetrics::pipeline
