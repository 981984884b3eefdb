// The shared segment's process slots with real processes (fork): which slot a new process takes
// (never-used ones first, then those mark_process_dead named, then any whose owner is gone), what
// a reused slot keeps (counter and histogram sums) and clears (gauges), the slot's pid and
// generation, MarkProcessDead's rules, a fork child without a slot of its own, the counts
// Stats() reports, and the segment's name going with the last process that leaves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "metrics/segment_layout.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"

namespace modelmetrics {
namespace {

using segment_testing::Attach;
using segment_testing::Child;
using segment_testing::CounterTotal;
using segment_testing::Find;
using segment_testing::LiveChild;
using segment_testing::ShmExists;
using segment_testing::Tamper;
using segment_testing::UniqueName;
using segment_testing::Wait;
using ::testing::HasSubstr;

constexpr size_t kSlotsTestBytes = size_t{4} << 20;

// A forked child that exits at once; the slot it was given (its exit code) and its pid.
struct Exited {
  int slot;
  pid_t pid;
};
Exited ForkAndExit(const SharedSegment& segment) {
  const pid_t pid = Child([&] { return segment.slot(); });
  return {Wait(pid), pid};
}

TEST(SegmentSlots, NeverUsedSlotsFirstThenMarkedDeadThenAnyDeadOne) {
  const std::string name = UniqueName("order");
  auto segment = Attach(name, 4, kSlotsTestBytes);
  ASSERT_NE(segment, nullptr);
  ASSERT_EQ(segment->slot(), 0);
  Tamper t(name, kSlotsTestBytes);
  // Slots 1..3 are never used: each new process takes the lowest, though dead ones wait.
  const Exited first = ForkAndExit(*segment);
  const Exited second = ForkAndExit(*segment);
  const Exited third = ForkAndExit(*segment);
  EXPECT_EQ(first.slot, 1);
  EXPECT_EQ(second.slot, 2);
  EXPECT_EQ(third.slot, 3);
  EXPECT_EQ(t.slots[3].pid.load(), third.pid);
  // All used and all dead but this process's: the lowest dead one.
  const Exited fourth = ForkAndExit(*segment);
  EXPECT_EQ(fourth.slot, 1);
  // One named by mark_process_dead goes before the lower dead ones.
  EXPECT_EQ(segment->MarkProcessDead(third.pid), 1u);
  EXPECT_EQ(t.slots[3].flags.load(), segment::kMarkedDead);
  const Exited fifth = ForkAndExit(*segment);
  EXPECT_EQ(fifth.slot, 3);
  EXPECT_EQ(t.slots[3].flags.load(), 0u) << "the mark goes with the owner it named";
  const Exited sixth = ForkAndExit(*segment);
  EXPECT_EQ(sixth.slot, 1);
  // Each taking of a slot counts in its generation; the slot names its last owner.
  EXPECT_EQ(t.slots[0].generation.load(), 1u);
  EXPECT_EQ(t.slots[1].generation.load(), 3u);
  EXPECT_EQ(t.slots[2].generation.load(), 1u);
  EXPECT_EQ(t.slots[3].generation.load(), 2u);
  EXPECT_EQ(t.slots[1].pid.load(), sixth.pid);
  EXPECT_EQ(t.slots[2].pid.load(), second.pid);
  EXPECT_EQ(t.slots[0].pid.load(), getpid());
  // A pid whose slot went to another process names nothing any more.
  EXPECT_EQ(segment->MarkProcessDead(first.pid), 0u);
  EXPECT_EQ(segment->MarkProcessDead(third.pid), 0u);
  const SegmentStats stats = segment->Stats();
  EXPECT_EQ(stats.slots_used, 4u);
  EXPECT_EQ(stats.live, 1u);
}

// mark_process_dead marks only slots whose owner is gone: never a running process's (its slot
// lock is held), never this process's own, never through a read-only view.
TEST(SegmentSlots, MarkingNeedsTheOwnerGone) {
  const std::string name = UniqueName("mark");
  auto segment = Attach(name, 8, kSlotsTestBytes);
  ASSERT_NE(segment, nullptr);
  Tamper t(name, kSlotsTestBytes);
  LiveChild running([&] { return segment->slot(); });
  ASSERT_EQ(running.result(), 1);
  EXPECT_EQ(segment->MarkProcessDead(running.pid()), 0u) << "it is running";
  EXPECT_EQ(t.slots[1].flags.load(), 0u);
  EXPECT_EQ(segment->MarkProcessDead(getpid()), 0u) << "this process";
  auto second = Attach(name, 8, kSlotsTestBytes);  // this process again, through another handle
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->slot(), 2);
  EXPECT_EQ(segment->MarkProcessDead(getpid()), 0u) << "this process's other slot is held";
  EXPECT_EQ(segment->MarkProcessDead(0x7ffffff0), 0u) << "a pid no slot has";
  ASSERT_EQ(running.Release(), 1);
  std::string error;
  auto view = SharedSegment::Attach({.name = name, .observe_only = true}, &error);
  ASSERT_NE(view, nullptr) << error;
  EXPECT_EQ(view->MarkProcessDead(running.pid()), 0u) << "a read-only view marks nothing";
  EXPECT_EQ(t.slots[1].flags.load(), 0u);
  EXPECT_EQ(segment->MarkProcessDead(running.pid()), 1u);
  EXPECT_EQ(segment->MarkProcessDead(running.pid()), 1u) << "marking again still names it";
  EXPECT_EQ(t.slots[1].flags.load(), segment::kMarkedDead);
  // A process that held several slots had them all marked: here a fork child, which takes one
  // slot for each handle its parent had attached (two), and one more it attaches itself.
  const pid_t thrice = Child([&] {
    auto own = SharedSegment::Attach({.name = name}, nullptr);
    return own != nullptr && own->slot() != segment->slot() ? 0 : 1;
  });
  ASSERT_EQ(Wait(thrice), 0);
  EXPECT_EQ(t.slots[3].pid.load(), thrice);
  EXPECT_EQ(t.slots[4].pid.load(), thrice);
  EXPECT_EQ(t.slots[5].pid.load(), thrice);
  EXPECT_EQ(segment->MarkProcessDead(thrice), 3u);
  EXPECT_EQ(second->MarkProcessDead(thrice), 3u) << "any attached handle may mark";
}

// A slot's next owner continues the dead owner's counter and histogram sums (they stay counted,
// as a dead process's file does in prometheus_client) but none of its gauges.
TEST(SegmentSlots, AReusedSlotContinuesSumsAndClearsGauges) {
  const std::string name = UniqueName("continue");
  auto segment = Attach(name, 2, kSlotsTestBytes);
  ASSERT_NE(segment, nullptr);
  const FamilyOptions counter{.name = "jobs", .labels = {"k"}};
  const FamilyOptions histogram{.name = "took", .labels = {"k"}, .buckets = {1, 2}};
  const FamilyOptions gauge{.name = "level", .labels = {"k"}};
  const FamilyOptions only_first{.name = "first_only"};
  const FamilyOptions live{.name = "live_level", .multiprocess_mode = MultiprocessMode::kLiveSum};
  const pid_t first = Child([&] {
    Registry r(RegistryOptions{.shared = segment});
    r.AddCounter(counter)->Labels({"a"}).Add(uint64_t{5});
    Histogram h = r.AddHistogram(histogram)->Labels({"a"});
    h.Observe(0.5);
    h.Observe(3);
    r.AddGauge(gauge)->Labels({"a"}).Set(9);
    r.AddGauge(only_first)->Labels({}).Set(11);
    r.AddGauge(live)->Labels({}).Set(4);
    return segment->slot();
  });
  ASSERT_EQ(Wait(first), 1);
  auto merged = segment->Collect();
  ASSERT_NE(Find(merged, "level"), nullptr);
  ASSERT_EQ(Find(merged, "level")->children.size(), 1u) << "a dead process's gauge stays in `all`";
  EXPECT_EQ(Find(merged, "level")->children[0].pid, first);
  EXPECT_EQ(Find(merged, "level")->children[0].value, 9);
  EXPECT_EQ(Find(merged, "live_level"), nullptr) << "no live process has it";
  // The next process takes slot 1 and reads its sums as its own.
  LiveChild second([&] {
    Registry r(RegistryOptions{.shared = segment});
    Counter c = r.AddCounter(counter)->Labels({"a"});
    Histogram h = r.AddHistogram(histogram)->Labels({"a"});
    Gauge g = r.AddGauge(gauge)->Labels({"a"});
    if (segment->slot() != 1) return 1;
    if (c.Value() != 5) return 2;
    const Histogram::Snapshot before = h.Read();
    if (before.count != 2 || before.sum != 3.5 ||
        before.buckets != std::vector<uint64_t>{1, 0, 1}) {
      return 3;
    }
    if (g.Value() != 0) return 4;  // the last owner's 9 is not inherited
    c.Add(uint64_t{2});
    h.Observe(1.5);
    r.AddGauge(live)->Labels({}).Set(6);
    return 0;
  });
  ASSERT_EQ(second.result(), 0);
  merged = segment->Collect();
  EXPECT_EQ(Find(merged, "jobs")->children.at(0).value, 7);
  const MergedChild& took = Find(merged, "took")->children.at(0);
  EXPECT_EQ(took.buckets, (std::vector<uint64_t>{1, 1, 1}));
  EXPECT_EQ(took.count, 3u);
  EXPECT_EQ(took.sum, 5.0);
  ASSERT_EQ(Find(merged, "level")->children.size(), 1u);
  EXPECT_EQ(Find(merged, "level")->children[0].pid, second.pid());
  EXPECT_EQ(Find(merged, "level")->children[0].value, 0) << "made, never set, by the new owner";
  EXPECT_EQ(Find(merged, "first_only"), nullptr) << "no process has it any more";
  ASSERT_NE(Find(merged, "live_level"), nullptr);
  EXPECT_EQ(Find(merged, "live_level")->children.at(0).value, 6);
  const std::string text = segment->Render(Format::kText);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("first_only")));
  EXPECT_THAT(text, HasSubstr("level{k=\"a\",pid=\"" + std::to_string(second.pid()) + "\"} 0.0\n"));
  EXPECT_EQ(second.Release(), 0);
  EXPECT_EQ(Find(segment->Collect(), "live_level"), nullptr) << "its owner gone";
  Tamper t(name, kSlotsTestBytes);
  EXPECT_EQ(t.slots[1].generation.load(), 2u);
  EXPECT_EQ(t.slots[1].pid.load(), second.pid());
}

// With every slot held at fork(), the child keeps its parent's slot (and says so on stderr): its
// values land in the parent's cells, and it never leaves the segment for the parent.
TEST(SegmentSlots, AForkChildWithoutASlotRecordsIntoItsParents) {
  const std::string name = UniqueName("noslot");
  auto segment = Attach(name, 1, kSlotsTestBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  Counter counter = registry.AddCounter({.name = "c"})->Labels({});
  counter.Add(uint64_t{2});
  ::testing::internal::CaptureStderr();  // the child inherits the redirected descriptor
  const pid_t child = Child([&] {
    if (segment->slot() != 0) return 1;
    counter.Add(uint64_t{3});
    segment->Leave();  // a no-op here: leaving would drop the parent's attachment
    return 0;
  });
  const int exit_code = Wait(child);
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(exit_code, 0);
  EXPECT_THAT(stderr_text, HasSubstr("modelmetrics: no process slot of its own in the shared "
                                     "segment after fork(); this process records into its "
                                     "parent's slot"));
  EXPECT_EQ(counter.Value(), 5) << "the child's 3 are in this process's cells";
  EXPECT_EQ(CounterTotal(*segment, "c"), 5);
  EXPECT_TRUE(ShmExists(name));
  EXPECT_FALSE(segment->Removed());
  EXPECT_EQ(segment->MarkProcessDead(child), 0u) << "it had no slot";
  EXPECT_EQ(segment->Stats().slots_used, 1u);
  counter.Inc();
  EXPECT_EQ(CounterTotal(*segment, "c"), 6);
}

// A fork child's new slot holds, as made (0), the gauge children its parent had made before
// fork(); one the parent makes later is not the child's.
TEST(SegmentSlots, AForkChildsSlotHoldsTheGaugesItsParentHadMade) {
  const std::string name = UniqueName("made");
  auto segment = Attach(name, 4, kSlotsTestBytes);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  auto* gauges = registry.AddGauge({.name = "g", .help = "G.", .labels = {"k"}});
  gauges->Labels({"early"}).Set(5);
  LiveChild child([&] { return gauges->Labels({"early"}).Value() == 0 ? 0 : 1; });
  ASSERT_EQ(child.result(), 0);
  gauges->Labels({"late"}).Set(7);
  const auto merged = segment->Collect();
  const MergedFamily* g = Find(merged, "g");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->children.size(), 3u);
  const std::vector<std::string> early = {"early"}, late = {"late"};
  EXPECT_EQ(g->children[0].label_values, early);
  EXPECT_EQ(g->children[0].pid, getpid());
  EXPECT_EQ(g->children[0].value, 5);
  EXPECT_EQ(g->children[1].label_values, early);
  EXPECT_EQ(g->children[1].pid, child.pid());
  EXPECT_EQ(g->children[1].value, 0);
  EXPECT_EQ(g->children[2].label_values, late);
  EXPECT_EQ(g->children[2].pid, getpid());
  EXPECT_EQ(g->children[2].value, 7);
  EXPECT_EQ(child.Release(), 0);
}

TEST(SegmentStats, CountSlotsFamiliesSeriesAndCells) {
  const std::string name = UniqueName("stats");
  auto segment = Attach(name, 4, kSlotsTestBytes);
  ASSERT_NE(segment, nullptr);
  SegmentStats stats = segment->Stats();
  EXPECT_EQ(stats.slots_used, 1u);
  EXPECT_EQ(stats.live, 1u);
  EXPECT_EQ(stats.families, 0u);
  EXPECT_EQ(stats.series, 0u);
  EXPECT_EQ(stats.cell_words_used, 0u);
  EXPECT_EQ(stats.cell_words_per_slot, segment::PlanLayout(kSlotsTestBytes, 4)->words_per_slot);
  Registry registry(RegistryOptions{.shared = segment});
  auto* c = registry.AddCounter({.name = "c", .labels = {"k"}});
  c->Labels({"a"}).Inc();                                                  // words 0
  c->Labels({"b"}).Inc();                                                  // 1
  registry.AddGauge({.name = "g"})->Labels({}).Set(1);                     // 2, 3
  registry.AddHistogram({.name = "h", .buckets = {1, 2, 3}})->Labels({});  // 4 .. 8
  registry.AddCounter({.name = "unused"});  // a family without series takes no cells
  stats = segment->Stats();
  EXPECT_EQ(stats.families, 4u);
  EXPECT_EQ(stats.series, 4u);
  EXPECT_EQ(stats.cell_words_used, 9u);
  c->Labels({"a"}).Inc();  // an existing series: nothing new
  EXPECT_EQ(segment->Stats().series, 4u);
  LiveChild child([] { return 0; });
  stats = segment->Stats();
  EXPECT_EQ(stats.slots_used, 2u);
  EXPECT_EQ(stats.live, 2u);
  ASSERT_EQ(child.Release(), 0);
  stats = segment->Stats();
  EXPECT_EQ(stats.slots_used, 2u) << "a slot once taken stays counted";
  EXPECT_EQ(stats.live, 1u);
  std::string error;
  auto view = SharedSegment::Attach({.name = name, .observe_only = true}, &error);
  ASSERT_NE(view, nullptr) << error;
  const SegmentStats seen = view->Stats();
  EXPECT_EQ(seen.slots_used, 2u) << "a view takes no slot";
  EXPECT_EQ(seen.live, 1u);
  EXPECT_EQ(seen.families, 4u);
  EXPECT_EQ(seen.series, 4u);
  EXPECT_EQ(seen.cell_words_used, 9u);
  EXPECT_EQ(seen.cell_words_per_slot, stats.cell_words_per_slot);
}

// The name stays while any process is attached, a fork child included, and goes with the last
// one to leave; leaving twice changes nothing; values written after leaving still land.
TEST(SegmentLifetime, TheNameGoesWithTheLastProcessToLeave) {
  const std::string name = UniqueName("leave");
  auto first = Attach(name, 4, kSlotsTestBytes);
  auto second = Attach(name, 4, kSlotsTestBytes);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  Registry registry(RegistryOptions{.shared = first});
  Counter counter = registry.AddCounter({.name = "c"})->Labels({});
  first->Leave();
  first->Leave();
  EXPECT_TRUE(ShmExists(name)) << "the second handle is attached";
  EXPECT_FALSE(first->Removed());
  counter.Inc();  // after Leave: still lands in the mapping
  EXPECT_EQ(CounterTotal(*second, "c"), 1);
  // A child forked now is attached from fork() on: the parent's last handle leaving keeps it.
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = Child([&] {
    char c;
    if (read(go[0], &c, 1) != 1) return 2;
    if (!ShmExists(name)) return 3;
    second->Leave();  // the child's own attachment, the last one
    return ShmExists(name) ? 4 : 0;
  });
  second->Leave();
  EXPECT_TRUE(ShmExists(name)) << "the child is still attached";
  ASSERT_EQ(write(go[1], "x", 1), 1);
  EXPECT_EQ(Wait(child), 0);
  close(go[0]);
  close(go[1]);
  EXPECT_FALSE(ShmExists(name));
  EXPECT_TRUE(first->Removed());
  EXPECT_TRUE(second->Removed());
  counter.Inc();  // the mapping outlives the name
  EXPECT_EQ(counter.Value(), 2);
}

}  // namespace
}  // namespace modelmetrics
