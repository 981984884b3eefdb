// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "sim/pipeline_sim.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "duplex_sessions.h"
#include "modelmetrics/metrics.h"
#include "net/http_server.h"
#include "pipeline/audio_metrics.h"
#include "pipeline/duplex_metrics.h"
#include "pipeline/engine_stats.h"
#include "pipeline/metrics_endpoint.h"
#include "pipeline/omni_metrics.h"
#include "pipeline/realtime_vad_metrics.h"

namespace modelmetrics::sim {
namespace {

using Clock = std::chrono::steady_clock;
using pipeline::StageMessage;

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double MonoSeconds() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Sticky (stage, request) -> replica bindings: the stage pools' routing, which the metrics layer
// resolves transfer and audio labels through.
class Bindings {
 public:
  void Bind(int stage, const std::string& request, int replica) {
    base::MutexLock lock(&mu_);
    map_[{stage, request}] = replica;
  }
  std::optional<int> Resolve(int stage, std::string_view request) const {
    base::MutexLock lock(&mu_);
    auto it = map_.find({stage, std::string(request)});
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void Forget(const std::string& request) {
    base::MutexLock lock(&mu_);
    for (auto it = map_.begin(); it != map_.end();) {
      it = it->first.second == request ? map_.erase(it) : std::next(it);
    }
  }

 private:
  mutable base::Mutex mu_;
  std::map<std::pair<int, std::string>, int> map_ GUARDED_BY(mu_);
};

// A real-time event loop on one thread: events run at their due time, in order. Events schedule
// more events from the loop thread; Stop(), Pause() and Resume() may come from any thread.
class EventLoop {
 public:
  void At(Clock::time_point when, std::function<void()> fn) {
    base::MutexLock lock(&mu_);
    queue_.push(Event{when, next_++, std::move(fn)});
  }
  void After(double seconds, std::function<void()> fn) {
    At(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(std::max(seconds, 0.0))),
       std::move(fn));
  }
  // Runs events due before `end`, then waits for `end`; returns early on Stop().
  void RunUntil(Clock::time_point end) {
    base::MutexLock lock(&mu_);
    while (!stopped_) {
      if (paused_) {
        cv_.wait(lock.native(), [this]() REQUIRES(mu_) { return stopped_ || !paused_; });
        continue;
      }
      const Clock::time_point due = queue_.empty() ? end : std::min(end, queue_.top().when);
      if (Clock::now() < due) {
        cv_.wait_until(lock.native(), due, [this]() REQUIRES(mu_) { return stopped_ || paused_; });
        continue;
      }
      if (queue_.empty() || queue_.top().when >= end) break;
      Event e = queue_.top();
      queue_.pop();
      running_ = true;
      lock.Unlock();
      e.fn();
      lock.Lock();
      running_ = false;
      cv_.notify_all();
    }
  }
  void Stop() {
    base::MutexLock lock(&mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  // Returns once no event runs; none runs until Resume().
  void Pause() {
    base::MutexLock lock(&mu_);
    paused_ = true;
    cv_.notify_all();
    cv_.wait(lock.native(), [this]() REQUIRES(mu_) { return !running_; });
  }
  void Resume() {
    base::MutexLock lock(&mu_);
    paused_ = false;
    cv_.notify_all();
  }

 private:
  struct Event {
    Clock::time_point when;
    uint64_t seq;
    std::function<void()> fn;
    bool operator<(const Event& o) const {
      return when != o.when ? when > o.when : seq > o.seq;  // min-heap by time, then order
    }
  };
  base::Mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Event> queue_ GUARDED_BY(mu_);
  uint64_t next_ GUARDED_BY(mu_) = 0;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool paused_ GUARDED_BY(mu_) = false;
  bool running_ GUARDED_BY(mu_) = false;
};

constexpr int kSampleRate = 24000;
constexpr int kBytesPerSecond = kSampleRate * 2;  // mono s16le

class Simulation {
 public:
  Simulation(const PipelineSimOptions& options, Registry& registry)
      : options_(options), rng_(options.seed) {
    // Only the pipelines it runs register families: a speech-only Pod exports no image model.
    if (Speech()) {
      speech_.emplace(registry, SpeechOptions());
      audio_.emplace(registry, kSpeechModel,
                     pipeline::AudioMetricsOptions{
                         .replicas_per_stage = {2, 1, 2},
                         .replica_resolver = [this](int stage, std::string_view request) {
                           return speech_bindings_.Resolve(stage, request);
                         }});
      vad_.emplace(registry, kSpeechModel);
      duplex_metrics_.emplace(registry, kSpeechModel);
      duplex_.emplace(*duplex_metrics_, rng_, [this](double s, std::function<void()> fn) {
        loop_.After(s, std::move(fn));
      });
      // A fresh registry takes the `vllm:*` families; a refusal leaves the engines unlogged.
      (void)pipeline::EngineStatsLogger::Create(registry,
                                                {.model_name = kSpeechModel,
                                                 .engines = pipeline::EngineMap{2, 1},
                                                 .kv_connector = pipeline::KvConnector::kNixl},
                                                &engines_);
    }
    if (Image()) image_.emplace(registry, ImageOptions());
  }

  void Start() {
    if (engines_) {
      // What upstream's log_engine_initialized reports once per engine (cache_config_info).
      const std::pair<std::string_view, std::string_view> info[] = {
          {"block_size", "16"},
          {"cache_dtype", "auto"},
          {"enable_prefix_caching", "True"},
          {"gpu_memory_utilization", "0.9"},
          {"num_gpu_blocks", "27000"},
          {"num_cpu_blocks", "0"},
          {"prefix_caching_hash_algo", "sha256"}};
      (void)engines_->LogEngineInitialized(info);
    }
    if (Speech()) {
      loop_.After(0, [this] { SpeechArrival(); });
      loop_.After(0.05, [this] { EngineStep(); });
      loop_.After(0.2, [this] { RealtimeSession(); });
      duplex_->Start();
    }
    if (Image()) loop_.After(0.1, [this] { ImageArrival(); });
    loop_.After(0.5, [this] { WaitingSnapshots(); });
    if (options_.log_interval.count() > 0) {
      loop_.After(options_.log_interval.count() / 1000.0, [this] { PrintTables(); });
    }
  }
  void Run(Clock::time_point end) { loop_.RunUntil(end); }
  EventLoop& loop() { return loop_; }
  void PrintTables() {
    std::ostream& out = *options_.out;
    const std::string speech = speech_ ? speech_->BuildAndLogSummary() : "";
    const std::string image = image_ ? image_->BuildAndLogSummary() : "";
    if (!speech.empty()) out << "[speech " << kSpeechModel << "]\n" << speech << "\n";
    if (!image.empty()) out << "[image " << kImageModel << "]\n" << image << "\n";
    out.flush();
    if (options_.log_interval.count() > 0) {
      loop_.After(options_.log_interval.count() / 1000.0, [this] { PrintTables(); });
    }
  }

 private:
  static constexpr const char* kSpeechModel = "Qwen/Qwen2.5-Omni-7B";
  static constexpr const char* kImageModel = "Qwen/Qwen-Image";

  pipeline::OmniMetrics::Options SpeechOptions() {
    pipeline::OmniMetrics::Options o;
    o.model_name = kSpeechModel;
    o.replicas_per_stage = {2, 1, 2};
    o.replica_resolver = [this](int stage, std::string_view request) {
      return speech_bindings_.Resolve(stage, request);
    };
    // The audio finalize of a finished request (§4.3), from the same message.
    o.on_finalize = [this](const pipeline::StageRequestStats& stats) {
      pipeline::AudioFinalize finalize;
      finalize.output_type = stats.final_output_type;
      finalize.stage_gen_time_ms = stats.stage_gen_time_ms;
      finalize.audio_generated_frames = stats.audio_generated_frames;
      audio_->ObserveFinalize(stats.stage_id, stats.replica_id, finalize);
    };
    return o;
  }
  pipeline::OmniMetrics::Options ImageOptions() {
    pipeline::OmniMetrics::Options o;
    o.model_name = kImageModel;
    o.replicas_per_stage = {1, 2};
    o.replica_resolver = [this](int stage, std::string_view request) {
      return image_bindings_.Resolve(stage, request);
    };
    return o;
  }

  double Uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng_); }
  bool Chance(double p) { return Uniform(0, 1) < p; }
  int Pick(int n) { return std::uniform_int_distribution<>(0, n - 1)(rng_); }
  double NextArrival() {
    return std::exponential_distribution<>(options_.requests_per_second)(rng_);
  }

  pipeline::StageRequestStats Stats(const std::string& id, int stage, int replica) {
    pipeline::StageRequestStats s;
    s.request_id = id;
    s.stage_id = stage;
    s.replica_id = replica;
    s.batch_id = ++batch_;
    s.batch_size = 1 + Pick(4);
    return s;
  }

  // A failure path: the request is counted once with its reason and cleaned up.
  void Fail(pipeline::OmniMetrics& metrics, Bindings& bindings, const std::string& id,
            std::string_view reason, bool audio_stream) {
    metrics.OnRequestFailure(id, reason);
    metrics.OnKvWaitDiscard(std::vector<std::string>{id});
    metrics.OnRequestCleanup(id, reason);
    if (audio_stream)
      audio_->AbortStream(id, reason == "client_disconnect" ? "disconnect" : reason);
    bindings.Forget(id);
  }

  // ---- speech: thinker -> talker -> code2wav, streaming PCM ----
  void SpeechArrival() {
    const std::string id = "speech-" + std::to_string(++requests_);
    const uint64_t n = ++speech_requests_;
    const double arrival_wall = WallSeconds();
    speech_->OnRequestAdded(id);
    speech_->OnRequestDispatched(id);
    speech_->OnStageSubmitted(0);
    // Half the streams come through the Speech API (completed/aborted counters), half through
    // Chat; alternating, so the first few requests already show both.
    audio_->BeginStream(id,
                        n % 2 == 1 ? pipeline::StreamKind::kSpeech : pipeline::StreamKind::kChat);
    // The sparse outcomes on a cadence (see the header): every 8th request from the 3rd (a Speech
    // stream) is cut by the client after its first chunk; every 8th from the 2nd gets an empty
    // codec output.
    const bool disconnect = n % 8 == 3;
    const bool empty_audio = n % 8 == 2;
    const int thinker = Pick(2);
    speech_bindings_.Bind(0, id, thinker);
    const double think_s = Uniform(0.15, 0.6);
    loop_.After(think_s, [this, id, thinker, think_s, arrival_wall, disconnect, empty_audio] {
      if (!disconnect && Chance(0.02)) {
        return Fail(*speech_, speech_bindings_, id, "stage_error", true);
      }
      StageMessage m;
      m.message_id = ++messages_;
      m.stage_type = pipeline::kStageTypeLlm;
      m.stats = Stats(id, 0, thinker);
      m.stats.num_tokens_in = 200 + Pick(800);
      m.stats.num_tokens_out = 40 + Pick(200);
      m.stats.stage_gen_time_ms = think_s * 1000;
      m.stats.pipeline_timings["queue_wait_ms"] = Uniform(0, 30);
      speech_->OnStageMessage(m);
      if (Chance(0.05)) speech_->OnStageMessage(m);  // a replayed message: counted once
      speech_bindings_.Bind(1, id, 0);
      speech_->OnForward(0, 1, id, 20000 + Pick(200000), Uniform(0.2, 3), Chance(0.5));
      speech_->OnKvWaitStart(id, MonoSeconds());
      const double talk_s = Uniform(0.2, 0.5);
      const double kv_wait_s = Uniform(0.005, 0.05);
      loop_.After(kv_wait_s, [this, id] { speech_->OnKvWaitExtracted(id, "nixl", MonoSeconds()); });
      loop_.After(talk_s, [this, id, talk_s, arrival_wall, disconnect, empty_audio] {
        if (!disconnect && Chance(0.02)) {
          return Fail(*speech_, speech_bindings_, id, "client_abort", true);
        }
        StageMessage t;
        t.message_id = ++messages_;
        t.stage_type = pipeline::kStageTypeLlm;
        t.stats = Stats(id, 1, 0);
        t.stats.num_tokens_in = 100 + Pick(100);
        t.stats.num_tokens_out = 300 + Pick(600);
        t.stats.stage_gen_time_ms = talk_s * 1000;
        t.stats.rx_transfer_bytes = 20000 + Pick(200000);
        t.stats.rx_decode_time_ms = Uniform(0.1, 2);
        t.stats.rx_in_flight_time_ms = Uniform(0.2, 4);
        speech_->OnStageMessage(t);
        const int code2wav = Pick(2);
        speech_bindings_.Bind(2, id, code2wav);
        speech_->OnForward(1, 2, id, 4000 + Pick(40000), Uniform(0.1, 1.5), false);
        StreamAudio(id, code2wav, arrival_wall, MonoSeconds(), disconnect, empty_audio);
      });
    });
    loop_.After(NextArrival(), [this] { SpeechArrival(); });
  }

  // code2wav streams chunks of 0.4 s audio; each arrives 0.25-0.42 s after the previous one, so
  // a late chunk now and then makes the player run dry (an underrun). `disconnect`: the client
  // goes away after the first chunk; `empty_audio`: code2wav rejects the codec input and ends the
  // request with no audio at all (counted as a skipped request at finalize).
  void StreamAudio(const std::string& id, int replica, double arrival_wall, double start_mono,
                   bool disconnect, bool empty_audio) {
    if (empty_audio) return FinishAudio(id, replica, start_mono, 0);
    const int chunks = 3 + Pick(8);
    // The chunk step schedules itself through a weak reference: the queued event holds the only
    // strong one, so the closure is freed when the stream ends (no self-owning cycle).
    auto next = std::make_shared<std::function<void(int)>>();
    std::weak_ptr<std::function<void(int)>> weak_next = next;
    *next = [this, id, replica, arrival_wall, start_mono, chunks, disconnect,
             weak_next](int index) {
      if (index == 1 && (disconnect || Chance(0.02))) {
        return Fail(*speech_, speech_bindings_, id, "client_disconnect", true);
      }
      pipeline::PcmChunk chunk;
      chunk.stage = 2;
      chunk.replica = replica;
      chunk.bytes = static_cast<uint64_t>(0.4 * kBytesPerSecond);
      chunk.request_arrival_ts = arrival_wall;
      chunk.wall_ts = WallSeconds();
      chunk.mono_ts = MonoSeconds();
      audio_->OnPcmChunk(id, chunk);
      if (index + 1 < chunks) {
        const double gap = Chance(0.1) ? Uniform(0.42, 0.6) : Uniform(0.25, 0.4);
        loop_.After(gap, [self = weak_next.lock(), index] { (*self)(index + 1); });
        return;
      }
      FinishAudio(id, replica, start_mono, chunks);
    };
    (*next)(0);
  }

  // The code2wav stage's final message after `chunks` chunks of 0.4 s (none: an empty output).
  void FinishAudio(const std::string& id, int replica, double start_mono, int chunks) {
    StageMessage m;
    m.message_id = ++messages_;
    m.stage_type = pipeline::kStageTypeLlm;  // code2wav is an AR (llm-type) stage
    m.final_stage = true;
    m.stats = Stats(id, 2, replica);
    m.stats.final_output_type = "audio";
    m.stats.output_unit_type = "audio";
    m.stats.finish_reason = Chance(0.9) ? "stop" : "length";
    m.stats.stage_gen_time_ms = (MonoSeconds() - start_mono) * 1000;
    m.stats.audio_generated_frames = static_cast<int64_t>(chunks * 0.4 * kSampleRate);
    m.stats.audio_sample_rate = kSampleRate;
    m.stats.audio_duration_s = chunks * 0.4;
    m.stats.rx_transfer_bytes = 4000 + Pick(40000);
    m.stats.rx_decode_time_ms = Uniform(0.1, 1);
    m.stats.rx_in_flight_time_ms = Uniform(0.1, 2);
    speech_->OnStageMessage(m);
    audio_->CompleteStream(id);
    speech_->OnRequestCleanup(id);
    speech_bindings_.Forget(id);
  }

  // ---- image: AR -> diffusion ----
  void ImageArrival() {
    const std::string id = "image-" + std::to_string(++requests_);
    // Every other request hands the AR stage's KV cache to the diffusion stage (the first one
    // does), which then reports its receive/load time.
    const bool kv_to_diffusion = ++image_requests_ % 2 == 1;
    image_->OnRequestAdded(id);
    image_->OnRequestDispatched(id);
    image_->OnStageSubmitted(0);
    image_bindings_.Bind(0, id, 0);
    const double ar_s = Uniform(0.1, 0.3);
    loop_.After(ar_s, [this, id, ar_s, kv_to_diffusion] {
      StageMessage m;
      m.message_id = ++messages_;
      m.stage_type = pipeline::kStageTypeLlm;
      m.stats = Stats(id, 0, 0);
      m.stats.num_tokens_in = 50 + Pick(200);
      m.stats.num_tokens_out = 30 + Pick(100);
      m.stats.stage_gen_time_ms = ar_s * 1000;
      image_->OnStageMessage(m);
      const int diffusion = Pick(2);
      image_bindings_.Bind(1, id, diffusion);
      image_->OnForward(0, 1, id, 50000 + Pick(100000), Uniform(0.2, 2), true);
      image_->OnWaitingSnapshot(1, diffusion, Pick(3));
      const int steps = Chance(0.5) ? 30 : 50;
      const double step_s = Uniform(0.03, 0.06);
      const double gen_s = steps * step_s + Uniform(0.1, 0.3);
      loop_.After(gen_s, [this, id, diffusion, steps, step_s, gen_s, kv_to_diffusion] {
        if (Chance(0.03)) return Fail(*image_, image_bindings_, id, "stage_error", false);
        StageMessage d;
        d.message_id = ++messages_;
        d.stage_type = pipeline::kStageTypeDiffusion;
        d.final_stage = true;
        d.peak_memory_mb = 18000 + Pick(4000);
        d.engine_metrics = {{"preprocess_time_ms", Uniform(5, 20)},
                            {"diffusion_engine_exec_time_ms", gen_s * 1000},
                            {"forward_time_ms", steps * step_s * 1000},
                            {"vae_decode_time_ms", Uniform(50, 120)},
                            {"postprocess_time_ms", Uniform(5, 15)},
                            {"scheduler_queue_wait_ms", Uniform(0, 40)}};
        if (kv_to_diffusion) d.engine_metrics["kv_recv_time_ms"] = Uniform(2, 25);
        d.stats = Stats(id, 1, diffusion);
        d.stats.final_output_type = "image";
        d.stats.output_unit_type = "image";
        d.stats.output_unit_count = 1;
        d.stats.image_pixels = Chance(0.5) ? 1024 * 1024 : 768 * 768;
        d.stats.num_inference_steps = steps;
        d.stats.stage_gen_time_ms = gen_s * 1000;
        d.stats.image_time_to_first_output_ms = gen_s * 1000;
        d.stats.rx_transfer_bytes = 50000 + Pick(100000);
        d.stats.rx_decode_time_ms = Uniform(0.5, 3);
        d.stats.rx_in_flight_time_ms = Uniform(0.5, 5);
        d.stats.pipeline_timings["queue_wait_ms"] = Uniform(0, 50);
        image_->OnStageMessage(d);
        image_->OnRequestCleanup(id);
        image_bindings_.Forget(id);
      });
    });
    loop_.After(NextArrival(), [this] { ImageArrival(); });
  }

  // ---- realtime sessions with server-side VAD ----
  // One chain of sessions, each starting 0.5-2 s after the one before and lasting 2.5-6 s, so one
  // is always active: a VAD inference per 100 ms of appended audio, an endpoint every ~1 s of
  // speech; every 4th session overflows its input buffer once.
  void RealtimeSession() {
    const uint64_t session = ++vad_sessions_;
    vad_->SessionStarted();
    const double length_s = Uniform(2.5, 6);
    const int batches = static_cast<int>(length_s * 10);
    for (int i = 1; i <= batches; ++i) {
      loop_.After(i * 0.1, [this, i] {
        vad_->ObserveInference(Uniform(0.5, 12));
        if (i % 10 == 0) vad_->ObserveEndpointDelay(Uniform(200, 800));
      });
    }
    if (session % 4 == 1) loop_.After(length_s / 2, [this] { vad_->Error("input_overflow"); });
    loop_.After(length_s + 0.05, [this] { vad_->SessionFinished(); });
    loop_.After(Uniform(0.5, 2), [this] { RealtimeSession(); });
  }

  // ---- periodic engine and scheduler reports ----
  // Engines 0 and 1 are the thinker replicas (stage 0: multimodal input, the KV senders of the
  // thinker -> talker NIXL hand-off), engine 2 the talker (stage 1, the KV receiver).
  void EngineStep() {
    const uint64_t step = ++engine_steps_;  // one per 0.1 s, for all three engines
    for (size_t engine = 0; engine < 3; ++engine) {
      const bool thinker = engine < 2;
      pipeline::SchedulerStats sched;
      sched.num_running_reqs = static_cast<uint64_t>(Pick(8));
      // Short queues: the pipeline reports running = dispatched minus the stages' waiting, so
      // queues longer than the requests in flight would read as nothing running. The talker
      // always has one request queued behind the thinkers' hand-offs.
      sched.num_waiting_reqs = static_cast<uint64_t>(thinker ? Pick(2) : 1 + Pick(2));
      sched.num_skipped_waiting_reqs = (step + engine) % 3 == 0 ? 1 : 0;  // deferred
      sched.kv_cache_usage = Uniform(0.05, 0.8);
      sched.prefix_cache_stats = {.queries = 200, .hits = static_cast<uint64_t>(Pick(200))};
      pipeline::IterationStats iter;
      iter.num_prompt_tokens = static_cast<uint64_t>(Pick(400));
      iter.num_generation_tokens = static_cast<uint64_t>(8 + Pick(24));
      iter.time_to_first_tokens_iter = {Uniform(0.02, 0.4)};
      iter.inter_token_latencies_iter = {Uniform(0.008, 0.03), Uniform(0.008, 0.03)};
      // The new request's sampling parameters (the one whose first token this step produced).
      iter.n_params_iter = {Chance(0.9) ? uint64_t{1} : uint64_t{2}};
      iter.max_num_generation_tokens_iter = {static_cast<uint64_t>(128 << Pick(4))};
      // Where the step's prompt tokens came from: local compute, the prefix cache, or (talker)
      // KV received over the connector.
      pipeline::PromptTokenStats& source = iter.prompt_token_stats;
      source.local_cache_hit = iter.num_prompt_tokens / 4;
      source.external_kv_transfer = thinker ? 0 : iter.num_prompt_tokens / 4;
      source.computed =
          iter.num_prompt_tokens - source.local_cache_hit - source.external_kv_transfer;
      source.cached_tokens = source.local_cache_hit + source.external_kv_transfer;
      // The draws that once made recomputed tokens (a family vLLM removed), kept so the seeded
      // traffic the demo's tests were tuned on stays the same.
      if (Chance(0.2)) (void)Pick(16);
      // A preemption under KV pressure every 3 s, staggered across engines.
      if (step % 30 == 10 * engine + 5) iter.num_preempted_reqs = 1;
      // Analytic FLOPs and memory traffic of a 7B model: ~2 x params per token processed.
      const double tokens =
          static_cast<double>(iter.num_prompt_tokens + iter.num_generation_tokens);
      sched.perf_stats = pipeline::PerfStats{.num_flops_per_gpu = 2 * 7e9 * tokens,
                                             .num_read_bytes_per_gpu = 14e9 + 1e5 * tokens,
                                             .num_write_bytes_per_gpu = 1e5 * tokens};
      pipeline::MultiModalCacheStats mm_cache;
      if (thinker) {
        // The thinker sees audio/image inputs; the talker receives its KV from the thinker.
        mm_cache = {.queries = static_cast<uint64_t>(1 + Pick(4)), .hits = 0};
        mm_cache.hits = static_cast<uint64_t>(Pick(static_cast<int>(mm_cache.queries) + 1));
        pipeline::KvConnectorStats nixl;
        if (Chance(0.5)) {
          nixl.transfer_duration_s = {Uniform(0.004, 0.08)};
          nixl.post_duration_s = {Uniform(0.0005, 0.01)};
          nixl.bytes_transferred = {static_cast<double>(1 << 20) * (1 + Pick(32))};
          nixl.num_descriptors = {static_cast<double>(16 + Pick(400))};
        }
        // Rare connector faults on a cadence (each once in 6 s, first within 3 s).
        // Once a minute each, on steps the scheduler reports (every tenth, below).
        nixl.num_failed_transfers = step % 60 == 20 ? 1 : 0;
        nixl.num_failed_notifications = step % 60 == 30 ? 1 : 0;
        nixl.num_kv_expired_reqs = step % 60 == 40 ? 1 : 0;
        sched.kv_connector_stats = std::move(nixl);
      } else {
        sched.connector_prefix_cache_stats =
            pipeline::PrefixCacheStats{.queries = 200, .hits = static_cast<uint64_t>(Pick(200))};
      }
      if (Chance(0.3)) {
        pipeline::FinishedRequestStats done;
        done.finish_reason =
            Chance(0.9) ? pipeline::FinishReason::kStop : pipeline::FinishReason::kLength;
        done.e2e_latency = Uniform(0.3, 3);
        done.num_prompt_tokens = 200 + Pick(600);
        done.num_generation_tokens = 50 + Pick(400);
        done.queued_time = Uniform(0, 0.05);
        done.prefill_time = Uniform(0.02, 0.2);
        done.decode_time = Uniform(0.2, 2);
        done.inference_time = done.prefill_time + done.decode_time;
        done.mean_time_per_output_token =
            done.decode_time / static_cast<double>(done.num_generation_tokens);
        done.max_tokens_param = 1024;
        done.num_cached_tokens = static_cast<int64_t>(done.num_prompt_tokens / 4);
        done.num_preemptions = Chance(0.9) ? 0 : 1 + Pick(3);  // KV pressure preempts a few
        iter.finished_requests.push_back(done);
      }
      // Each scheduler's make_stats() reports once a second (§4.9); iteration stats every step.
      const bool admitted = step % 10 == 0;
      if (engines_) {
        (void)engines_->Record(engine, admitted ? &sched : nullptr, &iter,
                               thinker ? &mm_cache : nullptr);
      }
      speech_->OnWaitingSnapshot(engine < 2 ? 0 : 1, engine < 2 ? static_cast<int>(engine) : 0,
                                 static_cast<int64_t>(sched.num_waiting_reqs));
    }
    loop_.After(0.1, [this] { EngineStep(); });
  }

  void WaitingSnapshots() {
    for (int replica = 0; replica < 2; ++replica) {
      if (speech_) speech_->OnWaitingSnapshot(2, replica, Pick(2));
      if (image_) image_->OnWaitingSnapshot(1, replica, Pick(2));
    }
    if (image_) image_->OnWaitingSnapshot(0, 0, Pick(2));
    loop_.After(0.5, [this] { WaitingSnapshots(); });
  }
  bool Speech() const { return options_.pipelines != SimPipelines::kImage; }
  bool Image() const { return options_.pipelines != SimPipelines::kSpeech; }

  const PipelineSimOptions& options_;
  std::mt19937_64 rng_;
  EventLoop loop_;
  Bindings speech_bindings_;
  Bindings image_bindings_;
  std::optional<pipeline::OmniMetrics> speech_;
  std::optional<pipeline::OmniMetrics> image_;
  std::optional<pipeline::AudioMetrics> audio_;
  std::optional<pipeline::RealtimeVadMetrics> vad_;
  std::optional<pipeline::DuplexMetrics> duplex_metrics_;
  std::optional<DuplexSessions> duplex_;  // records into duplex_metrics_
  std::unique_ptr<pipeline::EngineStatsLogger> engines_;
  uint64_t requests_ = 0;
  uint64_t speech_requests_ = 0;
  uint64_t image_requests_ = 0;
  uint64_t engine_steps_ = 0;
  uint64_t vad_sessions_ = 0;
  uint64_t messages_ = 0;
  int64_t batch_ = 0;
};

bool SplitHostPort(const std::string& listen, std::string* host, uint16_t* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  try {
    const int p = std::stoi(listen.substr(colon + 1));
    if (p < 0 || p > 65535) return false;
    *port = static_cast<uint16_t>(p);
  } catch (...) {
    return false;
  }
  return !host->empty();
}

}  // namespace

struct PipelineSimulation::Impl {
  explicit Impl(PipelineSimOptions o)
      : options(std::move(o)),
        registry(RegistryOptions{.enabled = options.log_stats}),
        simulation(options, registry) {}
  PipelineSimOptions options;
  Registry registry;
  Simulation simulation;
  std::thread thread;
};

PipelineSimulation::PipelineSimulation(PipelineSimOptions options) {
  options.log_interval = std::chrono::milliseconds(0);
  if (options.out == nullptr) options.out = &std::cout;
  impl_ = std::make_unique<Impl>(std::move(options));
}

PipelineSimulation::~PipelineSimulation() { Stop(); }

void PipelineSimulation::Start() {
  if (impl_->thread.joinable()) return;
  impl_->simulation.Start();
  impl_->thread = std::thread(
      [impl = impl_.get()] { impl->simulation.Run(Clock::now() + std::chrono::hours(24 * 365)); });
}

void PipelineSimulation::Stop() {
  impl_->simulation.loop().Stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void PipelineSimulation::Pause() { impl_->simulation.loop().Pause(); }
void PipelineSimulation::Resume() { impl_->simulation.loop().Resume(); }

std::string PipelineSimulation::Render() const { return impl_->registry.Render(Format::kText); }
const Registry& PipelineSimulation::registry() const { return impl_->registry; }

int RunPipelineSimulator(const PipelineSimOptions& in) {
  PipelineSimOptions options = in;
  if (options.out == nullptr) options.out = &std::cout;
  net::ServerOptions server_options;
  if (!SplitHostPort(options.listen, &server_options.address, &server_options.port)) {
    std::cerr << "simulate pipeline: --listen must be HOST:PORT, got " << options.listen << "\n";
    return 2;
  }
  Registry registry(RegistryOptions{.enabled = options.log_stats});
  Simulation simulation(options, registry);
  pipeline::MetricsEndpoint endpoint(registry);
  net::HttpServer server(server_options);
  endpoint.Install(server);
  if (const base::Status started = server.Start(); !started.ok()) {
    std::cerr << "simulate pipeline: " << started.message() << "\n";
    return 1;
  }
  *options.out << "serving /metrics on http://" << server_options.address << ":" << server.port()
               << "/metrics (log-stats " << (options.log_stats ? "on" : "off") << ")\n";
  options.out->flush();
  simulation.Start();
  if (options.wait) {
    std::thread runner([&] { simulation.Run(Clock::now() + options.duration); });
    options.wait(options.duration);
    simulation.loop().Stop();
    runner.join();
  } else {
    simulation.Run(Clock::now() + options.duration);
  }
  if (options.before_stop) options.before_stop(server.port());
  server.Stop();
  simulation.PrintTables();
  return 0;
}

}  // namespace modelmetrics::sim
