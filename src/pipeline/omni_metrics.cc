// The pipeline observe layer. See omni_metrics.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/omni_metrics.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <string>

#include "base/mutex.h"

namespace modelmetrics::pipeline {
namespace {

double SystemNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string_view NormalizeFailureReason(std::optional<std::string_view> reason) {
  if (reason.has_value()) {
    for (std::string_view known : kFailureReasons) {
      if (*reason == known) return known;
    }
  }
  return kUnknownReason;
}

std::string_view FinishedReasonOrDefault(std::optional<std::string_view> reason) {
  return reason.has_value() && !reason->empty() ? *reason : kDefaultFinishedReason;
}

std::string_view ConnectorTypeOrUnknown(std::optional<std::string_view> type) {
  return type.has_value() && !type->empty() ? *type : kUnknownConnectorType;
}

std::optional<double> ExtractQueueWaitS(const Timings* pipeline_timings,
                                        const Timings* diffusion_metrics) {
  std::optional<double> result;
  if (pipeline_timings != nullptr) {
    if (auto it = pipeline_timings->find("queue_wait_ms"); it != pipeline_timings->end()) {
      result = it->second / 1000.0;
    }
  }
  if (diffusion_metrics != nullptr) {
    if (auto it = diffusion_metrics->find("scheduler_queue_wait_s");
        it != diffusion_metrics->end()) {
      result = result.value_or(0.0) + it->second;
    }
  }
  return result;
}

// ---- KvWaitTimers ----

void KvWaitTimers::Start(std::string_view request_id, double now_s) {
  base::MutexLock lock(&mu_);
  start_.insert_or_assign(std::string(request_id), now_s);
}

std::optional<double> KvWaitTimers::Extract(std::string_view request_id, double now_s) {
  base::MutexLock lock(&mu_);
  auto it = start_.find(request_id);
  if (it == start_.end()) return std::nullopt;
  double wait = std::max(now_s - it->second, 0.0);
  start_.erase(it);
  return wait;
}

void KvWaitTimers::Discard(std::span<const std::string> request_ids) {
  base::MutexLock lock(&mu_);
  for (const std::string& id : request_ids) start_.erase(id);
}

size_t KvWaitTimers::size() const {
  base::MutexLock lock(&mu_);
  return start_.size();
}

bool KvWaitTimers::contains(std::string_view request_id) const {
  base::MutexLock lock(&mu_);
  return start_.find(request_id) != start_.end();
}

// ---- OmniMetrics ----

OmniMetrics::OmniMetrics(Registry& registry, Options options)
    : options_(std::move(options)),
      enabled_(registry.enabled()),
      prometheus_(registry, options_.model_name),
      diffusion_(registry, options_.model_name),
      transfer_(registry, options_.model_name),
      aggregator_(OrchestratorAggregator::Options{
          .num_stages = static_cast<int>(std::max<size_t>(options_.replicas_per_stage.size(), 1)),
          .log_stats = registry.enabled(),
          .wall_start_ts = options_.clock ? options_.clock() : SystemNow(),
          .clock = options_.clock,
          .emitter = nullptr,
          .replica_resolver = options_.replica_resolver,
          .sink = options_.log_sink}) {
  aggregator_.SetEmitter(&transfer_);
}

OmniMetrics::~OmniMetrics() { aggregator_.SetEmitter(nullptr); }

double OmniMetrics::Now() const { return options_.clock ? options_.clock() : SystemNow(); }

// ---- Orchestrator / entrypoint events ----

void OmniMetrics::OnRequestAdded(std::string_view request_id) {
  base::MutexLock lock(&mu_);
  RequestState& state = requests_[std::string(request_id)];
  state.start_ts = Now();
  PublishRequestGaugesLocked(requests_.size());
}

void OmniMetrics::OnRequestDispatched(std::string_view request_id) {
  base::MutexLock lock(&mu_);
  auto it = requests_.find(request_id);
  if (it == requests_.end() || it->second.dispatched) return;
  it->second.dispatched = true;
  ++running_counter_;
  PublishRequestGaugesLocked(requests_.size());
}

void OmniMetrics::OnStageSubmitted(int stage_id) { aggregator_.OnStageSubmit(stage_id); }

StageMessageResult OmniMetrics::OnStageMessage(StageMessage message) {
  StageMessageResult result;
  if (!message.finished) return result;
  base::MutexLock lock(&mu_);
  auto it = requests_.find(message.stats.request_id);
  if (it == requests_.end()) return result;
  RequestState& state = it->second;
  if (!state.consumed_messages.insert(message.message_id).second) return result;  // replay
  result.consumed = true;

  const std::string& rid = message.stats.request_id;
  aggregator_.AccumulateDiffusionMetrics(message.stage_type, rid, message.engine_metrics);
  StageRequestStats stats = aggregator_.OnStageMetrics(std::move(message.stats));
  const int stage = stats.stage_id;
  if (stage == 0) state.prompt_tokens += std::max<int64_t>(stats.num_tokens_in, 0);
  state.generation_tokens += std::max<int64_t>(stats.num_tokens_out, 0);

  if (message.peak_memory_mb > 0) prometheus_.SetPeakMemory(stage, message.peak_memory_mb);
  prometheus_.ObserveStageGenTime(stage, message.stage_type, stats.stage_gen_time_ms / 1000.0);
  // Workload scope: steps on diffusion stages; pixels and count on image outputs.
  if (message.stage_type == "diffusion") {
    prometheus_.ObserveNumInferenceSteps(static_cast<double>(stats.num_inference_steps));
  }
  const bool image = stats.output_unit_type == "image";
  if (image) {
    prometheus_.ObserveImagePixels(static_cast<double>(stats.image_pixels));
    prometheus_.IncImageCount(stats.output_unit_count);
  }
  const Timings* dm = stats.diffusion_metrics ? &*stats.diffusion_metrics : nullptr;
  if (dm != nullptr) {
    if (auto q = dm->find("scheduler_queue_wait_s"); q != dm->end()) {
      prometheus_.ObserveStageInQueue(stage, q->second);
    }
  }
  if (image && stats.replica_id.has_value()) {
    diffusion_.ObserveImageTtfp(stage, *stats.replica_id,
                                stats.image_time_to_first_output_ms / 1000.0);
  }
  std::optional<double> queue_wait_s = ExtractQueueWaitS(&stats.pipeline_timings, dm);
  if (queue_wait_s.has_value()) result.queue_wait_ms = *queue_wait_s * 1000.0;

  if (message.final_stage && !state.e2e_done) {
    FinalizeLocked(state, stats, queue_wait_s);
    result.finalized = true;
  }
  return result;
}

void OmniMetrics::FinalizeLocked(RequestState& state, const StageRequestStats& stats,
                                 std::optional<double> queue_wait_s) {
  aggregator_.OnFinalizeRequest(stats.stage_id, stats.request_id, state.start_ts);
  state.e2e_done = true;
  std::optional<std::string_view> reason;
  if (stats.finish_reason.has_value()) reason = *stats.finish_reason;
  prometheus_.RequestSucceeded(Now() - state.start_ts, FinishedReasonOrDefault(reason));
  prometheus_.ObserveTokens(state.prompt_tokens, state.generation_tokens);
  if (queue_wait_s.has_value()) prometheus_.ObserveQueueWait(*queue_wait_s);
  diffusion_.ObserveFinalize(stats);
  if (options_.on_finalize && stats.replica_id.has_value()) options_.on_finalize(stats);
  PublishRequestGaugesLocked(requests_.size() - 1);
}

void OmniMetrics::RecordFailureLocked(RequestState& state, std::optional<std::string_view> reason) {
  if (state.e2e_done || state.failure_recorded) return;
  state.failure_recorded = true;
  prometheus_.RequestFailed();
  prometheus_.IncRequestsFailed(NormalizeFailureReason(reason));
}

void OmniMetrics::OnRequestFailure(std::string_view request_id,
                                   std::optional<std::string_view> reason) {
  base::MutexLock lock(&mu_);
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  RecordFailureLocked(it->second, reason);
}

void OmniMetrics::OnRequestCleanup(std::string_view request_id,
                                   std::optional<std::string_view> reason) {
  base::MutexLock lock(&mu_);
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  RecordFailureLocked(it->second, reason);
  if (it->second.dispatched) running_counter_ = std::max<int64_t>(running_counter_ - 1, 0);
  requests_.erase(it);
  PublishRequestGaugesLocked(requests_.size());
}

void OmniMetrics::PublishRequestGaugesLocked(size_t total_size) {
  const auto total = static_cast<int64_t>(total_size);
  const int64_t dispatched = running_counter_;
  const int64_t w = std::clamp<int64_t>(engines_waiting_, 0, std::max<int64_t>(dispatched, 0));
  prometheus_.SetRunning(static_cast<double>(std::max<int64_t>(0, dispatched - w)));
  prometheus_.SetWaiting(static_cast<double>(std::max<int64_t>(0, total - dispatched) + w));
}

void OmniMetrics::PublishStageWaitingLocked(int stage) {
  int64_t sum = 0;
  engines_waiting_ = 0;
  for (const auto& [key, n] : waiting_snapshots_) {
    if (key.first == stage) sum += n;
    engines_waiting_ += n;
  }
  prometheus_.SetStageWaitingRequests(stage, static_cast<double>(sum));
}

void OmniMetrics::OnWaitingSnapshot(int stage, int replica, int64_t num_waiting) {
  base::MutexLock lock(&mu_);
  waiting_snapshots_[{stage, replica}] = std::max<int64_t>(num_waiting, 0);
  PublishStageWaitingLocked(stage);
  PublishRequestGaugesLocked(requests_.size());
}

void OmniMetrics::OnReplicaDead(int stage, int replica) {
  base::MutexLock lock(&mu_);
  if (waiting_snapshots_.erase({stage, replica}) == 0) return;
  PublishStageWaitingLocked(stage);
  PublishRequestGaugesLocked(requests_.size());
}

void OmniMetrics::OnKvWaitStart(std::string_view request_id, double now_s) {
  kv_wait_.Start(request_id, now_s);
}

std::optional<double> OmniMetrics::OnKvWaitExtracted(std::string_view request_id,
                                                     std::optional<std::string_view> connector_type,
                                                     double now_s) {
  std::optional<double> wait = kv_wait_.Extract(request_id, now_s);
  if (wait.has_value()) prometheus_.ObserveKvWait(connector_type, *wait);
  return wait;
}

void OmniMetrics::OnKvWaitDiscard(std::span<const std::string> request_ids) {
  kv_wait_.Discard(request_ids);
}

void OmniMetrics::OnForward(int from_stage, int to_stage, std::string_view request_id,
                            int64_t size_bytes, double tx_ms, bool used_shm) {
  aggregator_.OnForward(from_stage, to_stage, request_id, size_bytes, tx_ms, used_shm);
}

// ---- Introspection ----

size_t OmniMetrics::num_request_states() const {
  base::MutexLock lock(&mu_);
  return requests_.size();
}

int64_t OmniMetrics::running_counter() const {
  base::MutexLock lock(&mu_);
  return running_counter_;
}

std::optional<int64_t> OmniMetrics::waiting_snapshot(int stage, int replica) const {
  base::MutexLock lock(&mu_);
  auto it = waiting_snapshots_.find({stage, replica});
  if (it == waiting_snapshots_.end()) return std::nullopt;
  return it->second;
}

}  // namespace modelmetrics::pipeline
