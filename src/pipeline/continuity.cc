// The continuity player simulation and RTF helpers. See continuity.h for the contract.
#include "pipeline/continuity.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace modelmetrics::pipeline {

ContinuityStats ComputeContinuityStats(std::span<const double> arrivals_s,
                                       std::span<const uint64_t> chunk_bytes,
                                       const PcmFormat& format, double threshold_s) {
  const size_t n = arrivals_s.size();
  if (n == 0 || n != chunk_bytes.size()) return {};
  // Python computes sample_rate * sample_width * channels on ints; the product as a double is the
  // same value for every realistic format and never overflows.
  const double bps = static_cast<double>(format.sample_rate) *
                     static_cast<double>(format.sample_width) *
                     static_cast<double>(format.channels);
  if (!(bps > 0)) return {};
  // One sample frame: the smallest deficit a player can actually run short of.
  const double frame_bytes = std::max(
      static_cast<double>(format.sample_width) * static_cast<double>(format.channels), 1.0);

  const double t0 = arrivals_s[0];
  double received = 0.0;
  double max_underrun_s = 0.0;
  int64_t events = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) {
      const double played = (arrivals_s[i] - t0) * bps;
      const double deficit = played - received;
      if (deficit >= frame_bytes) {  // upstream main line: deficit > 0 (see the header)
        max_underrun_s = std::max(max_underrun_s, deficit / bps);
        ++events;
      }
    }
    received += static_cast<double>(chunk_bytes[i]);
  }
  return {.max_underrun_s = max_underrun_s,
          .underrun_event_count = events,
          .is_continuous = max_underrun_s <= threshold_s};
}

std::optional<ContinuityStats> RollUpContinuityStats(std::span<const ContinuityStats> stats) {
  if (stats.empty()) return std::nullopt;
  ContinuityStats out;
  for (const ContinuityStats& s : stats) {
    out.max_underrun_s = std::max(out.max_underrun_s, s.max_underrun_s);
    out.underrun_event_count += s.underrun_event_count;
    out.is_continuous = out.is_continuous && s.is_continuous;
  }
  return out;
}

double ComputeAudioRtf(double gen_s, double duration_s) {
  if (!(duration_s > 0)) return 0.0;  // Python: `if duration_s <= 0`; NaN divides to NaN there
  return gen_s / duration_s;
}

int64_t ComputeAudioFrames(uint64_t nbytes, int64_t sample_width, int64_t channels) {
  if (sample_width <= 0 || channels <= 0) return 0;
  const uint64_t frame = static_cast<uint64_t>(sample_width) * static_cast<uint64_t>(channels);
  return static_cast<int64_t>(nbytes / frame);
}

int64_t ThresholdMs(double threshold_s) {
  const double ms = threshold_s * 1000.0;
  if (std::isnan(ms)) return 0;
  constexpr double kMax = 9.2e18;  // below 2^63, so the cast is defined
  if (ms >= kMax) return std::numeric_limits<int64_t>::max();
  if (ms <= -kMax) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(ms);  // truncates toward zero, as Python's int()
}

std::string ThresholdMsLabel(double threshold_s) {
  return std::to_string(ThresholdMs(threshold_s));
}

}  // namespace modelmetrics::pipeline
