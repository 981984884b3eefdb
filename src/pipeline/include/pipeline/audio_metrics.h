// The audio modality and Speech streaming observe layer: the seven `vllm_omni:audio_*` families
// (§3.2) and the two `vllm_omni:speech_stream_*` counters (§3.7),
// fed by per-request events.
//
// Contract.
// - Families come from catalog.h (OmniFamilies(), groups kAudio and kSpeech) with the catalog's
//   bind rule (all lazy today: a child appears on its first observation that passes the guard)
//   and guard (frames: skip <= 0; underrun: clamp to >= 0). With stats off (Registry::enabled()
//   false) every method returns at once, no per-request state is kept, and no lazy series ever
//   appears; eager children (none in these groups today) would render zeros.
// - Labels: stage and replica are the decimal ids (§1). The string-label methods (the upstream
//   `OmniModalityMetrics` API) take any label text, as upstream's tests do.
// - Finalize (§4.3, `observe_modality_at_finalize`, audio part): nothing without a replica or
//   stage metrics, or when output_type != "audio"; frames are the stage's generated frames, else
//   counted from the multimodal output; the sample rate comes from the §4.4 key chain (default
//   24000); duration and RTF only when duration > 0, else
//   `audio_skipped_requests_total{reason="no_audio_data"}`. The diffusion half of the upstream
//   dispatcher belongs to the diffusion owner.
// - Streams (§3.7, §4.1, §4.5). BeginStream when a streaming audio generator starts (Chat or
//   Speech), OnPcmChunk for every raw PCM payload (empty ones, e.g. a header-only WAV chunk, are
//   ignored), then exactly one of CompleteStream (normal exhaustion) or AbortStream
//   (interrupted); a second end, or events for a request that was never begun, are ignored.
//   - Labels: the chunk's replica, else (only while unresolved) the ReplicaResolver, i.e. the
//     stage pool's binding (§4.5, PR #4974). The first resolved (stage, replica) labels TTFP,
//     underrun and continuity.
//   - TTFP: once per request, `max(first_pcm_wall_ts - request_arrival_ts, 0)` where
//     first_pcm_wall_ts is the wall time of the first non-empty payload. An unresolved replica
//     or arrival <= 0 does not consume the once-guard: a later payload retries with the same
//     first-payload time (the Speech behaviour of PR #6853; applied to Chat too).
//   - CompleteStream runs the continuity simulation (continuity.h) over the recorded timeline
//     with the stream's real format and observes `audio_underrun_s` plus, when continuous,
//     `audio_continuity_ok_total{threshold_ms}`; nothing when no PCM arrived or the replica never
//     resolved. Speech streams also count `speech_stream_completed_total`.
//   - AbortStream emits no underrun or continuity (§3.7); Speech streams count
//     `speech_stream_aborted_total{reason}`, the reason bounded to kSpeechAbortReasons and
//     anything else counted as "error" (the generic-exception bucket).
//   - Non-streaming Speech: call nothing here (no TTFP, no continuity, no stream counters).
//
// Thread-safety: every method may be called concurrently from any thread. Per-request stream
// state lives in a map under one mutex (held for map operations only: never while observing,
// computing continuity or calling the resolver). Observations are the rows of observe_table.h
// carried out by an ObserveRecorder (children cached, found without a lock).
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_AUDIO_METRICS_H_
#define MODELMETRICS_PIPELINE_AUDIO_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/continuity.h"
#include "pipeline/observe_recorder.h"
#include "pipeline/replica_resolver.h"

namespace modelmetrics::pipeline {

// ---- Output metadata (what the audio path reads from a Python `multimodal_output`) ----

// A dynamically typed metadata value, as far as sample-rate coercion needs it (§4.4).
class MetaValue {
 public:
  enum class Type : uint8_t { kNone, kBool, kInt, kFloat, kString, kList, kTensor };
  MetaValue() = default;                                      // None
  MetaValue(bool v) : type_(Type::kBool), int_(v ? 1 : 0) {}  // NOLINT: implicit, like Python
  MetaValue(int v) : type_(Type::kInt), int_(v) {}            // NOLINT
  MetaValue(int64_t v) : type_(Type::kInt), int_(v) {}        // NOLINT
  MetaValue(double v) : type_(Type::kFloat), float_(v) {}     // NOLINT
  MetaValue(std::string v) : type_(Type::kString), string_(std::move(v)) {}  // NOLINT
  MetaValue(const char* v) : MetaValue(std::string(v)) {}                    // NOLINT
  static MetaValue List(std::vector<MetaValue> items);
  // An object with `.item()` (tensor or numpy scalar); nullopt means item() raises.
  static MetaValue Tensor(std::optional<MetaValue> item);

  Type type() const { return type_; }

 private:
  friend std::optional<int64_t> CoercePositiveInt(const MetaValue& value);
  Type type_ = Type::kNone;
  int64_t int_ = 0;
  double float_ = 0;
  std::string string_;
  std::vector<MetaValue> items_;  // kList items, or kTensor's single item (empty: item() raises)
};

// `coerce_positive_int_scalar` (§4.4): None -> none; list -> first item that coerces; tensor ->
// its item(); else Python int() (floats truncate, "24000" parses, "24000.0" does not, True is 1);
// only results > 0.
std::optional<int64_t> CoercePositiveInt(const MetaValue& value);

// One source of the sample-rate chain: the §4.4 keys, in the order they are tried. An absent key
// and a present None both fall through to the next key; an all-absent source is a falsy one.
struct SampleRateKeys {
  std::optional<MetaValue> output_sample_rate;
  std::optional<MetaValue> audio_sample_rate;
  std::optional<MetaValue> sample_rate;
  std::optional<MetaValue> sampling_rate;
  std::optional<MetaValue> sr;
};

// `resolve_audio_sample_rate_or_none` over a sequence of sources: the first source whose first
// coercible key gives a positive int wins.
std::optional<int64_t> ResolveAudioSampleRateOrNone(std::span<const SampleRateKeys> sources);
int64_t ResolveAudioSampleRate(std::span<const SampleRateKeys> sources,
                               int64_t default_rate = kDefaultAudioSampleRate);

// One audio chunk of a multimodal output: frames are `shape[-1]` for a non-empty shape, else
// `len(chunk)` when it has one, else 1 (`count_audio_chunk_frames`).
struct AudioChunk {
  std::vector<int64_t> shape;
  std::optional<int64_t> length;
};
int64_t CountAudioChunkFrames(const AudioChunk& chunk);

// The extracted `multimodal_output` mapping (§4.3 `extract_mm_output`; `{}` when there is none).
struct MultimodalAudio {
  SampleRateKeys rate;
  // mm["audio"] and mm["model_outputs"]; nullopt for an absent key or None. A non-list value is
  // a one-element list.
  std::optional<std::vector<AudioChunk>> audio;
  std::optional<std::vector<AudioChunk>> model_outputs;
};
// `count_audio_frames`: the first non-None of audio and model_outputs, summed per chunk.
int64_t CountAudioFrames(const MultimodalAudio& mm);

// The finalize input of one request's final audio stage (§4.3).
struct AudioFinalize {
  std::string_view output_type;        // only "audio" takes the audio path
  bool has_stage_metrics = true;       // false: stage_metrics is None, nothing is observed
  double stage_gen_time_ms = 0;        // stage submit -> finished output (includes queueing, §4.2)
  int64_t audio_generated_frames = 0;  // 0: count them from `mm`
  MultimodalAudio mm;
};

// ---- Families and the observe layer ----

// The audio (§3.2) and speech (§3.7) families of one registry. A registry takes each name once,
// so several models (AudioMetrics instances) share one AudioFamilies.
struct AudioFamilies {
  static constexpr Group kGroups[] = {Group::kAudio, Group::kSpeech};

  // The families by id (monostate outside the two groups), for an ObserveRecorder.
  FamilyTable table;

  // Registers every kAudio and kSpeech family of OmniFamilies() into `*out`, in catalog order;
  // an error when a name is taken (the families registered before the failure stay registered,
  // `*out` as was).
  static base::Status Register(Registry& registry, AudioFamilies* out);
  // Every family of the two groups is there.
  bool Complete() const;
};

enum class StreamKind : uint8_t {
  kChat,    // OpenAI chat SSE audio: TTFP and continuity, no stream counters
  kSpeech,  // Speech raw/SSE/WebSocket audio generators: also completed/aborted counters
};

// One raw PCM payload of a stream, as its output path saw it.
struct PcmChunk {
  int stage = 0;
  std::optional<int> replica;     // the output message's replica id (None -> resolver)
  uint64_t bytes = 0;             // raw PCM bytes, WAV headers excluded; 0 is ignored
  double request_arrival_ts = 0;  // wall seconds the request arrived (<= 0: unknown)
  double wall_ts = 0;             // wall seconds now (time.time()), for TTFP
  double mono_ts = 0;             // monotonic seconds now (perf_counter()), for the timeline
};

// Replica binding of a request at a stage (the stage pool's `get_bound_replica_id`), consulted
// only when a payload carries no replica; nullopt when unbound. Called without this object's
// locks held, possibly from several threads at once.

struct AudioMetricsOptions {
  // The stage layout: replicas_per_stage[s] replicas for stage s (kept for callers; every
  // (stage, replica) pair's children are cached alike).
  std::vector<int> replicas_per_stage;
  // Continuity threshold (inclusive); NaN, infinite or negative values fall back to 0.1 s.
  double continuity_threshold_s = kAudioContinuityDefaultThresholdS;
  ReplicaResolver replica_resolver;
};

class AudioMetrics {
 public:
  // Registers the families in `registry`. If that fails (names already taken: share an
  // AudioFamilies instead), the object is inert: ok() is false and every method is a no-op.
  AudioMetrics(Registry& registry, std::string model_name, AudioMetricsOptions options = {});
  // Uses families registered elsewhere (several models in one registry). `registry` must be the
  // one that holds them; it and the families outlive this object.
  AudioMetrics(const Registry& registry, const AudioFamilies& families, std::string model_name,
               AudioMetricsOptions options = {});
  ~AudioMetrics();
  AudioMetrics(const AudioMetrics&) = delete;
  AudioMetrics& operator=(const AudioMetrics&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const AudioFamilies& families() const { return families_; }
  const std::string& model_name() const { return model_name_; }
  double continuity_threshold_s() const { return threshold_s_; }

  // ---- Direct observe API (upstream OmniModalityMetrics; labels as given) ----
  void ObserveAudioTtfp(std::string_view stage, std::string_view replica, double seconds);
  void ObserveAudioDuration(std::string_view stage, std::string_view replica, double seconds);
  void ObserveAudioRtf(std::string_view stage, std::string_view replica, double rtf);
  void IncAudioFrames(std::string_view stage, std::string_view replica, int64_t frames);  // > 0
  void ObserveAudioUnderrun(std::string_view stage, std::string_view replica, double seconds);
  void IncAudioContinuityOk(std::string_view stage, std::string_view replica, int64_t threshold_ms);
  void IncAudioSkipped(std::string_view stage, std::string_view replica,
                       std::string_view reason);  // "" -> "unknown"
  void IncSpeechStreamCompleted();
  void IncSpeechStreamAborted(std::string_view reason);  // normalised, see NormalizeAbortReason

  // ---- Request-level helpers (upstream module functions; numeric ids) ----
  // §4.5 `observe_audio_first_packet`: skipped without a replica or when arrival_ts <= 0.
  void ObserveAudioFirstPacket(int stage, std::optional<int> replica, double arrival_ts,
                               double now_ts);
  // §4.1 `observe_audio_streaming_finalize`: skipped without a replica or arrivals; underrun
  // always, continuity_ok when continuous. `threshold_s` nullopt: the configured threshold.
  void ObserveAudioStreamingFinalize(int stage, std::optional<int> replica,
                                     std::span<const double> arrivals_s,
                                     std::span<const uint64_t> chunk_bytes,
                                     const PcmFormat& format = {},
                                     std::optional<double> threshold_s = std::nullopt);
  // §4.3, the audio part of `observe_modality_at_finalize`.
  void ObserveFinalize(int stage, std::optional<int> replica, const AudioFinalize& input);

  // ---- Streams ----
  // False when stats are off or the request already has a stream (the first one is kept).
  bool BeginStream(std::string_view request_id, StreamKind kind);
  // False when the request has no open stream (never begun, or already ended) or stats are off.
  bool OnPcmChunk(std::string_view request_id, const PcmChunk& chunk);
  bool CompleteStream(std::string_view request_id, const PcmFormat& format = {});
  bool AbortStream(std::string_view request_id, std::string_view reason);
  size_t open_streams() const;

  // kSpeechAbortReasons map to themselves; anything else (including "") to "error".
  static std::string_view NormalizeAbortReason(std::string_view reason);

 private:
  struct Stream {
    StreamKind kind = StreamKind::kChat;
    bool labels_known = false;  // stage/replica resolved
    int stage = 0;
    int replica = 0;
    bool have_first_pcm = false;
    double first_pcm_wall_ts = 0;
    bool ttfp_done = false;
    std::vector<double> arrivals_s;  // the continuity timeline (monotonic seconds)
    std::vector<uint64_t> chunk_bytes;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void Init(const Registry& registry, AudioMetricsOptions options);
  // Underrun, and continuity_ok when continuous, of one finished timeline.
  void Continuity(int stage, int replica, std::span<const double> arrivals_s,
                  std::span<const uint64_t> chunk_bytes, const PcmFormat& format,
                  double threshold_s);

  bool ok_ = false;
  bool live_ = false;  // ok_ and the registry is enabled
  std::string error_;
  AudioFamilies families_;
  std::string model_name_;
  double threshold_s_ = kAudioContinuityDefaultThresholdS;
  ReplicaResolver resolver_;
  std::unique_ptr<ObserveRecorder> recorder_;  // the rows of kModalityMethods' audio part

  mutable base::Mutex streams_mu_;
  std::unordered_map<std::string, Stream, StringHash, std::equal_to<>> streams_
      GUARDED_BY(streams_mu_);
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_AUDIO_METRICS_H_
