// The observe table's rows against the catalog, and ObserveRecorder carrying a row out from C++.
#include "pipeline/observe_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "modelmetrics/metrics.h"
#include "pipeline/observe_recorder.h"
#include "toy_observe_row.h"

namespace modelmetrics::pipeline {
namespace {

template <typename F>
void ForEachRow(F&& f) {
  for (const ObserveMethod& m : kPrometheusMethods) f(m);
  for (const ObserveMethod& m : kModalityMethods) f(m);
  for (const ObserveMethod& m : kTransferMethods) f(m);
  for (const ObserveMethod& m : kRealtimeMethods) f(m);
}

TEST(ObserveTable, EveryEffectLabelsItsFamilyFully) {
  ForEachRow([](const ObserveMethod& m) {
    for (size_t e = 0; e < m.effect_count(); ++e) {
      const FamilySpec& spec = OmniSpec(m.effects[e].family);
      EXPECT_EQ(m.effects[e].label_count() + 1, spec.labels.size()) << m.name << " " << spec.name;
      const bool counts = m.effects[e].op == ObserveOp::kAdd || m.effects[e].op == ObserveOp::kInc;
      if (spec.kind == Kind::kHistogram) {
        EXPECT_EQ(m.effects[e].op, ObserveOp::kObserve) << m.name;
      }
      if (spec.kind == Kind::kCounter) {
        EXPECT_TRUE(counts) << m.name;
      }
    }
  });
}

TEST(ObserveTable, EveryOmniFamilyHasARowAndNamesAreUnique) {
  std::set<OmniFamily> recorded;
  std::set<std::string> names;
  ForEachRow([&](const ObserveMethod& m) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    for (size_t e = 0; e < m.effect_count(); ++e) recorded.insert(m.effects[e].family);
  });
  for (size_t i = 0; i < kOmniFamilyCount; ++i) {
    EXPECT_TRUE(recorded.count(static_cast<OmniFamily>(i)))
        << OmniSpec(static_cast<OmniFamily>(i)).name;
  }
}

TEST(ObserveTable, CompileTimeBindAndGuardAreTheRows) {
  for (size_t i = 0; i < kOmniFamilyCount; ++i) {
    const auto family = static_cast<OmniFamily>(i);
    EXPECT_EQ(FamilyBind(family), OmniSpec(family).bind) << OmniSpec(family).name;
    EXPECT_EQ(FamilyGuard(family), OmniSpec(family).guard) << OmniSpec(family).name;
    EXPECT_EQ(FamilyKind(family), OmniSpec(family).kind) << OmniSpec(family).name;
  }
  for (size_t i = 0; i < kEngineFamilyCount; ++i) {
    const auto family = static_cast<EngineFamily>(i);
    EXPECT_EQ(FamilyBind(family), EngineSpec(family).bind) << EngineSpec(family).name;
    EXPECT_EQ(FamilyGuard(family), EngineSpec(family).guard) << EngineSpec(family).name;
  }
}

bool IsAudio(const FamilySpec& spec) { return spec.group == Group::kAudio; }

TEST(ObserveRecorder, CarriesTheToyRowOut) {
  Registry registry;
  FamilySet<OmniFamily> families(registry, IsAudio);
  const ObserveRecorder recorder(families.table(), "m", true);
  recorder.Call<toy::kToyRecordFrames>(0, 1, int64_t{3});
  recorder.Call<toy::kToyRecordFrames>(0, 1, int64_t{-2}, std::string_view("late"));
  std::string text;
  registry.Render(Format::kText, &text, RenderOptions{.created_series = false});
  EXPECT_NE(text.find("vllm_omni:audio_frames_total{model_name=\"m\",replica=\"1\",stage=\"0\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reason=\"unknown\",replica=\"1\",stage=\"0\"} 1"), std::string::npos);
  EXPECT_NE(text.find("reason=\"late\",replica=\"1\",stage=\"0\"} 1"), std::string::npos);
}

TEST(ObserveRecorder, AGateOffRecordsNothingAndTextIsNotANumber) {
  Registry registry;
  FamilySet<OmniFamily> families(registry, IsAudio);
  const ObserveRecorder off(families.table(), "off", false);
  off.Call<toy::kToyRecordFrames>(0, 0, 5);
  const ObserveRecorder on(families.table(), "on", true);
  on.Call<toy::kToyRecordFrames>(0, 0, std::string_view("five"));  // nothing: not a number
  std::string text;
  registry.Render(Format::kText, &text, RenderOptions{.created_series = false});
  EXPECT_EQ(text.find("model_name=\"off\""), std::string::npos) << text;
  EXPECT_EQ(text.find("model_name=\"on\""), std::string::npos) << text;
}

// Threads making and finding the same children at once: the cache publishes each child once, a
// reader never sees a half-made entry, and no observation is lost (the lock-free reads are what
// TSan checks in the test command).
TEST(ObserveRecorder, ThreadsShareChildrenWithoutLosingObservations) {
  Registry registry;
  FamilySet<OmniFamily> families(registry, IsAudio);
  const ObserveRecorder recorder(families.table(), "m", true);
  constexpr int kThreads = 4;
  constexpr int kCalls = 2000;
  constexpr int kPairs = 16;  // (stage, replica) children every thread walks through
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&recorder, t] {
      for (int i = 0; i < kCalls; ++i) {
        const int pair = (i + t) % kPairs;
        recorder.Call<toy::kToyRecordFrames>(pair / 4, pair % 4, int64_t{1});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::string text;
  registry.Render(Format::kText, &text, RenderOptions{.created_series = false});
  double frames = 0;
  size_t series = 0;
  for (size_t at = text.find("vllm_omni:audio_frames_total{"); at != std::string::npos;
       at = text.find("vllm_omni:audio_frames_total{", at + 1)) {
    const size_t space = text.find(' ', at);
    frames += std::stod(text.substr(space + 1, text.find('\n', space) - space - 1));
    ++series;
  }
  EXPECT_EQ(series, static_cast<size_t>(kPairs));
  EXPECT_EQ(frames, kThreads * kCalls);
}

// A caller inventing label values: past kMaxCached label sets the recorder stops remembering
// children (its memory stays bounded) and every call still records, through Family::Labels.
TEST(ObserveRecorder, PastTheCacheBoundEveryCallStillRecords) {
  Registry registry;
  FamilySet<OmniFamily> families(registry, IsAudio);
  const ObserveRecorder recorder(families.table(), "m", true);
  const int sets = static_cast<int>(ObserveRecorder::kMaxCached) + 500;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < sets; ++i) recorder.Call<toy::kToyRecordFrames>(i, 0, int64_t{1});
  }
  std::string text;
  registry.Render(Format::kText, &text, RenderOptions{.created_series = false});
  const std::string last = "vllm_omni:audio_frames_total{model_name=\"m\",replica=\"0\",stage=\"" +
                           std::to_string(sets - 1) + "\"} 2";
  EXPECT_NE(text.find(last), std::string::npos);
  EXPECT_NE(text.find("stage=\"0\"} 2"), std::string::npos);
}

}  // namespace
}  // namespace modelmetrics::pipeline
