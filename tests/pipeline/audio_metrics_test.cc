// The audio and Speech streaming observe layer (src/pipeline/audio_metrics.h), asserted on the
// rendered text exposition. One test per upstream case, named after it, with the upstream inputs
// and expected values (shared/spec/reference/pipeline-metrics-behaviour.md §7):
//   - tests/metrics/test_modality.py @ fceffaac (audio parts; the diffusion cases belong to the
//     diffusion breakdown's owner). Upstream's stub-recorder cases assert on the call list; here
//     the same expectations are read from the exposition.
//   - tests/metrics/test_metrics_utils.py @ ec80c0bf, audio frame counting.
//   - the serving-chat streaming test (tests/entrypoints, test_streaming_audio_metrics_resolve_
//     replica_id) and the Speech streaming metrics tests of PR #6853 (tests/entrypoints, the
//     serving_speech metrics cases), driven through BeginStream/OnPcmChunk/Complete/Abort with
//     the clocks upstream monkeypatches.
// Plus the §4.4 sample-rate chain, gating (§4.8) and a concurrency smoke test.
#include "pipeline/audio_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "modelmetrics/metrics.h"

namespace modelmetrics::pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// `_sample_value` of the upstream tests: the value of the first line starting with `prefix`.
std::optional<double> SampleValue(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(prefix)) continue;
    const std::string value = line.substr(line.rfind(' ') + 1);
    if (value == "+Inf") return std::numeric_limits<double>::infinity();
    return std::strtod(value.c_str(), nullptr);
  }
  return std::nullopt;
}

// `{model_name="<model>",replica="<replica>",stage="<stage>"}` (labels sorted by name).
std::string StageLabels(const std::string& model, const std::string& stage,
                        const std::string& replica) {
  return "{model_name=\"" + model + "\",replica=\"" + replica + "\",stage=\"" + stage + "\"}";
}

constexpr const char* kModalityModel = "test-modality-model";

// ---------------------------------------------------------------------------------------------
// tests/metrics/test_modality.py
// ---------------------------------------------------------------------------------------------

TEST(TestModalityTestRegistration, AllLockedFamiliesPresent) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  ASSERT_TRUE(mod.ok()) << mod.error();
  mod.ObserveAudioTtfp("s", "r", 0.1);
  mod.ObserveAudioDuration("s", "r", 1.0);
  mod.ObserveAudioRtf("s", "r", 0.5);
  mod.IncAudioFrames("s", "r", 1);
  mod.ObserveAudioUnderrun("s", "r", 0.01);
  mod.IncAudioContinuityOk("s", "r", 100);
  mod.IncAudioSkipped("s", "r", "malformed_codec");
  const std::string out = registry.Render(Format::kText);
  for (const char* name :
       {"vllm_omni:audio_ttfp_s", "vllm_omni:audio_duration_s", "vllm_omni:audio_rtf",
        "vllm_omni:audio_frames_total", "vllm_omni:audio_underrun_s",
        "vllm_omni:audio_continuity_ok_total", "vllm_omni:audio_skipped_requests_total"}) {
    EXPECT_THAT(out, HasSubstr(std::string("# HELP ") + name + " ")) << name;
  }
  EXPECT_THAT(out, Not(HasSubstr("_total_total")));
}

TEST(TestModalityTestAudio, AudioTtfpObserved) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioTtfp("talker_ttfp", "0", 0.42);
  const std::string out = registry.Render(Format::kText);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_count" +
                                 StageLabels(kModalityModel, "talker_ttfp", "0")),
            1.0);
}

TEST(TestModalityTestAudio, AudioDurationObserved) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioDuration("talker_dur", "0", 3.5);
  EXPECT_THAT(registry.Render(Format::kText),
              HasSubstr("vllm_omni:audio_duration_s_sum" +
                        StageLabels(kModalityModel, "talker_dur", "0") + " 3.5\n"));
}

TEST(TestModalityTestAudio, AudioRtfObserved) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioRtf("talker_rtf", "0", 0.45);
  EXPECT_THAT(registry.Render(Format::kText),
              HasSubstr("vllm_omni:audio_rtf_sum" + StageLabels(kModalityModel, "talker_rtf", "0") +
                        " 0.45\n"));
}

TEST(TestModalityTestAudio, AudioFramesInc) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.IncAudioFrames("talker_frames", "0", 240);
  mod.IncAudioFrames("talker_frames", "0", 60);
  EXPECT_THAT(registry.Render(Format::kText),
              HasSubstr("vllm_omni:audio_frames_total" +
                        StageLabels(kModalityModel, "talker_frames", "0") + " 300.0\n"));
}

TEST(TestModalityTestAudio, AudioFramesZeroOrNegativeSkipped) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.IncAudioFrames("talker_zero", "0", 0);
  mod.IncAudioFrames("talker_zero", "0", -5);
  const std::string out = registry.Render(Format::kText);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_frames_total" +
                                 StageLabels(kModalityModel, "talker_zero", "0")),
            std::nullopt);
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_frames_total{")));  // no child at all
}

TEST(TestModalityTestAudio, AudioUnderrunObserved) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioUnderrun("talker_under", "0", 0.05);
  EXPECT_THAT(registry.Render(Format::kText),
              HasSubstr("vllm_omni:audio_underrun_s_sum" +
                        StageLabels(kModalityModel, "talker_under", "0") + " 0.05\n"));
}

TEST(TestModalityTestAudio, AudioUnderrunNegativeClampedToZero) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioUnderrun("talker_under_neg", "0", -0.1);
  const std::string labels = StageLabels(kModalityModel, "talker_under_neg", "0");
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_underrun_s_sum" + labels + " 0.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_underrun_s_count" + labels + " 1.0\n"));
}

TEST(TestModalityTestAudio, AudioContinuityOkCarriesThresholdLabel) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.IncAudioContinuityOk("talker_cont", "0", 100);
  mod.IncAudioContinuityOk("talker_cont", "0", 200);
  const std::string out = registry.Render(Format::kText);
  const std::string base = std::string("vllm_omni:audio_continuity_ok_total{model_name=\"") +
                           kModalityModel + "\",replica=\"0\",stage=\"talker_cont\",";
  EXPECT_EQ(SampleValue(out, base + "threshold_ms=\"100\"}"), 1.0);
  EXPECT_EQ(SampleValue(out, base + "threshold_ms=\"200\"}"), 1.0);
}

TEST(TestModalityTestAudio, AudioSkippedCarriesReasonLabel) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.IncAudioSkipped("talker_skip", "0", "malformed_codec");
  mod.IncAudioSkipped("talker_skip", "0", "");  // -> "unknown"
  const std::string out = registry.Render(Format::kText);
  const std::string base =
      std::string("vllm_omni:audio_skipped_requests_total{model_name=\"") + kModalityModel + "\",";
  EXPECT_EQ(
      SampleValue(out, base + "reason=\"malformed_codec\",replica=\"0\",stage=\"talker_skip\"}"),
      1.0);
  EXPECT_EQ(SampleValue(out, base + "reason=\"unknown\",replica=\"0\",stage=\"talker_skip\"}"),
            1.0);
}

// TestDiffusion.test_log_stats_false_skips, on the audio families of this class.
TEST(TestModalityTestDiffusion, LogStatsFalseSkips) {
  Registry registry(RegistryOptions{.enabled = false});
  AudioMetrics silent(registry, "silent-model");
  ASSERT_TRUE(silent.ok());
  silent.ObserveAudioTtfp("s", "r", 1.0);
  silent.ObserveAudioDuration("s", "r", 1.0);
  silent.ObserveAudioRtf("s", "r", 0.5);
  silent.IncAudioFrames("s", "r", 10);
  silent.ObserveAudioUnderrun("s", "r", 0.5);
  silent.IncAudioContinuityOk("s", "r", 100);
  silent.IncAudioSkipped("s", "r", "x");
  silent.IncSpeechStreamCompleted();
  silent.IncSpeechStreamAborted("cancelled");
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"silent-model\"")));
}

AudioFinalize AudioInput(double gen_ms, int64_t frames) {
  AudioFinalize in;
  in.output_type = "audio";
  in.stage_gen_time_ms = gen_ms;
  in.audio_generated_frames = frames;
  return in;
}

TEST(TestModalityTestObserveModalityAtFinalize, AudioPathFull) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  AudioFinalize in = AudioInput(500.0, 24000);
  in.mm.rate.audio_sample_rate = 24000;
  mod.ObserveFinalize(1, 0, in);
  const std::string out = registry.Render(Format::kText);
  const std::string labels = StageLabels("m", "1", "0");
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_frames_total" + labels + " 24000.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_duration_s_sum" + labels + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_duration_s_count" + labels + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_rtf_sum" + labels + " 0.5\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_rtf_count" + labels + " 1.0\n"));
  // Continuity/underrun come from the streaming hook, never from finalize.
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_underrun_s_count{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_skipped_requests_total{")));
}

TEST(TestModalityTestObserveModalityAtFinalize, AudioPathZeroFramesEmitsSkipped) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  mod.ObserveFinalize(1, 0, AudioInput(300.0, 0));  // multimodal_output {}
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_frames_total{")));  // frames(0) is dropped
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_duration_s_count{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_rtf_count{")));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_skipped_requests_total{model_name=\"m\","
                             "reason=\"no_audio_data\",replica=\"0\",stage=\"1\"} 1.0\n"));
}

TEST(TestModalityTestObserveModalityAtFinalize, AudioUsesResolvedSampleRateFromMultimodalOutput) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  AudioFinalize in = AudioInput(1000.0, 16000);
  in.mm.rate.sample_rate = 16000;
  mod.ObserveFinalize(1, 0, in);
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out,
              HasSubstr("vllm_omni:audio_duration_s_sum" + StageLabels("m", "1", "0") + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_rtf_sum" + StageLabels("m", "1", "0") + " 1.0\n"));
}

TEST(TestModalityTestObserveModalityAtFinalize,
     NonAudioOutputTypeSkipsAudioButStillChecksDiffusion) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  for (const char* type : {"text", "image", "video"}) {
    AudioFinalize in = AudioInput(100.0, 0);
    in.output_type = type;
    mod.ObserveFinalize(0, 0, in);
  }
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"m\"")));
}

TEST(TestModalityTestObserveModalityAtFinalize, ReplicaIdNoneSkipped) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  mod.ObserveFinalize(1, std::nullopt, AudioInput(500.0, 240));
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"m\"")));
}

TEST(TestModalityTestObserveModalityAtFinalize, StageMetricsNoneSkipped) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  AudioFinalize in;
  in.output_type = "audio";
  in.has_stage_metrics = false;
  mod.ObserveFinalize(1, 0, in);
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"m\"")));
}

TEST(TestModalityTestObserveAudioFirstPacket, ObservesWithValidInputs) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  mod.ObserveAudioFirstPacket(1, 0, 100.0, 100.42);
  const std::string out = registry.Render(Format::kText);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_count" + StageLabels("m", "1", "0")), 1.0);
  const std::optional<double> sum =
      SampleValue(out, "vllm_omni:audio_ttfp_s_sum" + StageLabels("m", "1", "0"));
  ASSERT_TRUE(sum.has_value());
  EXPECT_NEAR(*sum, 0.42, 1e-9);  // pytest.approx(0.42)
}

TEST(TestModalityTestObserveAudioFirstPacket, ReplicaNoneSkipped) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  mod.ObserveAudioFirstPacket(1, std::nullopt, 100.0, 100.5);
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"m\"")));
}

TEST(TestModalityTestObserveAudioFirstPacket, ArrivalTsZeroSkipped) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  mod.ObserveAudioFirstPacket(1, 0, 0.0, 100.5);
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"m\"")));
}

TEST(TestModalityTestObserveAudioFirstPacket, ClockSkewClampedToZero) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  mod.ObserveAudioFirstPacket(1, 0, 100.5, 100.0);
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_sum" + StageLabels("m", "1", "0") + " 0.0\n"));
  EXPECT_THAT(out,
              HasSubstr("vllm_omni:audio_ttfp_s_count" + StageLabels("m", "1", "0") + " 1.0\n"));
}

TEST(TestModalityTestObserveAudioStreamingFinalize, ContinuousRunEmitsUnderrunAndContinuityOk) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  const std::vector<double> arrivals = {0.5, 1.0, 1.5};
  const std::vector<uint64_t> bytes = {24000, 24000, 24000};
  mod.ObserveAudioStreamingFinalize(1, 0, arrivals, bytes, {.sample_rate = 24000}, 0.1);
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out,
              HasSubstr("vllm_omni:audio_underrun_s_sum" + StageLabels("m", "1", "0") + " 0.0\n"));
  EXPECT_THAT(
      out, HasSubstr("vllm_omni:audio_underrun_s_count" + StageLabels("m", "1", "0") + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_continuity_ok_total{model_name=\"m\",replica=\"0\","
                             "stage=\"1\",threshold_ms=\"100\"} 1.0\n"));
}

TEST(TestModalityTestObserveAudioStreamingFinalize,
     LateChunkEmitsNonzeroUnderrunAndNoContinuityInc) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  const std::vector<double> arrivals = {0.0, 2.0};
  const std::vector<uint64_t> bytes = {24000, 24000};
  mod.ObserveAudioStreamingFinalize(1, 0, arrivals, bytes, {.sample_rate = 24000}, 0.1);
  const std::string out = registry.Render(Format::kText);
  const std::optional<double> sum =
      SampleValue(out, "vllm_omni:audio_underrun_s_sum" + StageLabels("m", "1", "0"));
  ASSERT_TRUE(sum.has_value());
  EXPECT_GT(*sum, 0.1);
  EXPECT_EQ(*sum, 1.5);
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
}

TEST(TestModalityTestObserveAudioStreamingFinalize, StereoChannelCountIsUsedForPlaybackRate) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  const std::vector<double> arrivals = {0.0, 1.0};
  const std::vector<uint64_t> bytes = {200, 200};
  mod.ObserveAudioStreamingFinalize(1, 0, arrivals, bytes, {.sample_rate = 100, .channels = 2},
                                    0.1);
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out,
              HasSubstr("vllm_omni:audio_underrun_s_sum" + StageLabels("m", "1", "0") + " 0.5\n"));
  EXPECT_THAT(
      out, HasSubstr("vllm_omni:audio_underrun_s_count" + StageLabels("m", "1", "0") + " 1.0\n"));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
}

TEST(TestModalityTestObserveAudioStreamingFinalize, EmptyArrivalsSkipped) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  mod.ObserveAudioStreamingFinalize(1, 0, {}, {}, {.sample_rate = 24000});
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"m\"")));
}

TEST(TestModalityTestObserveAudioStreamingFinalize, ReplicaNoneSkipped) {
  Registry registry;
  AudioMetrics mod(registry, "m");
  const std::vector<double> arrivals = {0.5};
  const std::vector<uint64_t> bytes = {24000};
  mod.ObserveAudioStreamingFinalize(1, std::nullopt, arrivals, bytes, {.sample_rate = 24000});
  EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("model_name=\"m\"")));
}

TEST(TestModalityTestBucketSelection, AudioRtfUsesRtfBuckets) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioRtf("talker_buckets", "0", 0.5);
  EXPECT_THAT(registry.Render(Format::kText), HasSubstr("vllm_omni:audio_rtf_bucket{le=\"0.9\""));
}

TEST(TestModalityTestBucketSelection, AudioTtfpUsesSecondsBuckets) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioTtfp("talker_seconds", "0", 0.1);
  EXPECT_THAT(registry.Render(Format::kText),
              HasSubstr("vllm_omni:audio_ttfp_s_bucket{le=\"0.05\""));
}

TEST(TestModalityTestBucketSelection, AudioUnderrunUsesSecondsFastBuckets) {
  Registry registry;
  AudioMetrics mod(registry, kModalityModel);
  mod.ObserveAudioUnderrun("talker_fast", "0", 0.005);
  EXPECT_THAT(registry.Render(Format::kText),
              HasSubstr("vllm_omni:audio_underrun_s_bucket{le=\"0.001\""));
}

// ---------------------------------------------------------------------------------------------
// tests/metrics/test_metrics_utils.py (audio parts)
// ---------------------------------------------------------------------------------------------

TEST(TestMetricsUtils, CountAudioChunkFrames) {
  EXPECT_EQ(CountAudioChunkFrames({.shape = {2, 320}}), 320);  // SimpleNamespace(shape=(2, 320))
  EXPECT_EQ(CountAudioChunkFrames({.length = 3}), 3);          // [0.0, 0.0, 0.0]
  EXPECT_EQ(CountAudioChunkFrames({}), 1);                     // 1.0
}

TEST(TestMetricsUtils, CountAudioFramesSumsAudioChunks) {
  MultimodalAudio mm;
  mm.audio = std::vector<AudioChunk>{{.shape = {1, 120}}, {.shape = {2, 80}}};
  EXPECT_EQ(CountAudioFrames(mm), 200);
}

TEST(TestMetricsUtils, CountAudioFramesSupportsModelOutputs) {
  MultimodalAudio mm;
  mm.model_outputs = std::vector<AudioChunk>{{.shape = {1, 120}}, {.shape = {2, 80}}};
  EXPECT_EQ(CountAudioFrames(mm), 200);
}

TEST(TestMetricsUtils, CountAudioFramesReturnsZeroWithoutAudio) {
  EXPECT_EQ(CountAudioFrames({}), 0);  // {}, {"audio": None} and {"model_outputs": None}
}

// ---------------------------------------------------------------------------------------------
// §4.4 sample-rate chain
// ---------------------------------------------------------------------------------------------

int64_t Rate(const SampleRateKeys& keys) {
  const SampleRateKeys sources[] = {keys};
  return ResolveAudioSampleRate(sources);
}

TEST(SampleRateChain, KeysAreTriedInOrder) {
  EXPECT_EQ(Rate({.audio_sample_rate = 22050, .sample_rate = 16000}), 22050);
  EXPECT_EQ(Rate({.output_sample_rate = 48000, .sr = 8000}), 48000);
  EXPECT_EQ(Rate({.output_sample_rate = MetaValue(), .sr = 8000}), 8000);  // None falls through
  EXPECT_EQ(Rate({.sampling_rate = 44100}), 44100);
  EXPECT_EQ(Rate({}), kDefaultAudioSampleRate);
}

TEST(SampleRateChain, CoercionFollowsPython) {
  EXPECT_EQ(CoercePositiveInt("24000"), 24000);
  EXPECT_EQ(CoercePositiveInt(" +24_000\n"), 24000);
  EXPECT_EQ(CoercePositiveInt("24000.0"), std::nullopt);
  EXPECT_EQ(CoercePositiveInt("24__000"), std::nullopt);
  EXPECT_EQ(CoercePositiveInt(""), std::nullopt);
  EXPECT_EQ(CoercePositiveInt(22050.9), 22050);
  EXPECT_EQ(CoercePositiveInt(0.5), std::nullopt);
  EXPECT_EQ(CoercePositiveInt(std::nan("")), std::nullopt);
  EXPECT_EQ(CoercePositiveInt(true), 1);
  EXPECT_EQ(CoercePositiveInt(false), std::nullopt);
  EXPECT_EQ(CoercePositiveInt(-16000), std::nullopt);
  EXPECT_EQ(CoercePositiveInt(MetaValue()), std::nullopt);
  EXPECT_EQ(CoercePositiveInt(MetaValue::List({MetaValue(), "x", 0, 16000, 8000})), 16000);
  EXPECT_EQ(CoercePositiveInt(MetaValue::Tensor(MetaValue(44100))), 44100);
  EXPECT_EQ(CoercePositiveInt(MetaValue::Tensor(std::nullopt)), std::nullopt);  // item() raises
  // A non-coercible first key falls through to the next one.
  EXPECT_EQ(Rate({.output_sample_rate = "fast", .sample_rate = "16000"}), 16000);
}

TEST(SampleRateChain, SequenceOfSourcesFirstThatYieldsWins) {
  // Stage-side chain: [multimodal_output, stage_client, stage_vllm_config].
  const SampleRateKeys sources[] = {{}, {.sr = 0}, {.sampling_rate = 16000}, {.sr = 8000}};
  EXPECT_EQ(ResolveAudioSampleRateOrNone(sources), 16000);
  EXPECT_EQ(ResolveAudioSampleRateOrNone(std::span<const SampleRateKeys>()), std::nullopt);
  const SampleRateKeys none[] = {{}, {.sr = -1}};
  EXPECT_EQ(ResolveAudioSampleRate(none, 0), 0);  // use_default off
}

// ---------------------------------------------------------------------------------------------
// Serving-chat streaming test: test_streaming_audio_metrics_resolve_replica_id
// ---------------------------------------------------------------------------------------------

struct ResolveCase {
  std::optional<int> output_replica_id;
  std::optional<int> pool_replica_id;
  int expected_replica_id;
  bool pool_lookup;
};

TEST(TestServingChat, StreamingAudioMetricsResolveReplicaId) {
  for (const ResolveCase& c :
       {ResolveCase{7, std::nullopt, 7, false}, ResolveCase{std::nullopt, 5, 5, true}}) {
    SCOPED_TRACE(c.expected_replica_id);
    Registry registry;
    std::vector<std::pair<int, std::string>> lookups;
    AudioMetricsOptions options;
    options.replicas_per_stage = {1, 1, 1};  // three stage pools
    options.replica_resolver = [&](int stage, std::string_view request_id) {
      lookups.emplace_back(stage, std::string(request_id));
      return c.pool_replica_id;
    };
    AudioMetrics metrics(registry, "test-model", options);
    const double now = 1'700'000'000.0;
    ASSERT_TRUE(metrics.BeginStream("internal-req", StreamKind::kChat));
    ASSERT_TRUE(metrics.OnPcmChunk("internal-req", {.stage = 2,
                                                    .replica = c.output_replica_id,
                                                    .bytes = 2400 * 2,  // audio_samples=2400
                                                    .request_arrival_ts = now - 1.0,
                                                    .wall_ts = now,
                                                    .mono_ts = 5.0}));
    ASSERT_TRUE(metrics.CompleteStream("internal-req", {.sample_rate = 24000}));

    if (c.pool_lookup) {
      EXPECT_EQ(lookups, (std::vector<std::pair<int, std::string>>{{2, "internal-req"}}));
    } else {
      EXPECT_TRUE(lookups.empty());
    }
    const std::string labels =
        StageLabels("test-model", "2", std::to_string(c.expected_replica_id));
    const std::string out = registry.Render(Format::kText);
    EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_count" + labels), 1.0);      // first packet
    EXPECT_EQ(SampleValue(out, "vllm_omni:audio_underrun_s_count" + labels), 1.0);  // finalize
    EXPECT_THAT(out, Not(HasSubstr("vllm_omni:speech_stream_completed_total{")));   // Chat
    EXPECT_EQ(metrics.open_streams(), 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// Speech streaming (PR #6853): the serving_speech metrics tests. The upstream `_result()` is 320
// samples of 16 kHz mono audio (`"sr": 16000`) from stage 1, replica 2: a 640-byte PCM payload.
// ---------------------------------------------------------------------------------------------

constexpr const char* kSpeechModel = "speech-model";
std::string SpeechLabels() { return StageLabels(kSpeechModel, "1", "2"); }

PcmChunk SpeechChunk(double wall_ts, double mono_ts, std::optional<int> replica = 2,
                     uint64_t samples = 320, double arrival_ts = 100.0) {
  return {.stage = 1,
          .replica = replica,
          .bytes = samples * 2,
          .request_arrival_ts = arrival_ts,
          .wall_ts = wall_ts,
          .mono_ts = mono_ts};
}

PcmFormat SpeechFormat() {
  SampleRateKeys mm;
  mm.sr = 16000;
  const SampleRateKeys sources[] = {mm};
  return {.sample_rate = ResolveAudioSampleRate(sources), .channels = 1};
}

TEST(TestServingSpeechMetrics, StreamingSpeechObservesTtfpOnceOnFirstPcmPayload) {
  Registry registry;
  AudioMetrics metrics(registry, kSpeechModel);
  ASSERT_TRUE(metrics.BeginStream("speech-test", StreamKind::kSpeech));
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 7.0));  // time.time() -> 100.25
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 7.0));
  ASSERT_TRUE(metrics.CompleteStream("speech-test", SpeechFormat()));
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_count" + SpeechLabels() + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_sum" + SpeechLabels() + " 0.25\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_underrun_s_count" + SpeechLabels() + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_underrun_s_sum" + SpeechLabels() + " 0.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_continuity_ok_total{model_name=\"speech-model\","
                             "replica=\"2\",stage=\"1\",threshold_ms=\"100\"} 1.0\n"));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:speech_stream_aborted_total{")));
  EXPECT_THAT(
      out, HasSubstr("vllm_omni:speech_stream_completed_total{model_name=\"speech-model\"} 1.0\n"));
}

TEST(TestServingSpeechMetrics, SpeechStreamAbortCountedOnceWithoutContinuity) {
  for (bool before_pcm : {true, false}) {
    for (const char* reason : {"cancelled", "engine_dead", "error"}) {
      SCOPED_TRACE(::testing::Message() << reason << " before_pcm=" << before_pcm);
      Registry registry;
      AudioMetrics metrics(registry, kSpeechModel);
      ASSERT_TRUE(metrics.BeginStream("speech-test", StreamKind::kSpeech));
      if (!before_pcm) metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.0));
      ASSERT_TRUE(metrics.AbortStream("speech-test", reason));
      const std::string out = registry.Render(Format::kText);
      EXPECT_THAT(out, HasSubstr(std::string("vllm_omni:speech_stream_aborted_total{model_name="
                                             "\"speech-model\",reason=\"") +
                                 reason + "\"} 1.0\n"));
      EXPECT_THAT(out, Not(HasSubstr("vllm_omni:speech_stream_completed_total{")));
      EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_count" + SpeechLabels()),
                before_pcm ? std::nullopt : std::optional<double>(1.0));
      EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_underrun_s_count{")));
      EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
    }
  }
}

TEST(TestServingSpeechMetrics, SpeechStreamCloseCountedOnceWithoutContinuity) {
  Registry registry;
  AudioMetrics metrics(registry, kSpeechModel);
  metrics.BeginStream("speech-test", StreamKind::kSpeech);
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.0));
  EXPECT_TRUE(metrics.AbortStream("speech-test", "closed"));
  EXPECT_FALSE(metrics.AbortStream("speech-test", "closed"));  // the second aclose()
  EXPECT_FALSE(metrics.CompleteStream("speech-test", SpeechFormat()));
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, HasSubstr("vllm_omni:speech_stream_aborted_total{model_name=\"speech-model\","
                             "reason=\"closed\"} 1.0\n"));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:speech_stream_completed_total{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_underrun_s_count{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
}

TEST(TestServingSpeechMetrics, StreamingSpeechRetriesTtfpLabelsWithoutMovingFirstPacketTime) {
  Registry registry;
  AudioMetrics metrics(registry, kSpeechModel);
  metrics.BeginStream("speech-test", StreamKind::kSpeech);
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.25, std::nullopt));
  metrics.OnPcmChunk("speech-test", SpeechChunk(101.0, 0.26, 2));
  metrics.OnPcmChunk("speech-test", SpeechChunk(101.25, 0.27, 2));
  metrics.CompleteStream("speech-test", SpeechFormat());
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_count" + SpeechLabels() + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_sum" + SpeechLabels() + " 0.25\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_underrun_s_sum" + SpeechLabels() + " 0.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_continuity_ok_total{model_name=\"speech-model\","
                             "replica=\"2\",stage=\"1\",threshold_ms=\"100\"} 1.0\n"));
}

TEST(TestServingSpeechMetrics, SpeechTtfpInvalidArrivalDoesNotConsumeGuard) {
  for (double arrival_ts : {0.0, -1.0}) {
    SCOPED_TRACE(arrival_ts);
    Registry registry;
    AudioMetrics metrics(registry, kSpeechModel);
    metrics.BeginStream("speech-test", StreamKind::kSpeech);
    metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.0, 2, 320, arrival_ts));
    EXPECT_THAT(registry.Render(Format::kText), Not(HasSubstr("vllm_omni:audio_ttfp_s_count{")));
    metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.0, 2, 320, 100.0));
    const std::string out = registry.Render(Format::kText);
    EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_count" + SpeechLabels() + " 1.0\n"));
    EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_sum" + SpeechLabels() + " 0.25\n"));
    metrics.AbortStream("speech-test", "closed");
  }
}

TEST(TestServingSpeechMetrics, StreamingSpeechDoesNotCountEmptyPayloadAsFirstPacket) {
  Registry registry;
  AudioMetrics metrics(registry, kSpeechModel);
  metrics.BeginStream("speech-test", StreamKind::kSpeech);
  // The empty payload comes first; its (later) clock must not be the first-packet time.
  EXPECT_TRUE(metrics.OnPcmChunk("speech-test", SpeechChunk(99.0, 0.0, 2, /*samples=*/0)));
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.0));
  metrics.CompleteStream("speech-test", SpeechFormat());
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_sum" + SpeechLabels() + " 0.25\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_ttfp_s_count" + SpeechLabels() + " 1.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_underrun_s_sum" + SpeechLabels() + " 0.0\n"));
  EXPECT_THAT(out, HasSubstr("vllm_omni:audio_continuity_ok_total{model_name=\"speech-model\","
                             "replica=\"2\",stage=\"1\",threshold_ms=\"100\"} 1.0\n"));
}

TEST(TestServingSpeechMetrics, StreamingSpeechDoesNotFinalizeContinuityOnError) {
  Registry registry;
  AudioMetrics metrics(registry, kSpeechModel);
  metrics.BeginStream("speech-test", StreamKind::kSpeech);
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.0));
  metrics.AbortStream("speech-test", "RuntimeError: stream failed");  // -> "error"
  const std::string out = registry.Render(Format::kText);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_count" + SpeechLabels()), 1.0);
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_underrun_s_count{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
  EXPECT_THAT(out, HasSubstr("vllm_omni:speech_stream_aborted_total{model_name=\"speech-model\","
                             "reason=\"error\"} 1.0\n"));
}

TEST(TestServingSpeechMetrics, StreamingSpeechReportsLateChunkAsUnderrun) {
  Registry registry;
  AudioMetrics metrics(registry, kSpeechModel);
  metrics.BeginStream("speech-test", StreamKind::kSpeech);
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.1));  // perf_counter 0.1
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 2.0));  // perf_counter 2.0
  metrics.CompleteStream("speech-test", SpeechFormat());
  const std::string out = registry.Render(Format::kText);
  const std::optional<double> underrun =
      SampleValue(out, "vllm_omni:audio_underrun_s_sum" + SpeechLabels());
  ASSERT_TRUE(underrun.has_value());
  EXPECT_GT(*underrun, 0.1);
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
}

TEST(TestServingSpeechMetrics, ResampledSpeechRecordsFlushWithAudioProducer) {
  for (bool flush_only : {false, true}) {
    SCOPED_TRACE(flush_only);
    Registry registry;
    AudioMetrics metrics(registry, kSpeechModel);
    metrics.BeginStream("speech-test", StreamKind::kSpeech);
    // The resampler emits 2400 samples at 24 kHz (4800 bytes) at clock 0.25 (unless flush-only)
    // and at the flush, clock 0.5; time.time() = 100 + clock.
    if (!flush_only) metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.25, 2, 2400));
    // The last result is not audio and must not supply the flush metric labels.
    metrics.OnPcmChunk("speech-test", {.stage = 9, .replica = 8, .bytes = 0});
    metrics.OnPcmChunk("speech-test", SpeechChunk(100.5, 0.5, 2, 2400));
    metrics.CompleteStream("speech-test", {.sample_rate = 24000, .channels = 1});
    const std::string out = registry.Render(Format::kText);
    const std::optional<double> ttfp =
        SampleValue(out, "vllm_omni:audio_ttfp_s_sum" + SpeechLabels());
    ASSERT_TRUE(ttfp.has_value());
    EXPECT_NEAR(*ttfp, flush_only ? 0.5 : 0.25, 1e-9);
    const std::optional<double> underrun =
        SampleValue(out, "vllm_omni:audio_underrun_s_sum" + SpeechLabels());
    ASSERT_TRUE(underrun.has_value());
    EXPECT_NEAR(*underrun, flush_only ? 0.0 : 0.15, 1e-9);
    EXPECT_EQ(SampleValue(out,
                          "vllm_omni:audio_continuity_ok_total{model_name=\"speech-model\","
                          "replica=\"2\",stage=\"1\",threshold_ms=\"100\"}"),
              flush_only ? std::optional<double>(1.0) : std::nullopt);
    EXPECT_THAT(out, Not(HasSubstr("stage=\"9\"")));
  }
}

TEST(TestServingSpeechMetrics, ResampledSpeechWithoutPcmDoesNotEmitMetrics) {
  Registry registry;
  AudioMetrics metrics(registry, kSpeechModel);
  metrics.BeginStream("speech-test", StreamKind::kSpeech);
  metrics.OnPcmChunk("speech-test", SpeechChunk(100.25, 0.25, 2, /*samples=*/0));
  metrics.CompleteStream("speech-test", {.sample_rate = 24000});
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_ttfp_s_count{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_underrun_s_count{")));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
  // The generator still exhausted normally.
  EXPECT_THAT(
      out, HasSubstr("vllm_omni:speech_stream_completed_total{model_name=\"speech-model\"} 1.0\n"));
}

// ---------------------------------------------------------------------------------------------
// Behaviour beyond the upstream cases
// ---------------------------------------------------------------------------------------------

TEST(AudioMetrics, AbortReasonsAreBounded) {
  EXPECT_EQ(AudioMetrics::NormalizeAbortReason("cancelled"), "cancelled");
  EXPECT_EQ(AudioMetrics::NormalizeAbortReason("closed"), "closed");
  EXPECT_EQ(AudioMetrics::NormalizeAbortReason("engine_dead"), "engine_dead");
  EXPECT_EQ(AudioMetrics::NormalizeAbortReason("error"), "error");
  EXPECT_EQ(AudioMetrics::NormalizeAbortReason(""), "error");
  EXPECT_EQ(AudioMetrics::NormalizeAbortReason("Cancelled"), "error");
  EXPECT_EQ(AudioMetrics::NormalizeAbortReason("timeout for request r-1"), "error");
}

TEST(AudioMetrics, StreamLifecycleIsExactlyOnce) {
  Registry registry;
  AudioMetrics metrics(registry, "m");
  EXPECT_FALSE(metrics.OnPcmChunk("never-begun", SpeechChunk(100.25, 0.0)));
  EXPECT_FALSE(metrics.CompleteStream("never-begun"));
  EXPECT_FALSE(metrics.AbortStream("never-begun", "closed"));
  EXPECT_TRUE(metrics.BeginStream("r", StreamKind::kSpeech));
  EXPECT_FALSE(metrics.BeginStream("r", StreamKind::kChat));  // first one kept
  EXPECT_EQ(metrics.open_streams(), 1u);
  EXPECT_TRUE(metrics.CompleteStream("r"));
  EXPECT_FALSE(metrics.CompleteStream("r"));
  EXPECT_FALSE(metrics.AbortStream("r", "closed"));
  EXPECT_EQ(metrics.open_streams(), 0u);
  const std::string out = registry.Render(Format::kText);
  EXPECT_THAT(out, HasSubstr("vllm_omni:speech_stream_completed_total{model_name=\"m\"} 1.0\n"));
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:speech_stream_aborted_total{")));
  // A completed stream without PCM emits no continuity (no 100 % by default, cf. #6914).
  EXPECT_THAT(out, Not(HasSubstr("vllm_omni:audio_continuity_ok_total{")));
}

TEST(AudioMetrics, ConfiguredThresholdLabelsTruncatedMilliseconds) {
  Registry registry;
  AudioMetricsOptions options;
  options.continuity_threshold_s = 0.0295;  // 29.5 ms -> "29"
  AudioMetrics metrics(registry, "m", options);
  EXPECT_EQ(metrics.continuity_threshold_s(), 0.0295);
  metrics.BeginStream("r", StreamKind::kChat);
  metrics.OnPcmChunk("r", {.stage = 0, .replica = 0, .bytes = 4800, .mono_ts = 0.0});
  metrics.OnPcmChunk("r", {.stage = 0, .replica = 0, .bytes = 4800, .mono_ts = 0.1});
  metrics.CompleteStream("r");
  EXPECT_THAT(registry.Render(Format::kText),
              HasSubstr("vllm_omni:audio_continuity_ok_total{model_name=\"m\",replica=\"0\","
                        "stage=\"0\",threshold_ms=\"29\"} 1.0\n"));
  AudioMetricsOptions bad;
  bad.continuity_threshold_s = std::nan("");
  Registry other;
  EXPECT_EQ(AudioMetrics(other, "m", bad).continuity_threshold_s(), 0.1);
}

TEST(AudioMetrics, GatingStatsOff) {
  Registry registry(RegistryOptions{.enabled = false});
  AudioMetricsOptions options;
  options.replicas_per_stage = {1, 2};
  options.replica_resolver = [](int, std::string_view) -> std::optional<int> {
    ADD_FAILURE() << "resolver called with stats off";
    return 0;
  };
  AudioMetrics metrics(registry, "gated", options);
  ASSERT_TRUE(metrics.ok());
  EXPECT_FALSE(metrics.BeginStream("r", StreamKind::kSpeech));
  EXPECT_FALSE(metrics.OnPcmChunk("r", {.stage = 1, .bytes = 4800, .request_arrival_ts = 1}));
  EXPECT_FALSE(metrics.CompleteStream("r"));
  EXPECT_FALSE(metrics.AbortStream("r", "closed"));
  metrics.ObserveAudioFirstPacket(1, 0, 100.0, 100.5);
  const std::vector<double> arrivals = {0.0, 1.0};
  const std::vector<uint64_t> bytes = {100, 100};
  metrics.ObserveAudioStreamingFinalize(1, 0, arrivals, bytes);
  metrics.ObserveFinalize(1, 0, AudioInput(500.0, 24000));
  metrics.ObserveFinalize(1, 1, AudioInput(500.0, 0));
  metrics.IncSpeechStreamCompleted();
  metrics.IncSpeechStreamAborted("closed");
  EXPECT_EQ(metrics.open_streams(), 0u);

  const std::string out = registry.Render(Format::kText);
  for (const FamilySpec& spec : OmniFamilies()) {
    if (spec.group != Group::kAudio && spec.group != Group::kSpeech) continue;
    const std::string name(spec.name);
    const std::string exposed = spec.kind == Kind::kCounter ? name + "_total" : name;
    EXPECT_THAT(out, HasSubstr("# TYPE " + exposed + " ")) << name;  // registered regardless
    if (spec.bind == Bind::kEager) {
      // Eager model-only children render zeros (none in these groups today).
      EXPECT_THAT(out, HasSubstr(exposed + "{model_name=\"gated\"} 0.0\n")) << name;
    }
  }
  EXPECT_THAT(out, Not(HasSubstr("model_name=\"gated\",")));  // no lazy child at all
}

TEST(AudioMetrics, SharedFamiliesServeSeveralModels) {
  Registry registry;
  AudioMetrics first(registry, "a");
  ASSERT_TRUE(first.ok());
  AudioMetrics second(registry, "b");  // same registry: the identical families are shared
  ASSERT_TRUE(second.ok());
  AudioMetrics third(registry, first.families(), "c");  // or handed over explicitly
  ASSERT_TRUE(third.ok());
  first.ObserveAudioFirstPacket(0, 0, 100.0, 100.5);
  second.ObserveAudioFirstPacket(0, 0, 100.0, 101.0);
  third.ObserveAudioFirstPacket(0, 0, 100.0, 102.0);
  const std::string out = registry.Render(Format::kText);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_sum" + StageLabels("a", "0", "0")), 0.5);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_sum" + StageLabels("b", "0", "0")), 1.0);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_sum" + StageLabels("c", "0", "0")), 2.0);
  size_t type_lines = 0;
  for (size_t at = out.find("# TYPE vllm_omni:audio_ttfp_s "); at != std::string::npos;
       at = out.find("# TYPE vllm_omni:audio_ttfp_s ", at + 1)) {
    ++type_lines;
  }
  EXPECT_EQ(type_lines, 1u);
}

TEST(AudioMetrics, ConcurrentStreamsAcrossLayoutAndOverflowSlots) {
  Registry registry;
  AudioMetricsOptions options;
  options.replicas_per_stage = {2};  // stage 0 cached; stage 3 goes through the overflow map
  options.replica_resolver = [](int, std::string_view) -> std::optional<int> { return 1; };
  AudioMetrics metrics(registry, "m", options);
  constexpr int kThreads = 4;
  constexpr int kStreams = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < kStreams; ++i) {
        const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        const int stage = (i % 2 == 0) ? 0 : 3;
        metrics.BeginStream(id, StreamKind::kSpeech);
        for (int c = 0; c < 3; ++c) {
          metrics.OnPcmChunk(id, {.stage = stage,
                                  .replica = (t % 2 == 0) ? std::optional<int>(0) : std::nullopt,
                                  .bytes = 4800,
                                  .request_arrival_ts = 100.0,
                                  .wall_ts = 100.5,
                                  .mono_ts = c * 0.05});
        }
        if (i % 5 == 4) {
          metrics.AbortStream(id, "cancelled");
        } else {
          metrics.CompleteStream(id);
        }
        metrics.IncAudioFrames("x", "y", 1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(metrics.open_streams(), 0u);
  const std::string out = registry.Render(Format::kText);
  // Threads 0 and 2 carry replica 0; 1 and 3 resolve to replica 1. Half the streams per stage.
  for (const char* stage : {"0", "3"}) {
    for (const char* replica : {"0", "1"}) {
      EXPECT_EQ(SampleValue(out, "vllm_omni:audio_ttfp_s_count" + StageLabels("m", stage, replica)),
                2 * kStreams / 2)
          << stage << "/" << replica;
    }
  }
  EXPECT_EQ(SampleValue(out, "vllm_omni:speech_stream_completed_total{model_name=\"m\"}"),
            kThreads * kStreams * 4 / 5);
  EXPECT_EQ(SampleValue(out,
                        "vllm_omni:speech_stream_aborted_total{model_name=\"m\","
                        "reason=\"cancelled\"}"),
            kThreads * kStreams / 5);
  EXPECT_EQ(SampleValue(out, "vllm_omni:audio_frames_total" + StageLabels("m", "x", "y")),
            kThreads * kStreams);
}

}  // namespace
}  // namespace modelmetrics::pipeline
