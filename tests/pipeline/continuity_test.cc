// The continuity player simulation and RTF helpers (src/pipeline/continuity.h) against
// shared/spec/reference/pipeline-metrics-behaviour.md: the §4.1 worked values, and one test per
// case of upstream's tests/benchmarks/test_audio_continuity.py (same inputs, same expectations;
// pytest.approx(x, abs=1e-6) becomes EXPECT_NEAR). The two float-rounding cases and the roll-up
// come from the newer revision (fork dshah1333/vllm-omni) that §4.1 and §7 describe.
#include "pipeline/continuity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace modelmetrics::pipeline {
namespace {

constexpr int64_t kSr = 24000;
constexpr uint64_t kBps = kSr * 2;  // s16le mono: 48000 bytes per second

ContinuityStats Stats(const std::vector<double>& arrivals, const std::vector<uint64_t>& bytes,
                      PcmFormat format = {}, double threshold_s = 0.1) {
  return ComputeContinuityStats(arrivals, bytes, format, threshold_s);
}

// ---- §4.1 worked values (24 kHz s16le mono unless stated) ----

struct WorkedValue {
  std::vector<double> arrivals;
  std::vector<uint64_t> bytes;
  PcmFormat format;
  double threshold_s;
  ContinuityStats expected;
};

TEST(ContinuityWorkedValues, ReferenceTable) {
  const PcmFormat mono;
  const PcmFormat stereo100{.sample_rate = 100, .channels = 2, .sample_width = 2};
  const WorkedValue cases[] = {
      {{0.0, 0.5}, {4800, 4800}, mono, 0.1, {0.4, 1, false}},
      {{0, 0.3, 0.45}, {4800, 4800, 4800}, mono, 0.1, {0.25, 2, false}},
      {{0, 0.2}, {4800, 4800}, mono, 0.1, {0.1, 1, true}},
      {{0.5, 1.0, 1.5}, {24000, 24000, 24000}, mono, 0.1, {0, 0, true}},
      {{0, 2.0}, {24000, 24000}, mono, 0.1, {1.5, 1, false}},
      {{0, 1.0}, {200, 200}, stereo100, 0.1, {0.5, 1, false}},
      {{0, 0.3}, {4800, 4800}, mono, 0.5, {0.2, 1, true}},
  };
  for (const WorkedValue& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "arrivals[1]=" << c.arrivals[1] << " thr=" << c.threshold_s);
    const ContinuityStats got = Stats(c.arrivals, c.bytes, c.format, c.threshold_s);
    EXPECT_NEAR(got.max_underrun_s, c.expected.max_underrun_s, 1e-9);
    EXPECT_EQ(got.underrun_event_count, c.expected.underrun_event_count);
    EXPECT_EQ(got.is_continuous, c.expected.is_continuous);
  }
}

// ---- tests/benchmarks/test_audio_continuity.py ----

TEST(TestAudioContinuity, EmptyTimelineIsContinuous) {
  EXPECT_EQ(Stats({}, {}), (ContinuityStats{0.0, 0, true}));
}

TEST(TestAudioContinuity, SingleChunkHasNoUnderrun) {
  const ContinuityStats s = Stats({0.05}, {kBps});
  EXPECT_EQ(s.max_underrun_s, 0.0);
  EXPECT_EQ(s.underrun_event_count, 0);
  EXPECT_TRUE(s.is_continuous);
}

TEST(TestAudioContinuity, ChunksFasterThanRealtimeHaveNoUnderrun) {
  const ContinuityStats s = Stats({0.0, 0.05, 0.10, 0.15}, std::vector<uint64_t>(4, kBps / 10));
  EXPECT_EQ(s.max_underrun_s, 0.0);
  EXPECT_EQ(s.underrun_event_count, 0);
  EXPECT_TRUE(s.is_continuous);
}

TEST(TestAudioContinuity, SingleGapAboveThresholdBreaksContinuity) {
  const ContinuityStats s = Stats({0.0, 0.5}, {kBps / 10, kBps / 10}, {}, 0.1);
  EXPECT_NEAR(s.max_underrun_s, 0.4, 1e-6);
  EXPECT_EQ(s.underrun_event_count, 1);
  EXPECT_FALSE(s.is_continuous);
}

TEST(TestAudioContinuity, UnderrunIsMaxAcrossGapsNotSum) {
  const ContinuityStats s = Stats({0.0, 0.3, 0.45}, {kBps / 10, kBps / 10, kBps / 10}, {}, 0.1);
  EXPECT_NEAR(s.max_underrun_s, 0.25, 1e-6);
  EXPECT_EQ(s.underrun_event_count, 2);
  EXPECT_FALSE(s.is_continuous);
}

TEST(TestAudioContinuity, ContinuityThresholdBoundaryInclusive) {
  const ContinuityStats s = Stats({0.0, 0.2}, {kBps / 10, kBps / 10}, {}, 0.1);
  EXPECT_NEAR(s.max_underrun_s, 0.1, 1e-6);
  EXPECT_TRUE(s.is_continuous);
}

TEST(TestAudioContinuity, MismatchedLengthsReturnsZeroStats) {
  EXPECT_EQ(Stats({0.0, 0.1}, {100}), (ContinuityStats{0.0, 0, true}));
}

TEST(TestAudioContinuity, ThresholdIsConfigurable) {
  const std::vector<double> arrivals = {0.0, 0.3};
  const std::vector<uint64_t> bytes = {kBps / 10, kBps / 10};
  const ContinuityStats strict = Stats(arrivals, bytes, {}, 0.1);
  const ContinuityStats lenient = Stats(arrivals, bytes, {}, 0.5);
  EXPECT_FALSE(strict.is_continuous);
  EXPECT_TRUE(lenient.is_continuous);
  EXPECT_EQ(strict.max_underrun_s, lenient.max_underrun_s);
}

// Newer revision: the one-frame floor (our deliberate difference; the main line's `> 0` counts 8
// ghost events with max ~5.8e-12 s on this input).
TEST(TestAudioContinuity, ExactlyOnTimeArrivalsReportNoUnderrunEvents) {
  std::vector<double> arrivals;
  for (int i = 0; i < 20; ++i) arrivals.push_back(123'456.0 + i * 0.1);
  const ContinuityStats s = Stats(arrivals, std::vector<uint64_t>(20, kBps / 10), {}, 0.1);
  EXPECT_EQ(s.underrun_event_count, 0);
  EXPECT_EQ(s.max_underrun_s, 0.0);
  EXPECT_TRUE(s.is_continuous);
}

TEST(TestAudioContinuity, ASubMillisecondGapStillCounts) {
  const double gap_s = 10.0 / kSr;  // ~417 us
  const ContinuityStats s = Stats({123'456.0, 123'456.1 + gap_s}, {kBps / 10, kBps / 10}, {}, 0.1);
  EXPECT_EQ(s.underrun_event_count, 1);
  EXPECT_NEAR(s.max_underrun_s, gap_s, 1e-6);
  EXPECT_TRUE(s.is_continuous);
}

TEST(TestAudioContinuity, RollUpIsEmptyWhenNoResponseCarriedAudio) {
  EXPECT_EQ(RollUpContinuityStats({}), std::nullopt);
}

TEST(TestAudioContinuity, RollUpTakesTheWorstResponseNotTheAverage) {
  const ContinuityStats clean{0.0, 0, true};
  const ContinuityStats stalled{3.0, 2, false};
  std::vector<ContinuityStats> all(9, clean);
  all.push_back(stalled);
  EXPECT_EQ(RollUpContinuityStats(all), (ContinuityStats{3.0, 2, false}));
}

TEST(TestAudioContinuity, RollUpSumsEventsAcrossResponses) {
  const std::vector<ContinuityStats> all = {{0.2, 3, false}, {0.5, 4, false}};
  const std::optional<ContinuityStats> rolled = RollUpContinuityStats(all);
  ASSERT_TRUE(rolled.has_value());
  EXPECT_DOUBLE_EQ(rolled->max_underrun_s, 0.5);
  EXPECT_EQ(rolled->underrun_event_count, 7);
}

// ---- Edges of §4.1 step 2 and the helpers (§4.2, §4.4) ----

TEST(Continuity, NoBytesPerSecondIsContinuous) {
  EXPECT_EQ(Stats({0.0, 5.0}, {2, 2}, {.sample_rate = 0}), (ContinuityStats{0.0, 0, true}));
  EXPECT_EQ(Stats({0.0, 5.0}, {2, 2}, {.sample_rate = 24000, .channels = -1}),
            (ContinuityStats{0.0, 0, true}));
}

TEST(Continuity, DeficitIsCumulativeWithoutRebuffering) {
  // Once behind, every later short interval is another event (§4.1 notes).
  const ContinuityStats s = Stats({0, 1.0, 1.1, 1.2}, {4800, 4800, 4800, 4800});
  EXPECT_EQ(s.underrun_event_count, 3);
  EXPECT_NEAR(s.max_underrun_s, 0.9, 1e-9);
}

TEST(Continuity, AudioRtf) {
  EXPECT_EQ(ComputeAudioRtf(0.5, 1.0), 0.5);
  EXPECT_EQ(ComputeAudioRtf(0.45, 1.0), 0.45);
  EXPECT_EQ(ComputeAudioRtf(2.0, 0.0), 0.0);
  EXPECT_EQ(ComputeAudioRtf(2.0, -1.0), 0.0);
}

TEST(Continuity, AudioFramesFromBytes) {
  EXPECT_EQ(ComputeAudioFrames(4800), 2400);
  EXPECT_EQ(ComputeAudioFrames(4801), 2400);
  EXPECT_EQ(ComputeAudioFrames(400, 2, 2), 100);
  EXPECT_EQ(ComputeAudioFrames(400, 0, 1), 0);
  EXPECT_EQ(ComputeAudioFrames(400, 2, 0), 0);
}

TEST(Continuity, ThresholdMsTruncatesLikePythonInt) {
  EXPECT_EQ(ThresholdMsLabel(0.1), "100");
  EXPECT_EQ(ThresholdMsLabel(0.2), "200");
  EXPECT_EQ(ThresholdMsLabel(0.5), "500");
  EXPECT_EQ(ThresholdMsLabel(0.29), "290");
  EXPECT_EQ(ThresholdMsLabel(0.0295), "29");
  EXPECT_EQ(ThresholdMsLabel(1.005), "1004");  // 1004.9999999999999 truncated, as int() does
  EXPECT_EQ(ThresholdMs(0.0), 0);
  EXPECT_EQ(ThresholdMs(std::numeric_limits<double>::infinity()),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ThresholdMs(std::nan("")), 0);
}

}  // namespace
}  // namespace modelmetrics::pipeline
