// Audio streaming continuity (the listener's player simulation) and real-time-factor helpers.
//
// Contract. Pure functions over a chunk timeline; no registry, no clock, no allocation except the
// returned values. They reproduce docs/pipeline-behaviour.md:
//   - ComputeContinuityStats: §4.1 (`compute_continuity_stats`, PR #3618). The playback clock
//     starts at the first chunk's arrival with no pre-roll; before chunk i (i > 0) is counted,
//     the bytes the player wanted by then minus the bytes received so far is the deficit; the
//     worst deficit (not the sum) in seconds is `max_underrun_s`; `is_continuous` is
//     `max_underrun_s <= threshold_s` (inclusive). An empty or mismatched timeline, or a format
//     with no bytes per second, is (0, 0, continuous).
//     Deliberate difference (docs/pipeline-metrics.md): a deficit counts (event and max) only
//     when it is at least one sample frame (sample_width * channels bytes), so float rounding on
//     a stream fed exactly on time (wall-clock arrivals around 1e5 s) cannot invent events;
//     upstream's main line counts any deficit > 0 (§9.3). No worked value of §4.1 changes.
//   - RollUpContinuityStats: the §4.1/§7 roll-up (worst max, summed events, all continuous).
//   - ComputeAudioRtf: §4.2 (`compute_audio_rtf`): gen / duration, 0 when duration <= 0.
//   - ComputeAudioFrames: §4.4 (`compute_audio_frames`): bytes // (width * channels).
//   - ThresholdMsLabel: the `threshold_ms` label, `str(int(threshold_s * 1000))`: the double
//     product truncated toward zero, as Python's int() does (0.1 -> "100").
//
// Thread-safety: stateless; safe from any thread.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_CONTINUITY_H_
#define MODELMETRICS_PIPELINE_CONTINUITY_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "pipeline/catalog.h"

namespace modelmetrics::pipeline {

// Raw PCM layout of a stream (s16le mono 24 kHz unless told otherwise, §2.2).
struct PcmFormat {
  int64_t sample_rate = kDefaultAudioSampleRate;  // Hz
  int64_t channels = kDefaultAudioChannels;
  int64_t sample_width = kDefaultAudioSampleWidth;  // bytes per sample
};

struct ContinuityStats {
  double max_underrun_s = 0.0;
  int64_t underrun_event_count = 0;
  bool is_continuous = true;
  bool operator==(const ContinuityStats&) const = default;
};

// `arrivals_s[i]`: seconds (any origin; only differences matter) at which non-empty chunk i's last
// byte arrived, assumed non-decreasing; `chunk_bytes[i]`: its raw PCM bytes, headers excluded.
ContinuityStats ComputeContinuityStats(std::span<const double> arrivals_s,
                                       std::span<const uint64_t> chunk_bytes,
                                       const PcmFormat& format = {},
                                       double threshold_s = kAudioContinuityDefaultThresholdS);

// Worst response of a run: max of max_underrun_s, sum of events, all continuous; nullopt when
// `stats` is empty (no response carried audio).
std::optional<ContinuityStats> RollUpContinuityStats(std::span<const ContinuityStats> stats);

double ComputeAudioRtf(double gen_s, double duration_s);

// Whole sample frames in `nbytes`; 0 when width or channels are <= 0.
int64_t ComputeAudioFrames(uint64_t nbytes, int64_t sample_width = kDefaultAudioSampleWidth,
                           int64_t channels = kDefaultAudioChannels);

// `int(threshold_s * 1000)` for a finite threshold (saturating at the int64 range); the
// caller validates the threshold (AudioMetrics falls back to the default for NaN or < 0).
int64_t ThresholdMs(double threshold_s);
std::string ThresholdMsLabel(double threshold_s);

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_CONTINUITY_H_
