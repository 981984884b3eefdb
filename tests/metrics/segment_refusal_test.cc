// Every refusal of a registration in a shared segment (segment_directory.cc,
// SharedSegment::RegisterFamily/RegisterSeries), called directly and through a Registry: a name
// another process defined with another type, labels, buckets or gauge mode (help and unit are
// not compared, as prometheus_client's files do not compare them); a full family region, series
// region, arena ("names and label text") and cells per process, each with its exact error; a
// read-only view, which records nothing. A refusal never changes what is recorded, and two
// handles registering one series share its offset.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/segment_layout.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"

namespace modelmetrics {
namespace {

using segment_testing::Attach;
using segment_testing::CounterTotal;
using segment_testing::Find;
using segment_testing::Refusal;
using segment_testing::Skipped;
using segment_testing::UniqueName;
using ::testing::HasSubstr;

constexpr size_t kOneMiB = size_t{1} << 20;

std::string FullError(const std::string& name, const char* what) {
  return "the shared segment '" + name + "' is full (" + what +
         "); give MODELMETRICS_MULTIPROC_BYTES a larger size and restart the service";
}

// RegisterFamily's answer: the index, or the error (and whether it said busy).
struct Registered {
  std::optional<uint32_t> index;
  std::string error;
  bool busy = true;  // set false by every call
};
Registered RegisterFamily(SharedSegment& segment, const FamilyOptions& options, MetricType type) {
  Registered r;
  r.index = segment.RegisterFamily(options, type, &r.error, &r.busy);
  return r;
}

// RegisterSeries's answer for `values`: the cell (null base when refused) and the error.
struct RegisteredSeries {
  metrics_internal::SharedCell cell;
  std::string error;
  bool busy = true;
};
RegisteredSeries RegisterSeries(SharedSegment& segment, uint32_t family, MetricType type,
                                size_t bounds, const std::vector<std::string_view>& values) {
  RegisteredSeries r;
  r.cell = segment.RegisterSeries(family, type, bounds, values, &r.error, &r.busy);
  return r;
}

TEST(SegmentRefusal, ANameDefinedOtherwiseIsRefusedWithTheDifference) {
  const std::string name = UniqueName("defined");
  auto mine = Attach(name);
  auto theirs = Attach(name);  // another process's handle (another slot)
  ASSERT_NE(mine, nullptr);
  ASSERT_NE(theirs, nullptr);
  const FamilyOptions counter{.name = "x", .help = "X.", .labels = {"a", "b"}};
  const FamilyOptions histogram{.name = "h", .labels = {"a"}, .buckets = {1, 2}};
  const FamilyOptions gauge{.name = "g", .multiprocess_mode = MultiprocessMode::kMax};
  ASSERT_EQ(RegisterFamily(*mine, counter, MetricType::kCounter).index, 0u);
  ASSERT_EQ(RegisterFamily(*mine, histogram, MetricType::kHistogram).index, 1u);
  ASSERT_EQ(RegisterFamily(*mine, gauge, MetricType::kGauge).index, 2u);
  Registry registry(RegistryOptions{.shared = mine});
  registry.AddCounter(counter)->Labels({"1", "2"}).Inc();
  const std::string before = mine->Render(Format::kText);
  const std::string prefix = "registered in the shared segment by another process with ";
  struct Case {
    FamilyOptions options;
    MetricType type;
    std::string why;
  };
  const std::vector<Case> refused = {
      {counter, MetricType::kGauge, "another type"},
      {counter, MetricType::kHistogram, "another type"},
      {{.name = "x", .labels = {"b", "a"}}, MetricType::kCounter, "other label names"},
      {{.name = "x", .labels = {"a"}}, MetricType::kCounter, "other label names"},
      {{.name = "x"}, MetricType::kCounter, "other label names"},
      {{.name = "h", .labels = {"a"}, .buckets = {1, 2, 3}},
       MetricType::kHistogram,
       "other buckets"},
      {{.name = "h", .labels = {"a"}, .buckets = {1, 3}}, MetricType::kHistogram, "other buckets"},
      {{.name = "h", .labels = {"a"}}, MetricType::kHistogram, "other buckets"},
      {{.name = "g"}, MetricType::kGauge, "multiprocess_mode max"},
      {{.name = "g", .multiprocess_mode = MultiprocessMode::kLiveMax},
       MetricType::kGauge,
       "multiprocess_mode max"},
  };
  for (const Case& c : refused) {
    SCOPED_TRACE(c.options.name + ": " + c.why);
    const Registered r = RegisterFamily(*theirs, c.options, c.type);
    EXPECT_FALSE(r.index.has_value());
    EXPECT_EQ(r.error, prefix + c.why);
    EXPECT_FALSE(r.busy) << "final, not `try again`";
  }
  EXPECT_EQ(theirs->Stats().families, 3u) << "nothing appended";
  EXPECT_EQ(mine->Render(Format::kText), before) << "nothing recorded changed";
  // Help, unit and a counter's mode are not part of the definition the processes share: the
  // first registration's help is what a scrape shows.
  EXPECT_EQ(RegisterFamily(*theirs, {.name = "x", .help = "Other.", .labels = {"a", "b"}},
                           MetricType::kCounter)
                .index,
            0u);
  EXPECT_EQ(
      RegisterFamily(
          *theirs,
          {.name = "x", .labels = {"a", "b"}, .multiprocess_mode = MultiprocessMode::kLiveSum},
          MetricType::kCounter)
          .index,
      0u);
  EXPECT_EQ(RegisterFamily(*theirs, {.name = "g", .multiprocess_mode = MultiprocessMode::kMax},
                           MetricType::kGauge)
                .index,
            2u);
  EXPECT_THAT(mine->Render(Format::kText), HasSubstr("# HELP x_total X.\n"));
  // Through a registry: the family's name first, and the name stays free for the definition
  // that fits.
  Registry other(RegistryOptions{.shared = theirs});
  std::string error;
  EXPECT_EQ(other.AddGauge({.name = "x"}, &error), nullptr);
  EXPECT_EQ(error, "x: " + prefix + "another type");
  EXPECT_EQ(other.AddHistogram({.name = "h", .labels = {"a"}, .buckets = {1}}, &error), nullptr);
  EXPECT_EQ(error, "h: " + prefix + "other buckets");
  auto* fits = other.AddCounter({.name = "x_total", .help = "X.", .labels = {"a", "b"}}, &error);
  ASSERT_NE(fits, nullptr) << error;
  fits->Labels({"1", "2"}).Add(uint64_t{4});
  EXPECT_EQ(CounterTotal(*mine, "x"), 5);
}

// The family region holds kMaxFamilies records whatever the size: the next is refused, the
// ones there are still found.
TEST(SegmentRefusal, AFullFamilyRegionRefusesTheNextFamily) {
  const std::string name = UniqueName("families");
  auto segment = Attach(name, 1, kOneMiB);
  ASSERT_NE(segment, nullptr);
  for (uint32_t i = 0; i < segment::kMaxFamilies; ++i) {
    const Registered r =
        RegisterFamily(*segment, {.name = "f" + std::to_string(i)}, MetricType::kCounter);
    ASSERT_EQ(r.index, i) << r.error;
  }
  const Registered full = RegisterFamily(*segment, {.name = "one_more"}, MetricType::kCounter);
  EXPECT_FALSE(full.index.has_value());
  EXPECT_EQ(full.error, FullError(name, "families"));
  EXPECT_FALSE(full.busy);
  EXPECT_EQ(RegisterFamily(*segment, {.name = "f17"}, MetricType::kCounter).index, 17u);
  EXPECT_EQ(RegisterFamily(*segment, {.name = "f4095"}, MetricType::kCounter).index, 4095u);
  EXPECT_EQ(segment->Stats().families, segment::kMaxFamilies);
  Registry registry(RegistryOptions{.shared = segment});
  std::string error;
  EXPECT_EQ(registry.AddGauge({.name = "late"}, &error), nullptr);
  EXPECT_EQ(error, "late: " + FullError(name, "families"));
  auto* existing = registry.AddCounter({.name = "f9"}, &error);
  ASSERT_NE(existing, nullptr) << error;
  existing->Labels({}).Add(uint64_t{2});
  EXPECT_EQ(CounterTotal(*segment, "f9"), 2);
}

// A segment of 1 MiB holds 4096 series records (bytes / 256).
TEST(SegmentRefusal, AFullSeriesRegionRefusesTheNextSeries) {
  const std::string name = UniqueName("series");
  auto segment = Attach(name, 1, kOneMiB);
  ASSERT_NE(segment, nullptr);
  const uint32_t family =
      RegisterFamily(*segment, {.name = "c", .labels = {"k"}}, MetricType::kCounter).index.value();
  std::vector<std::string> values;
  for (int i = 0; i < 4097; ++i) values.push_back(std::to_string(i));
  for (uint32_t i = 0; i < 4096; ++i) {
    const RegisteredSeries r =
        RegisterSeries(*segment, family, MetricType::kCounter, 0, {values[i]});
    ASSERT_NE(r.cell.base, nullptr) << i << ": " << r.error;
    EXPECT_EQ(r.cell.offset, i);
  }
  const RegisteredSeries full =
      RegisterSeries(*segment, family, MetricType::kCounter, 0, {values[4096]});
  EXPECT_EQ(full.cell.base, nullptr);
  EXPECT_EQ(full.error, FullError(name, "series"));
  EXPECT_FALSE(full.busy);
  EXPECT_EQ(RegisterSeries(*segment, family, MetricType::kCounter, 0, {"123"}).cell.offset, 123u)
      << "a series registered before is still found";
  const SegmentStats stats = segment->Stats();
  EXPECT_EQ(stats.series, 4096u);
  EXPECT_EQ(stats.cell_words_used, 4096u);
  // Through a registry: an inert handle, and the reason kept on the family.
  Registry registry(RegistryOptions{.shared = segment});
  auto* c = registry.AddCounter({.name = "c", .labels = {"k"}});
  ASSERT_NE(c, nullptr);
  ::testing::internal::CaptureStderr();
  Counter refused = c->Labels({"new"});
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("modelmetrics: c: " + FullError(name, "series") +
                        "; such label sets are not recorded\n"));
  EXPECT_FALSE(refused.live());
  EXPECT_EQ(Refusal(c, {"new"}), FullError(name, "series")) << "told to the caller who asks";
  Counter kept = c->Labels({"5"});
  ASSERT_TRUE(kept.live());
  kept.Inc();
  EXPECT_EQ(CounterTotal(*segment, "c"), 1);
}

// The arena holds names, help, label names and values, bounds: a text that does not fit is
// refused (and a shorter one after it may still fit).
TEST(SegmentRefusal, AFullArenaRefusesNamesAndLabelText) {
  const std::string name = UniqueName("arena");
  auto segment = Attach(name, 1, kOneMiB);  // an arena of 64 KiB
  ASSERT_NE(segment, nullptr);
  const Registered long_help = RegisterFamily(
      *segment, {.name = "wordy", .help = std::string(70000, 'h')}, MetricType::kGauge);
  EXPECT_FALSE(long_help.index.has_value());
  EXPECT_EQ(long_help.error, FullError(name, "names and label text"));
  EXPECT_FALSE(long_help.busy);
  EXPECT_EQ(segment->Stats().families, 0u);
  Registry registry(RegistryOptions{.shared = segment});
  auto* family = registry.AddCounter({.name = "c", .help = "C.", .labels = {"k"}});
  ASSERT_NE(family, nullptr);
  int made = 0;
  std::string refusal;
  for (int i = 0; i < 32 && refusal.empty(); ++i) {
    // Label values at their bound (4096 bytes), each distinct.
    const std::string value = std::string(kMaxLabelValueBytes - 4, 'v') + std::to_string(1000 + i);
    refusal = Refusal(family, {value});
    if (refusal.empty()) {
      family->Labels({value}).Inc();
      ++made;
    }
  }
  EXPECT_EQ(refusal, FullError(name, "names and label text"));
  EXPECT_GE(made, 14);  // 64 KiB / 4 KiB, less the names
  EXPECT_LE(made, 15);
  const SegmentStats stats = segment->Stats();
  EXPECT_EQ(stats.series, static_cast<uint32_t>(made)) << "the refused series took no record";
  EXPECT_EQ(stats.cell_words_used, static_cast<uint64_t>(made)) << "...and no cells";
  EXPECT_EQ(Refusal(family, {"short"}), "");
  family->Labels({"short"}).Inc();
  EXPECT_EQ(CounterTotal(*segment, "c"), made + 1);
  std::string error;
  EXPECT_EQ(registry.AddGauge({.name = "g", .help = std::string(8000, 'x')}, &error), nullptr);
  EXPECT_EQ(error, "g: " + FullError(name, "names and label text"));
}

// 64 slots of 1 MiB hold 1424 words each: a histogram of 1422 bounds (1 sum + 1423 counts) fills
// a slot exactly; nothing fits after it. One bound more is wider than a slot: its family is
// published but skipped by every reader, and its series refused.
TEST(SegmentRefusal, CellsPerProcessRunOutAtTheSlotsLastWord) {
  const std::string name = UniqueName("cells");
  auto segment = Attach(name, 64, kOneMiB);
  ASSERT_NE(segment, nullptr);
  ASSERT_EQ(segment->Stats().cell_words_per_slot, 1424u);
  std::vector<double> bounds;
  for (int i = 0; i < 1422; ++i) bounds.push_back(i);
  Registry registry(RegistryOptions{.shared = segment});
  auto* wide = registry.AddHistogram({.name = "wide", .labels = {"k"}, .buckets = bounds});
  ASSERT_NE(wide, nullptr);
  Histogram first = wide->Labels({"a"});
  ASSERT_TRUE(first.live());
  first.Observe(5);
  EXPECT_EQ(segment->Stats().cell_words_used, 1424u);
  EXPECT_EQ(Refusal(wide, {"b"}), FullError(name, "cells per process"));
  auto* counter = registry.AddCounter({.name = "after"});
  ASSERT_NE(counter, nullptr) << "a family takes no cells";
  EXPECT_EQ(Refusal(counter, {}), FullError(name, "cells per process"));
  bounds.push_back(1422);
  auto* wider = registry.AddHistogram({.name = "wider", .buckets = bounds});
  ASSERT_NE(wider, nullptr);
  EXPECT_FALSE(wider->Labels({}).live());
  const auto merged = segment->Collect();
  ASSERT_NE(Find(merged, "wide"), nullptr);
  EXPECT_EQ(Find(merged, "wide")->children.at(0).buckets.at(5), 1u);  // 5 <= bound 5
  EXPECT_EQ(Find(merged, "wider"), nullptr);
  EXPECT_EQ(Skipped(merged, "out_of_bounds"), 1) << "its family, too wide for any slot";
}

// A read-only view takes no slot and records nothing: every registration is refused (not busy),
// and letting it go leaves the service's segment as it was.
TEST(SegmentRefusal, AReadOnlyViewRecordsNothing) {
  const std::string name = UniqueName("view");
  auto segment = Attach(name);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  auto* c = registry.AddCounter({.name = "c", .labels = {"k"}});
  c->Labels({"a"}).Inc();
  std::string error;
  auto view = SharedSegment::Attach({.name = name, .observe_only = true}, &error);
  ASSERT_NE(view, nullptr) << error;
  const std::string refused = "a read-only view of the shared segment records nothing";
  const Registered family =
      RegisterFamily(*view, {.name = "c", .labels = {"k"}}, MetricType::kCounter);
  EXPECT_FALSE(family.index.has_value()) << "not even a family it could find";
  EXPECT_EQ(family.error, refused);
  EXPECT_FALSE(family.busy);
  const RegisteredSeries series = RegisterSeries(*view, 0, MetricType::kCounter, 0, {"a"});
  EXPECT_EQ(series.cell.base, nullptr);
  EXPECT_EQ(series.error, refused);
  EXPECT_FALSE(series.busy);
  Registry through(RegistryOptions{.shared = view});
  EXPECT_EQ(through.AddGauge({.name = "g"}, &error), nullptr);
  EXPECT_EQ(error, "g: " + refused);
  EXPECT_EQ(view->slot(), -1);
  EXPECT_FALSE(view->StuckDirectoryHolder().has_value());
  EXPECT_EQ(view->Stats().families, 1u);
  EXPECT_EQ(view->Stats().series, 1u);
  // What is registered after the view's first scrape shows in its next one.
  EXPECT_EQ(CounterTotal(*view, "c"), 1);
  c->Labels({"b"}).Add(uint64_t{2});
  registry.AddGauge({.name = "later", .help = "L."})->Labels({}).Set(3);
  EXPECT_EQ(CounterTotal(*view, "c"), 3);
  EXPECT_EQ(view->Render(Format::kText), segment->Render(Format::kText));
  view->Leave();
  view.reset();
  EXPECT_TRUE(segment_testing::ShmExists(name)) << "a view never removes the service's name";
  EXPECT_FALSE(segment->Removed());
  c->Labels({"a"}).Inc();
  EXPECT_EQ(CounterTotal(*segment, "c"), 4);
}

// Handles of two processes registering one series get one offset, each in its own slot; a
// gauge's is marked made only in the slot of the handle that registered it.
TEST(SegmentRefusal, OneSeriesHasOneOffsetInEverySlot) {
  const std::string name = UniqueName("offset");
  auto mine = Attach(name);
  auto theirs = Attach(name);
  ASSERT_NE(mine, nullptr);
  ASSERT_NE(theirs, nullptr);
  const uint32_t c =
      RegisterFamily(*mine, {.name = "c", .labels = {"k"}}, MetricType::kCounter).index.value();
  const uint32_t g =
      RegisterFamily(*theirs, {.name = "g", .labels = {"k"}}, MetricType::kGauge).index.value();
  EXPECT_EQ(RegisterFamily(*theirs, {.name = "c", .labels = {"k"}}, MetricType::kCounter).index, c);
  const RegisteredSeries a = RegisterSeries(*mine, c, MetricType::kCounter, 0, {"a"});
  const RegisteredSeries b = RegisterSeries(*mine, c, MetricType::kCounter, 0, {"b"});
  const RegisteredSeries a_again = RegisterSeries(*theirs, c, MetricType::kCounter, 0, {"a"});
  const RegisteredSeries a_mine = RegisterSeries(*mine, c, MetricType::kCounter, 0, {"a"});
  ASSERT_NE(a.cell.base, nullptr);
  EXPECT_EQ(a.cell.offset, 0u);
  EXPECT_EQ(b.cell.offset, 1u);
  EXPECT_EQ(a_again.cell.offset, 0u);
  EXPECT_EQ(a_mine.cell.offset, 0u);
  EXPECT_NE(a.cell.get(), a_again.cell.get()) << "the same offset in another slot";
  EXPECT_EQ(a.cell.get(), a_mine.cell.get());
  a.cell.get()->store(std::bit_cast<uint64_t>(2.0));
  a_again.cell.get()->store(std::bit_cast<uint64_t>(5.0));
  const auto merged = mine->Collect();
  ASSERT_NE(Find(merged, "c"), nullptr);
  EXPECT_EQ(Find(merged, "c")->children.at(0).value, 7);
  EXPECT_EQ(Find(merged, "c")->children.at(1).value, 0);
  const RegisteredSeries gauge = RegisterSeries(*theirs, g, MetricType::kGauge, 0, {"x"});
  ASSERT_NE(gauge.cell.base, nullptr);
  EXPECT_EQ(gauge.cell.offset, 2u);
  EXPECT_EQ(std::bit_cast<double>(gauge.cell.get()[1].load()), segment::kCreatedStamp);
  const auto gauges = mine->Collect();
  ASSERT_NE(Find(gauges, "g"), nullptr);
  ASSERT_EQ(Find(gauges, "g")->children.size(), 1u) << "made in one slot only";
  EXPECT_EQ(Find(gauges, "g")->children[0].value, 0);
}

}  // namespace
}  // namespace modelmetrics
