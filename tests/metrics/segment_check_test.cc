// The checks every directory record of a shared segment passes before a process uses it
// (segment_check.{h,cc}): CheckFamily and SeriesCheck called directly on records built by hand
// against a segment geometry of the test's own, one skip reason at a time and in the order the
// checks apply; the reasons' names and the scrape budget; then, through real segments, each
// reason counted on `modelmetrics_multiprocess_skipped_records` (the reasons no other test
// reaches that way: bad_type, bad_buckets, label_count, out_of_bounds, scrape_budget), counted
// once however many scrapes read the record.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/segment_check.h"
#include "metrics/segment_layout.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"

namespace modelmetrics {
namespace {

using segment::CheckedFamily;
using segment::CheckFamily;
using segment::FamilyRecord;
using segment::FamilyShape;
using segment::SeriesCheck;
using segment::SeriesRecord;
using segment::Skip;
using segment_testing::Attach;
using segment_testing::Find;
using segment_testing::Refusal;
using segment_testing::Skipped;
using segment_testing::StrictParse;
using segment_testing::Tamper;
using segment_testing::UniqueName;
using ::testing::HasSubstr;

// A segment's geometry and arena without shared memory: records are built here, as a writer (or
// a hostile process) would lay them out, and checked against it.
class Records {
 public:
  explicit Records(uint64_t arena_bytes = 8192, uint64_t words_per_slot = 64)
      : storage_(arena_bytes / 8 + 1) {
    impl.geometry.arena_bytes = arena_bytes;
    impl.geometry.words_per_slot = words_per_slot;
    impl.bytes = size_t{1} << 20;
    impl.arena = reinterpret_cast<char*>(storage_.data());
  }
  // `text` appended to the arena at `align`.
  segment::ArenaText Text(std::string_view text, size_t align = 1) {
    used_ = (used_ + align - 1) / align * align;
    if (used_ + text.size() > impl.geometry.arena_bytes) {
      ADD_FAILURE() << "the test's arena is too small";
      return {};
    }
    if (!text.empty()) std::memcpy(impl.arena + used_, text.data(), text.size());
    const segment::ArenaText out{static_cast<uint32_t>(used_), static_cast<uint32_t>(text.size())};
    used_ += text.size();
    return out;
  }
  FamilyRecord Family(std::string_view name, MetricType type, std::string_view labels = "",
                      const std::vector<double>& bounds = {},
                      MultiprocessMode mode = MultiprocessMode::kAll, std::string_view help = "H.",
                      std::string_view unit = "") {
    FamilyRecord f = {};
    f.name = Text(name);
    f.help = Text(help);
    f.unit = Text(unit);
    f.labels = Text(labels);
    f.bounds_offset = Text(std::string_view(reinterpret_cast<const char*>(bounds.data()),
                                            bounds.size() * sizeof(double)),
                           8)
                          .offset;
    f.bounds = static_cast<uint32_t>(bounds.size());
    f.type = static_cast<uint8_t>(type);
    f.mode = static_cast<uint8_t>(mode);
    return f;
  }
  SeriesRecord Series(uint32_t family, std::string_view values, uint32_t cell) {
    return {.family = family, .values = Text(values), .cell = cell};
  }
  Skip Check(const FamilyRecord& f) {
    CheckedFamily out;
    return CheckFamily(impl, f, &out);
  }

  SharedSegment::Impl impl;

 private:
  std::vector<uint64_t> storage_;  // 8-aligned, as the arena is for bounds
  uint64_t used_ = 0;
};

TEST(SegmentCheck, AValidFamilyComesBackAsItsDefinition) {
  Records r;
  CheckedFamily out;
  const FamilyRecord h =
      r.Family("took_seconds", MetricType::kHistogram, "stage\xffmodel", {0.5, 1, 2.5},
               MultiprocessMode::kLiveMax, "Took \xc3\xa9.", "seconds");
  ASSERT_EQ(CheckFamily(r.impl, h, &out), Skip::kNone);
  EXPECT_EQ(out.type, MetricType::kHistogram);
  EXPECT_EQ(out.options.name, "took_seconds");
  EXPECT_EQ(out.options.help, "Took \xc3\xa9.");
  EXPECT_EQ(out.options.unit, "seconds");
  EXPECT_EQ(out.options.labels, (std::vector<std::string>{"stage", "model"}));
  EXPECT_EQ(out.options.buckets, (std::vector<double>{0.5, 1, 2.5}));
  EXPECT_EQ(out.options.multiprocess_mode, MultiprocessMode::kLiveMax);
  CheckedFamily plain;
  ASSERT_EQ(
      CheckFamily(r.impl, r.Family("c", MetricType::kCounter, "", {}, MultiprocessMode::kAll, ""),
                  &plain),
      Skip::kNone);
  EXPECT_TRUE(plain.options.labels.empty()) << "no label text: no labels";
  EXPECT_TRUE(plain.options.buckets.empty());
  EXPECT_EQ(plain.options.help, "");
  // A record that fails leaves the output as it was.
  CheckedFamily untouched;
  untouched.options.name = "before";
  EXPECT_EQ(CheckFamily(r.impl, r.Family("9", MetricType::kGauge), &untouched), Skip::kBadName);
  EXPECT_EQ(untouched.options.name, "before");
}

TEST(SegmentCheck, AFamilyOutsideTheArenaOrTheSlotIsOutOfBounds) {
  Records r(8192, 64);
  const FamilyRecord good = r.Family("h", MetricType::kHistogram, "k", {1, 2});
  ASSERT_EQ(r.Check(good), Skip::kNone);
  auto changed = [&](auto change) {
    FamilyRecord f = good;
    change(f);
    return r.Check(f);
  };
  EXPECT_EQ(changed([](FamilyRecord& f) { f.name = {8190, 3}; }), Skip::kOutOfBounds);
  // The arena's last byte is inside it: that name is read (a NUL, so not a name).
  EXPECT_EQ(changed([](FamilyRecord& f) { f.name = {8191, 1}; }), Skip::kBadName);
  EXPECT_EQ(changed([](FamilyRecord& f) { f.name.size = 0; }), Skip::kOutOfBounds)
      << "a record without a name is no record";
  EXPECT_EQ(changed([](FamilyRecord& f) { f.help = {0xffffff00u, 0x200}; }), Skip::kOutOfBounds);
  EXPECT_EQ(changed([](FamilyRecord& f) { f.unit = {8192, 1}; }), Skip::kOutOfBounds);
  EXPECT_EQ(changed([](FamilyRecord& f) { f.labels = {4000, 4193}; }), Skip::kOutOfBounds);
  EXPECT_EQ(changed([](FamilyRecord& f) { f.bounds_offset += 4; }), Skip::kOutOfBounds)
      << "bounds not aligned for doubles";
  EXPECT_EQ(changed([](FamilyRecord& f) {
              f.bounds_offset = 8192 - 8;
              f.bounds = 2;
            }),
            Skip::kOutOfBounds);
  EXPECT_EQ(changed([](FamilyRecord& f) { f.bounds = 0x7fffffffu; }), Skip::kOutOfBounds);
  // No series of more bounds than a slot's cells less two (the sum, +Inf) fits: 62 of 64 words.
  std::vector<double> bounds(62);
  for (size_t i = 0; i < bounds.size(); ++i) bounds[i] = static_cast<double>(i);
  EXPECT_EQ(r.Check(r.Family("fits", MetricType::kHistogram, "", bounds)), Skip::kNone);
  bounds.push_back(62);
  EXPECT_EQ(r.Check(r.Family("wider", MetricType::kHistogram, "", bounds)), Skip::kOutOfBounds);
}

// A type or mode the format does not have is bad_type, even when the record also points outside
// the arena (the type is what makes it foreign).
TEST(SegmentCheck, AnUnknownTypeOrModeIsBadType) {
  Records r;
  const FamilyRecord good = r.Family("g", MetricType::kGauge);
  ASSERT_EQ(r.Check(good), Skip::kNone);
  for (uint8_t type :
       {static_cast<uint8_t>(MetricType::kUntyped), static_cast<uint8_t>(MetricType::kSummary),
        static_cast<uint8_t>(MetricType::kInfo), uint8_t{200}}) {
    FamilyRecord f = good;
    f.type = type;
    EXPECT_EQ(r.Check(f), Skip::kBadType) << int{type};
    f.name.offset = 0xfffffff0u;
    EXPECT_EQ(r.Check(f), Skip::kBadType) << int{type};
  }
  FamilyRecord f = good;
  f.mode = static_cast<uint8_t>(MultiprocessMode::kLiveMostRecent);
  EXPECT_EQ(r.Check(f), Skip::kNone);
  f.mode = static_cast<uint8_t>(MultiprocessMode::kLiveMostRecent) + 1;
  EXPECT_EQ(r.Check(f), Skip::kBadType);
  f.mode = 255;
  EXPECT_EQ(r.Check(f), Skip::kBadType);
  // A known type and mode outside the arena: out of bounds.
  f = good;
  f.name.offset = 0xfffffff0u;
  EXPECT_EQ(r.Check(f), Skip::kOutOfBounds);
}

TEST(SegmentCheck, NamesAndUnitsFollowTheGrammar) {
  Records r;
  for (const char* name : {"a", "_a", ":a", "vllm:requests", "a_1:b"}) {
    EXPECT_EQ(r.Check(r.Family(name, MetricType::kCounter)), Skip::kNone) << name;
  }
  for (const char* name : {"9a", "a-b", "a b", "a.b", "\xc3\xa9", "a\xff", "a\n"}) {
    EXPECT_EQ(r.Check(r.Family(name, MetricType::kCounter)), Skip::kBadName) << name;
  }
  const auto with_unit = [&](const char* name, const char* unit) {
    return r.Check(r.Family(name, MetricType::kGauge, "", {}, MultiprocessMode::kAll, "H.", unit));
  };
  EXPECT_EQ(with_unit("took_seconds", "seconds"), Skip::kNone);
  EXPECT_EQ(with_unit("took_seconds", "bytes"), Skip::kBadName);
  EXPECT_EQ(with_unit("seconds", "seconds"), Skip::kBadName) << "a suffix after `_`";
  EXPECT_EQ(with_unit("took_seconds", "_seconds"), Skip::kBadName);
  // The name is checked before the help text.
  EXPECT_EQ(r.Check(r.Family("9a", MetricType::kCounter, "", {}, MultiprocessMode::kAll, "\xff")),
            Skip::kBadName);
}

TEST(SegmentCheck, HelpMustBeUtf8) {
  Records r;
  const auto with_help = [&](std::string_view help) {
    return r.Check(r.Family("g", MetricType::kGauge, "", {}, MultiprocessMode::kAll, help));
  };
  EXPECT_EQ(with_help("Line one\nline \"two\" \\ \xe2\x9c\x93"), Skip::kNone);
  EXPECT_EQ(with_help(""), Skip::kNone);
  EXPECT_EQ(with_help("\xc3\x28"), Skip::kBadText);
  EXPECT_EQ(with_help("\xff"), Skip::kBadText);
  EXPECT_EQ(with_help("\xed\xa0\x80"), Skip::kBadText) << "a UTF-16 surrogate";
  EXPECT_EQ(with_help("\xc0\x80"), Skip::kBadText) << "an overlong encoding";
}

TEST(SegmentCheck, LabelNamesFollowTheGrammarOncePerFamily) {
  Records r;
  const auto labelled = [&](std::string_view labels, MetricType type = MetricType::kGauge) {
    return r.Check(r.Family("f", type, labels, {}));
  };
  EXPECT_EQ(labelled("a\xff_b\xff"
                     "c9"),
            Skip::kNone);
  EXPECT_EQ(labelled("le"), Skip::kNone) << "`le` is reserved only in histograms";
  EXPECT_EQ(labelled("le", MetricType::kHistogram), Skip::kBadLabelNames);
  EXPECT_EQ(labelled("a\xff"
                     "a"),
            Skip::kBadLabelNames)
      << "repeated";
  EXPECT_EQ(labelled("a\xff"), Skip::kBadLabelNames) << "an empty second name";
  EXPECT_EQ(labelled("\xff"
                     "a"),
            Skip::kBadLabelNames);
  EXPECT_EQ(labelled("__a"), Skip::kBadLabelNames) << "reserved";
  EXPECT_EQ(labelled("1a"), Skip::kBadLabelNames);
  EXPECT_EQ(labelled("a:b"), Skip::kBadLabelNames) << "no colon in label names";
  EXPECT_EQ(labelled("a b"), Skip::kBadLabelNames);
}

// Only histograms have bounds; theirs are finite and strictly increasing. A counter with bounds
// is refused before its name is read.
TEST(SegmentCheck, BucketsAreForHistogramsFiniteAndIncreasing) {
  Records r;
  const double inf = std::numeric_limits<double>::infinity();
  const auto histogram = [&](const std::vector<double>& bounds) {
    return r.Check(r.Family("h", MetricType::kHistogram, "", bounds));
  };
  EXPECT_EQ(histogram({}), Skip::kNone);
  EXPECT_EQ(histogram({-1e300, -1, 0, 1e-300, 1e300}), Skip::kNone);
  EXPECT_EQ(histogram({2, 1}), Skip::kBadBuckets);
  EXPECT_EQ(histogram({1, 1}), Skip::kBadBuckets);
  EXPECT_EQ(histogram({1, std::nan("")}), Skip::kBadBuckets);
  EXPECT_EQ(histogram({std::nan("")}), Skip::kBadBuckets);
  EXPECT_EQ(histogram({0, inf}), Skip::kBadBuckets);
  EXPECT_EQ(histogram({-inf, 0}), Skip::kBadBuckets);
  EXPECT_EQ(r.Check(r.Family("c", MetricType::kCounter, "", {1})), Skip::kBadBuckets);
  EXPECT_EQ(r.Check(r.Family("g", MetricType::kGauge, "", {1, 2})), Skip::kBadBuckets);
  EXPECT_EQ(r.Check(r.Family("9bad", MetricType::kCounter, "", {1})), Skip::kBadBuckets);
  // Label names are checked before the bounds.
  EXPECT_EQ(r.Check(r.Family("h", MetricType::kHistogram, "le", {2, 1})), Skip::kBadLabelNames);
}

// Shapes of checked families, as a scrape passes them to the series check.
constexpr FamilyShape kTwoLabelCounter{.type = MetricType::kCounter, .labels = 2, .bounds = 0};
constexpr FamilyShape kOneLabelHistogram{.type = MetricType::kHistogram, .labels = 1, .bounds = 3};
constexpr FamilyShape kBareGauge{.type = MetricType::kGauge, .labels = 0, .bounds = 0};

TEST(SegmentSeriesCheck, ValidSeriesComeBackAsTheirLabelValues) {
  Records r;
  SeriesCheck check;
  std::vector<std::string> values;
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "a\xff"
                                 "b",
                                 0),
                        &kTwoLabelCounter, &values),
            Skip::kNone);
  EXPECT_EQ(values, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(check.Check(r.impl, r.Series(0, "\xff", 1), &kTwoLabelCounter, &values), Skip::kNone);
  EXPECT_EQ(values, (std::vector<std::string>{"", ""})) << "empty values are values";
  EXPECT_EQ(check.Check(r.impl, r.Series(1, "\xe2\x9c\x93", 2), &kOneLabelHistogram, &values),
            Skip::kNone);
  EXPECT_EQ(values, (std::vector<std::string>{"\xe2\x9c\x93"}));
  EXPECT_EQ(check.Check(r.impl, r.Series(2, "", 7), &kBareGauge, &values), Skip::kNone)
      << "cells may leave a gap: only going back is refused";
  EXPECT_TRUE(values.empty());
  values = {"kept"};
  EXPECT_EQ(check.Check(r.impl, r.Series(0, "a", 9), &kTwoLabelCounter, &values),
            Skip::kLabelCount);
  EXPECT_EQ(values, std::vector<std::string>{"kept"}) << "a skipped record fills nothing";
}

TEST(SegmentSeriesCheck, NoFamilyOutOfBoundsAndOverlapComeFirst) {
  Records r(8192, 64);
  SeriesCheck check;
  std::vector<std::string> values;
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "a\xff"
                                 "b",
                                 0),
                        nullptr, &values),
            Skip::kNoFamily);
  SeriesRecord outside = r.Series(0,
                                  "a\xff"
                                  "b",
                                  0);
  outside.values.offset = 8190;
  EXPECT_EQ(check.Check(r.impl, outside, &kTwoLabelCounter, &values), Skip::kOutOfBounds);
  // A histogram of 3 bounds takes 5 words: at 59 it ends on the slot's last word, at 60 past it.
  EXPECT_EQ(check.Check(r.impl, r.Series(1, "x", 60), &kOneLabelHistogram, &values),
            Skip::kOutOfBounds);
  EXPECT_EQ(check.Check(r.impl, r.Series(1, "x", 0xfffffffbu), &kOneLabelHistogram, &values),
            Skip::kOutOfBounds);
  EXPECT_EQ(check.Check(r.impl, r.Series(1, "y", 20), &kOneLabelHistogram, &values), Skip::kNone);
  // Its cells end at 25: a record starting before is an overlap, whatever it is.
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "a\xff"
                                 "b",
                                 24),
                        &kTwoLabelCounter, &values),
            Skip::kOverlap);
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "a\xff"
                                 "b",
                                 3),
                        &kTwoLabelCounter, &values),
            Skip::kOverlap);
  EXPECT_EQ(check.Check(r.impl, r.Series(0, "too few", 3), &kTwoLabelCounter, &values),
            Skip::kOverlap)
      << "an overlap is found before the label count";
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "a\xff"
                                 "b",
                                 25),
                        &kTwoLabelCounter, &values),
            Skip::kNone);
  EXPECT_EQ(check.Check(r.impl, r.Series(1, "z", 59), &kOneLabelHistogram, &values), Skip::kNone);
  // Out of bounds is found before an overlap.
  EXPECT_EQ(check.Check(r.impl, r.Series(1, "w", 60), &kOneLabelHistogram, &values),
            Skip::kOutOfBounds);
}

TEST(SegmentSeriesCheck, LabelValuesMatchTheFamilyInNumberAndAreBoundedUtf8) {
  Records r(32768);  // room for values past their bound
  SeriesCheck check;
  std::vector<std::string> values;
  uint32_t cell = 0;
  auto check_values = [&](std::string_view text, const FamilyShape& shape) {
    return check.Check(r.impl, r.Series(0, text, cell++), &shape, &values);
  };
  EXPECT_EQ(check_values("a", kTwoLabelCounter), Skip::kLabelCount);
  EXPECT_EQ(check_values("a\xff"
                         "b\xff"
                         "c",
                         kTwoLabelCounter),
            Skip::kLabelCount);
  EXPECT_EQ(check_values("", kTwoLabelCounter), Skip::kLabelCount);
  constexpr FamilyShape kOneLabel{.type = MetricType::kCounter, .labels = 1, .bounds = 0};
  EXPECT_EQ(check_values("", kOneLabel), Skip::kNone);
  EXPECT_EQ(values, std::vector<std::string>{""});
  EXPECT_EQ(check_values(std::string(kMaxLabelValueBytes, 'v'), kOneLabel), Skip::kNone);
  EXPECT_EQ(check_values(std::string(kMaxLabelValueBytes + 1, 'v'), kOneLabel), Skip::kBadText);
  EXPECT_EQ(check_values("ok\xff" + std::string(kMaxLabelValueBytes + 1, 'w'), kTwoLabelCounter),
            Skip::kBadText)
      << "every value is bounded";
  EXPECT_EQ(check_values("\xc0\x80", kOneLabel), Skip::kBadText);
  EXPECT_EQ(check_values("ok\xff\xed\xa0\x80", kTwoLabelCounter), Skip::kBadText);
  EXPECT_EQ(check_values("line\nbreak \"q\" \\", kOneLabel), Skip::kNone)
      << "escaped when rendered, not refused";
}

TEST(SegmentSeriesCheck, ALabelSetIsPublishedOnceAndSkippedRecordsClaimNothing) {
  Records r;
  SeriesCheck check;
  std::vector<std::string> values;
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "a\xff"
                                 "b",
                                 0),
                        &kTwoLabelCounter, &values),
            Skip::kNone);
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "a\xff"
                                 "b",
                                 1),
                        &kTwoLabelCounter, &values),
            Skip::kDuplicate);
  // The duplicate claimed nothing: its cell 1 is free for the next record.
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "c\xff"
                                 "d",
                                 1),
                        &kTwoLabelCounter, &values),
            Skip::kNone);
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(1,
                                 "a\xff"
                                 "b",
                                 2),
                        &kTwoLabelCounter, &values),
            Skip::kNone)
      << "the same values in another family";
  // A record skipped for its text neither advances the cells nor takes its label set.
  EXPECT_EQ(check.Check(r.impl, r.Series(0, "e\xff\xff", 10), &kTwoLabelCounter, &values),
            Skip::kLabelCount);
  EXPECT_EQ(check.Check(r.impl, r.Series(0, "bad\xff\xc3", 10), &kTwoLabelCounter, &values),
            Skip::kBadText);
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "e\xff"
                                 "f",
                                 10),
                        &kTwoLabelCounter, &values),
            Skip::kNone);
  // Nor does one skipped as an overlap: its label set may come later with cells of its own.
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "g\xff"
                                 "h",
                                 4),
                        &kTwoLabelCounter, &values),
            Skip::kOverlap);
  EXPECT_EQ(check.Check(r.impl,
                        r.Series(0,
                                 "g\xff"
                                 "h",
                                 11),
                        &kTwoLabelCounter, &values),
            Skip::kNone);
  // Each pass over the directory has its own memory.
  SeriesCheck another;
  EXPECT_EQ(another.Check(r.impl,
                          r.Series(0,
                                   "a\xff"
                                   "b",
                                   0),
                          &kTwoLabelCounter, &values),
            Skip::kNone);
}

// A family without labels has one label set, the empty one: a record with any other text (say
// "junk") is refused, so a corrupt copy never renders the family's one sample twice
// (SegmentSkips.AFamilyWithoutLabelsRendersOneSample shows it end to end).
TEST(SegmentSeriesCheck, AFamilyWithoutLabelsHasOneLabelSet) {
  Records r;
  SeriesCheck check;
  std::vector<std::string> values;
  EXPECT_EQ(check.Check(r.impl, r.Series(0, "", 0), &kBareGauge, &values), Skip::kNone);
  EXPECT_NE(check.Check(r.impl, r.Series(0, "junk", 2), &kBareGauge, &values), Skip::kNone);
}

TEST(SegmentCheck, ReasonsHaveTheirSelfMetricNames) {
  const std::vector<std::string> names = {"none",        "out_of_bounds",   "bad_type",
                                          "bad_name",    "bad_label_names", "bad_text",
                                          "bad_buckets", "no_family",       "label_count",
                                          "overlap",     "duplicate",       "scrape_budget"};
  ASSERT_EQ(names.size(), segment::kSkipReasons);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(segment::SkipName(static_cast<Skip>(i)), names[i]);
  }
  EXPECT_EQ(segment::SkipName(Skip::kScrapeBudget), "scrape_budget");
  EXPECT_EQ(segment::SkipName(static_cast<Skip>(segment::kSkipReasons)), "unknown");
  EXPECT_EQ(segment::SkipName(static_cast<Skip>(255)), "unknown");
}

TEST(SegmentCheck, AScrapeRendersAtMostSixteenTimesTheSegmentAndAtLeast64MiB) {
  Records r;
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  for (const auto& [bytes, budget] :
       std::vector<std::pair<uint64_t, uint64_t>>{{kMiB, 64 * kMiB},
                                                  {4 * kMiB, 64 * kMiB},
                                                  {4 * kMiB + 1, 64 * kMiB + 16},
                                                  {8 * kMiB, 128 * kMiB},
                                                  {uint64_t{4} << 30, uint64_t{64} << 30}}) {
    r.impl.bytes = bytes;
    EXPECT_EQ(segment::ScrapeBudget(r.impl), budget) << bytes;
  }
}

constexpr char kSelfMetricHeader[] =
    "# HELP modelmetrics_multiprocess_skipped_records Records of the shared segment's directory "
    "this scrape left out, by reason (a corrupt or foreign record, or past the scrape's byte "
    "budget).\n"
    "# TYPE modelmetrics_multiprocess_skipped_records gauge\n";

// Records a scrape cannot use, one reason each: a type the format lacks, bounds that go down, a
// help text outside the arena, a series' cells outside the slot (all written by a hostile
// process), and a series with one value too many (an honest call of RegisterSeries that does not
// fit its family). Each is counted once, by reason, on the self-metric, which is the last family.
TEST(SegmentSkips, EachReasonIsCountedOnTheSelfMetric) {
  const std::string name = UniqueName("skips");
  const size_t bytes = size_t{4} << 20;
  auto segment = Attach(name, 16, bytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "typed", .labels = {"k"}})->Labels({"a"}).Inc();             // 0
  registry.AddHistogram({.name = "bucketed", .buckets = {1, 2}})->Labels({}).Observe(1);    // 1
  auto* counted = registry.AddCounter({.name = "counted", .help = "C.", .labels = {"k"}});  // 2
  counted->Labels({"ok"}).Inc();
  registry.AddGauge({.name = "outside"})->Labels({}).Set(1);             // 3
  registry.AddCounter({.name = "far"})->Labels({}).Inc();                // 4
  registry.AddGauge({.name = "fine", .help = "F."})->Labels({}).Set(2);  // 5
  std::string error;
  const std::vector<std::string_view> two = {"x", "y"};
  ASSERT_NE(segment->RegisterSeries(2, MetricType::kCounter, 0, two, &error).base, nullptr)
      << "appended: a reader skips it";
  Tamper t(name, bytes);
  t.families[0].type = 9;
  const uint32_t bounds = t.families[1].bounds_offset;
  std::swap(reinterpret_cast<double*>(t.arena + bounds)[0],
            reinterpret_cast<double*>(t.arena + bounds)[1]);
  t.families[3].help.offset = static_cast<uint32_t>(t.header->layout.arena_bytes);
  t.families[3].help.size = 1;
  t.series[4].cell = static_cast<uint32_t>(t.header->layout.words_per_slot);  // `far`'s only one
  for (int scrape = 0; scrape < 3; ++scrape) {  // counted once, not once per scrape
    const std::string text = segment->Render(Format::kText);
    EXPECT_THAT(text,
                ::testing::EndsWith(
                    std::string(kSelfMetricHeader) +
                    "modelmetrics_multiprocess_skipped_records{reason=\"out_of_bounds\"} 2.0\n"
                    "modelmetrics_multiprocess_skipped_records{reason=\"bad_type\"} 1.0\n"
                    "modelmetrics_multiprocess_skipped_records{reason=\"bad_buckets\"} 1.0\n"
                    "modelmetrics_multiprocess_skipped_records{reason=\"no_family\"} 3.0\n"
                    "modelmetrics_multiprocess_skipped_records{reason=\"label_count\"} "
                    "1.0\n"));
    EXPECT_THAT(text,
                ::testing::StartsWith("# HELP counted_total C.\n# TYPE counted_total counter\n"
                                      "counted_total{k=\"ok\"} 1.0\n# HELP fine F.\n"));
    StrictParse(text);
  }
  // A view reading the directory afresh counts the same.
  auto view = SharedSegment::Attach({.name = name, .observe_only = true}, &error);
  ASSERT_NE(view, nullptr) << error;
  const auto merged = view->Collect();
  EXPECT_EQ(Skipped(merged, "out_of_bounds"), 2);
  EXPECT_EQ(Skipped(merged, "bad_type"), 1);
  EXPECT_EQ(Skipped(merged, "bad_buckets"), 1);
  EXPECT_EQ(Skipped(merged, "no_family"), 3);
  EXPECT_EQ(Skipped(merged, "label_count"), 1);
  EXPECT_EQ(Skipped(merged, "duplicate"), 0);
  const MergedFamily* self = Find(merged, "modelmetrics_multiprocess_skipped_records");
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self, &merged.back());
  EXPECT_EQ(self->type, MetricType::kGauge);
  EXPECT_EQ(self->options.labels, std::vector<std::string>{"reason"});
  EXPECT_EQ(self->options.multiprocess_mode, MultiprocessMode::kMax);
  EXPECT_EQ(self->children.size(), 5u) << "reasons with nothing skipped are not listed";
  // A family whose record is skipped is never joined: another process registering the name gets
  // a record of its own, which a scrape shows.
  auto other = Attach(name, 16, bytes);
  Registry again(RegistryOptions{.shared = other});
  auto* typed = again.AddCounter({.name = "typed", .labels = {"k"}}, &error);
  ASSERT_NE(typed, nullptr) << error;
  typed->Labels({"a"}).Add(uint64_t{4});
  EXPECT_EQ(other->Stats().families, 7u);
  EXPECT_THAT(segment->Render(Format::kText), HasSubstr("\ntyped_total{k=\"a\"} 4.0\n"));
}

// The budget a scrape renders is there against corrupt records, but honest ones can pass it too:
// a histogram of 2000 bounds whose label value is 4000 bytes renders 2003 lines of 4108 bytes
// (the bucket name, 8, its label text, 4004, and 96 for the rest) each, 8.2 MB a series. Of the
// 12 such series a 1 MiB segment's arena holds, the 64 MiB budget takes 8; the scrape leaves the
// other 4 out and says so.
TEST(SegmentSkips, ASeriesPastTheScrapeBudgetIsLeftOutAndCounted) {
  const std::string name = UniqueName("budget");
  auto segment = Attach(name, 1, size_t{1} << 20);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  std::vector<double> bounds;
  for (int i = 0; i < 2000; ++i) bounds.push_back(i);
  auto* h = registry.AddHistogram({.name = "h", .labels = {"k"}, .buckets = bounds});
  ASSERT_NE(h, nullptr);
  std::vector<std::string> values;
  std::string refused;
  for (int i = 0; i < 20; ++i) {
    const std::string value = std::string(3996, 'v') + std::to_string(1000 + i);
    refused = Refusal(h, {value});
    if (!refused.empty()) break;
    h->Labels({value}).Observe(i);
    values.push_back(value);
  }
  ASSERT_EQ(values.size(), 12u) << refused;
  for (int scrape = 0; scrape < 2; ++scrape) {  // counted per scrape, not summed over scrapes
    const auto merged = segment->Collect();
    const MergedFamily* family = Find(merged, "h");
    ASSERT_NE(family, nullptr);
    ASSERT_EQ(family->children.size(), 8u);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(family->children[i].label_values, std::vector<std::string>{values[i]});
      EXPECT_EQ(family->children[i].count, 1u);
    }
    EXPECT_EQ(Skipped(merged, "scrape_budget"), 4);
  }
  // In this process's own registry every series renders.
  EXPECT_EQ(registry.Families().at(0)->Collect().size(), 12u);
}

// End to end: a copy of a label-less family's series record, with other text, is left out, not
// rendered as a second sample of the same series.
TEST(SegmentSkips, AFamilyWithoutLabelsRendersOneSample) {
  const std::string name = UniqueName("bare");
  auto segment = Attach(name);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "c", .help = "C."})->Labels({}).Inc();
  Tamper t(name, size_t{4} << 20);
  const uint32_t n = t.header->series.load();
  segment::SeriesRecord copy = t.series[0];
  copy.values = t.Text("junk", 1);
  copy.cell = static_cast<uint32_t>(t.header->words_used);
  t.series[n] = copy;
  t.header->series.store(n + 1);
  const std::string text = segment->Render(Format::kText);
  EXPECT_EQ(text.find("\nc_total "), text.rfind("\nc_total ")) << text;
  const auto merged = segment->Collect();
  const MergedFamily* self = Find(merged, "modelmetrics_multiprocess_skipped_records");
  ASSERT_NE(self, nullptr) << "the copy is skipped, for one reason or another";
  ASSERT_EQ(self->children.size(), 1u);
  EXPECT_EQ(self->children[0].value, 1);
}

}  // namespace
}  // namespace modelmetrics
