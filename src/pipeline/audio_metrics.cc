// The audio and Speech streaming observe layer. See audio_metrics.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/audio_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/mutex.h"

namespace modelmetrics::pipeline {
namespace {

constexpr std::string_view kAudioOutputType = "audio";

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Python int(str) for ASCII input: surrounding whitespace, one sign, digits with single
// underscores between them. nullopt on anything else or beyond int64.
std::optional<int64_t> ParsePythonInt(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() == '_' || s.back() == '_') return std::nullopt;
  uint64_t value = 0;
  char prev = 0;
  for (char c : s) {
    if (c == '_') {
      if (prev == '_') return std::nullopt;
    } else if (c >= '0' && c <= '9') {
      const uint64_t digit = static_cast<uint64_t>(c - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
      value = value * 10 + digit;
    } else {
      return std::nullopt;
    }
    prev = c;
  }
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  const auto v = static_cast<int64_t>(value);
  return negative ? -v : v;
}

// The first coercible key of one source (`resolve_int_by_sequential_keys`).
std::optional<int64_t> ResolveOne(const SampleRateKeys& keys) {
  for (const std::optional<MetaValue>* key : {&keys.output_sample_rate, &keys.audio_sample_rate,
                                              &keys.sample_rate, &keys.sampling_rate, &keys.sr}) {
    if (!key->has_value()) continue;
    if (std::optional<int64_t> v = CoercePositiveInt(**key)) return v;
  }
  return std::nullopt;
}

}  // namespace

// ---- Metadata helpers ----

MetaValue MetaValue::List(std::vector<MetaValue> items) {
  MetaValue v;
  v.type_ = Type::kList;
  v.items_ = std::move(items);
  return v;
}

MetaValue MetaValue::Tensor(std::optional<MetaValue> item) {
  MetaValue v;
  v.type_ = Type::kTensor;
  if (item.has_value()) v.items_.push_back(std::move(*item));
  return v;
}

std::optional<int64_t> CoercePositiveInt(const MetaValue& value) {
  std::optional<int64_t> out;
  switch (value.type_) {
    case MetaValue::Type::kNone:
      return std::nullopt;
    case MetaValue::Type::kList:
      for (const MetaValue& item : value.items_) {
        if (std::optional<int64_t> v = CoercePositiveInt(item)) return v;
      }
      return std::nullopt;
    case MetaValue::Type::kTensor:
      if (value.items_.empty()) return std::nullopt;  // item() raised
      return CoercePositiveInt(value.items_.front());
    case MetaValue::Type::kBool:
    case MetaValue::Type::kInt:
      out = value.int_;
      break;
    case MetaValue::Type::kFloat:
      // int(float) truncates; NaN raises ValueError (-> none); upstream lets int(inf)'s
      // OverflowError escape, here it is simply none.
      if (!std::isfinite(value.float_) || std::fabs(value.float_) >= 9.2e18) return std::nullopt;
      out = static_cast<int64_t>(value.float_);
      break;
    case MetaValue::Type::kString:
      out = ParsePythonInt(value.string_);
      break;
  }
  if (out.has_value() && *out > 0) return out;
  return std::nullopt;
}

std::optional<int64_t> ResolveAudioSampleRateOrNone(std::span<const SampleRateKeys> sources) {
  for (const SampleRateKeys& source : sources) {
    if (std::optional<int64_t> v = ResolveOne(source)) return v;
  }
  return std::nullopt;
}

int64_t ResolveAudioSampleRate(std::span<const SampleRateKeys> sources, int64_t default_rate) {
  return ResolveAudioSampleRateOrNone(sources).value_or(default_rate);
}

int64_t CountAudioChunkFrames(const AudioChunk& chunk) {
  if (!chunk.shape.empty()) return chunk.shape.back();
  if (chunk.length.has_value()) return *chunk.length;
  return 1;
}

int64_t CountAudioFrames(const MultimodalAudio& mm) {
  const std::optional<std::vector<AudioChunk>>& chunks = mm.audio ? mm.audio : mm.model_outputs;
  if (!chunks) return 0;
  int64_t total = 0;
  for (const AudioChunk& chunk : *chunks) total += CountAudioChunkFrames(chunk);
  return total;
}

// ---- Families ----

namespace {

bool InAudioGroups(const FamilySpec& spec) {
  return std::find(std::begin(AudioFamilies::kGroups), std::end(AudioFamilies::kGroups),
                   spec.group) != std::end(AudioFamilies::kGroups);
}

}  // namespace

base::Status AudioFamilies::Register(Registry& registry, AudioFamilies* out) {
  AudioFamilies f;
  const std::span<const FamilySpec> rows = OmniFamilies();  // catalog order: the render order
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!InAudioGroups(rows[i])) continue;
    if (base::Status s = RegisterFamily(registry, rows[i], &f.table[i]); !s.ok()) return s;
  }
  *out = f;
  return base::Status::Ok();
}

bool AudioFamilies::Complete() const {
  const std::span<const FamilySpec> rows = OmniFamilies();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (InAudioGroups(rows[i]) && std::holds_alternative<std::monostate>(table[i])) return false;
  }
  return true;
}

// ---- AudioMetrics ----

AudioMetrics::AudioMetrics(Registry& registry, std::string model_name, AudioMetricsOptions options)
    : model_name_(std::move(model_name)) {
  const base::Status registered = AudioFamilies::Register(registry, &families_);
  ok_ = registered.ok();
  error_ = registered.message();
  Init(registry, std::move(options));
}

AudioMetrics::AudioMetrics(const Registry& registry, const AudioFamilies& families,
                           std::string model_name, AudioMetricsOptions options)
    : families_(families), model_name_(std::move(model_name)) {
  ok_ = families_.Complete();
  if (!ok_) error_ = "incomplete AudioFamilies";
  Init(registry, std::move(options));
}

AudioMetrics::~AudioMetrics() = default;

void AudioMetrics::Init(const Registry& registry, AudioMetricsOptions options) {
  live_ = ok_ && registry.enabled();
  const double t = options.continuity_threshold_s;
  threshold_s_ = (std::isfinite(t) && t >= 0) ? t : kAudioContinuityDefaultThresholdS;
  resolver_ = std::move(options.replica_resolver);
  recorder_ =
      std::make_unique<ObserveRecorder>(ok_ ? families_.table : FamilyTable{}, model_name_, live_);
}

void AudioMetrics::Continuity(int stage, int replica, std::span<const double> arrivals_s,
                              std::span<const uint64_t> chunk_bytes, const PcmFormat& format,
                              double threshold_s) {
  const ContinuityStats stats =
      ComputeContinuityStats(arrivals_s, chunk_bytes, format, threshold_s);
  recorder_->Call<observe::kObserveAudioUnderrun>(stage, replica, stats.max_underrun_s);
  if (stats.is_continuous) {
    recorder_->Call<observe::kIncAudioContinuityOk>(stage, replica, ThresholdMs(threshold_s));
  }
}

// ---- Direct observe API ----

void AudioMetrics::ObserveAudioTtfp(std::string_view stage, std::string_view replica,
                                    double seconds) {
  recorder_->Call<observe::kObserveAudioTtfp>(stage, replica, seconds);
}

void AudioMetrics::ObserveAudioDuration(std::string_view stage, std::string_view replica,
                                        double seconds) {
  recorder_->Call<observe::kObserveAudioDuration>(stage, replica, seconds);
}

void AudioMetrics::ObserveAudioRtf(std::string_view stage, std::string_view replica, double rtf) {
  recorder_->Call<observe::kObserveAudioRtf>(stage, replica, rtf);
}

void AudioMetrics::IncAudioFrames(std::string_view stage, std::string_view replica,
                                  int64_t frames) {
  recorder_->Call<observe::kIncAudioFrames>(stage, replica, frames);
}

void AudioMetrics::ObserveAudioUnderrun(std::string_view stage, std::string_view replica,
                                        double seconds) {
  recorder_->Call<observe::kObserveAudioUnderrun>(stage, replica, seconds);
}

void AudioMetrics::IncAudioContinuityOk(std::string_view stage, std::string_view replica,
                                        int64_t threshold_ms) {
  recorder_->Call<observe::kIncAudioContinuityOk>(stage, replica, threshold_ms);
}

void AudioMetrics::IncAudioSkipped(std::string_view stage, std::string_view replica,
                                   std::string_view reason) {
  recorder_->Call<observe::kIncAudioSkipped>(stage, replica, reason);
}

void AudioMetrics::IncSpeechStreamCompleted() {
  recorder_->Call<observe::kIncSpeechStreamCompleted>();
}

void AudioMetrics::IncSpeechStreamAborted(std::string_view reason) {
  recorder_->Call<observe::kIncSpeechStreamAborted>(reason);
}

std::string_view AudioMetrics::NormalizeAbortReason(std::string_view reason) {
  return Bounded(reason, kSpeechAbortReasons, kSpeechAbortFallbackReason);
}

// ---- Request-level helpers ----

void AudioMetrics::ObserveAudioFirstPacket(int stage, std::optional<int> replica, double arrival_ts,
                                           double now_ts) {
  if (!live_ || !replica || !(arrival_ts > 0)) return;
  recorder_->Call<observe::kObserveAudioTtfp>(stage, *replica, std::max(now_ts - arrival_ts, 0.0));
}

void AudioMetrics::ObserveAudioStreamingFinalize(int stage, std::optional<int> replica,
                                                 std::span<const double> arrivals_s,
                                                 std::span<const uint64_t> chunk_bytes,
                                                 const PcmFormat& format,
                                                 std::optional<double> threshold_s) {
  if (!live_ || !replica || arrivals_s.empty()) return;
  // Upstream scores a mismatched timeline as (0, 0, continuous) and so reports a broken
  // recording as perfect playback (cf. #6914); here it emits nothing, like an empty one.
  if (arrivals_s.size() != chunk_bytes.size()) return;
  double threshold = threshold_s_;
  if (threshold_s && std::isfinite(*threshold_s) && *threshold_s >= 0) threshold = *threshold_s;
  Continuity(stage, *replica, arrivals_s, chunk_bytes, format, threshold);
}

void AudioMetrics::ObserveFinalize(int stage, std::optional<int> replica,
                                   const AudioFinalize& input) {
  if (!live_ || !replica || !input.has_stage_metrics) return;
  if (input.output_type != kAudioOutputType) return;
  const SampleRateKeys sources[] = {input.mm.rate};
  const int64_t sample_rate = ResolveAudioSampleRate(sources);
  int64_t frames = input.audio_generated_frames;
  if (frames == 0) frames = CountAudioFrames(input.mm);
  recorder_->Call<observe::kIncAudioFrames>(stage, *replica, frames);  // drops <= 0
  const double duration =
      sample_rate > 0 ? static_cast<double>(frames) / static_cast<double>(sample_rate) : 0.0;
  if (duration > 0) {
    recorder_->Call<observe::kObserveAudioDuration>(stage, *replica, duration);
    recorder_->Call<observe::kObserveAudioRtf>(
        stage, *replica, ComputeAudioRtf(input.stage_gen_time_ms / 1000.0, duration));
  } else {
    recorder_->Call<observe::kIncAudioSkipped>(stage, *replica, kNoAudioDataReason);
  }
}

// ---- Streams ----

bool AudioMetrics::BeginStream(std::string_view request_id, StreamKind kind) {
  if (!live_) return false;
  base::MutexLock lock(&streams_mu_);
  if (streams_.find(request_id) != streams_.end()) return false;
  Stream stream;
  stream.kind = kind;
  streams_.emplace(std::string(request_id), std::move(stream));
  return true;
}

bool AudioMetrics::OnPcmChunk(std::string_view request_id, const PcmChunk& chunk) {
  if (!live_) return false;
  bool resolve = false;
  {
    base::MutexLock lock(&streams_mu_);
    auto it = streams_.find(request_id);
    if (it == streams_.end()) return false;
    if (chunk.bytes == 0) return true;  // header-only or empty payload: not audio
    resolve = !it->second.labels_known && !chunk.replica.has_value() && resolver_ != nullptr;
  }
  std::optional<int> replica = chunk.replica;
  if (resolve) replica = resolver_(chunk.stage, request_id);  // no lock held

  bool observe_ttfp = false;
  int stage = 0;
  int replica_id = 0;
  double ttfp = 0;
  {
    base::MutexLock lock(&streams_mu_);
    auto it = streams_.find(request_id);
    if (it == streams_.end()) return false;  // ended meanwhile
    Stream& s = it->second;
    if (!s.have_first_pcm) {
      s.have_first_pcm = true;
      s.first_pcm_wall_ts = chunk.wall_ts;
    }
    s.arrivals_s.push_back(chunk.mono_ts);
    s.chunk_bytes.push_back(chunk.bytes);
    if (!s.labels_known && replica.has_value()) {
      s.labels_known = true;
      s.stage = chunk.stage;
      s.replica = *replica;
    }
    if (!s.ttfp_done && s.labels_known && chunk.request_arrival_ts > 0) {
      s.ttfp_done = true;
      observe_ttfp = true;
      stage = s.stage;
      replica_id = s.replica;
      ttfp = std::max(s.first_pcm_wall_ts - chunk.request_arrival_ts, 0.0);
    }
  }
  if (observe_ttfp) recorder_->Call<observe::kObserveAudioTtfp>(stage, replica_id, ttfp);
  return true;
}

bool AudioMetrics::CompleteStream(std::string_view request_id, const PcmFormat& format) {
  if (!live_) return false;
  Stream s;
  {
    base::MutexLock lock(&streams_mu_);
    auto it = streams_.find(request_id);
    if (it == streams_.end()) return false;
    s = std::move(it->second);
    streams_.erase(it);
  }
  if (s.kind == StreamKind::kSpeech) IncSpeechStreamCompleted();
  if (s.labels_known && !s.arrivals_s.empty()) {
    Continuity(s.stage, s.replica, s.arrivals_s, s.chunk_bytes, format, threshold_s_);
  }
  return true;
}

bool AudioMetrics::AbortStream(std::string_view request_id, std::string_view reason) {
  if (!live_) return false;
  StreamKind kind;
  {
    base::MutexLock lock(&streams_mu_);
    auto it = streams_.find(request_id);
    if (it == streams_.end()) return false;
    kind = it->second.kind;
    streams_.erase(it);
  }
  if (kind == StreamKind::kSpeech) IncSpeechStreamAborted(reason);
  return true;
}

size_t AudioMetrics::open_streams() const {
  base::MutexLock lock(&streams_mu_);
  return streams_.size();
}

}  // namespace modelmetrics::pipeline
