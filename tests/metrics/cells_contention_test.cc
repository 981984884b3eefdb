// The lock-free cells under contention: many threads incrementing one counter, observing one
// histogram and adding to one gauge while a reader reads, in a process's own registry (thread
// shards, series.h, instruments.cc) and in a shared segment's cells (shared_cells.h), with more
// threads alive at once than thread slots (the shared slot's atomic adds and spin lock,
// thread_slot.h). Totals are exact at the end; every histogram read is one consistent snapshot
// (the sequence counter: `_sum` covers exactly the observations the buckets count, and `_count`
// is their sum); nothing a reader sees ever goes down. Thread slots are owned one per live
// thread and handed on when it exits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "metrics/shared_cells.h"
#include "metrics/thread_slot.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"
#include "test_deadlines.h"

namespace modelmetrics {
namespace {

using metrics_internal::kOwnedSlots;
using metrics_internal::kSharedSlot;
using metrics_internal::kSlots;
namespace cells = metrics_internal::shared_cells;

// More threads alive at once than thread slots: at least kSlots + 8 - kOwnedSlots share one.
constexpr int kCrowd = kSlots + 8;

// Runs `threads` writers, each calling `write(thread, begin, end)` for its iterations
// [0, per_thread): the first alone; then, once every writer has made its first (so the crowd is
// alive at once), the first half of the rest; then, once `read()` (run in a loop beside them
// until they are done, and once after) has run a few times since, the second half. So reads
// always fall between writes, however the threads are scheduled. Reports the slot each writer
// got in `slots` when given.
void RunWithReader(int threads, int per_thread, const std::function<void(int, int, int)>& write,
                   const std::function<void()>& read, std::vector<int>* slots = nullptr) {
  constexpr int kReadsMidway = 4;
  std::latch all_started(threads);
  std::atomic<int> running{threads};
  std::atomic<int> reads{0};
  std::vector<int> taken(threads, -1);
  std::vector<std::thread> writers;
  const int half = 1 + (per_thread - 1) / 2;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, t] {
      write(t, 0, 1);
      taken[t] = metrics_internal::tls_thread_slot;
      all_started.arrive_and_wait();
      const int reads_before = reads.load();
      write(t, 1, half);
      modelmetrics::testing::WaitUntil([&] { return reads.load() >= reads_before + kReadsMidway; });
      write(t, half, per_thread);
      running.fetch_sub(1);
    });
  }
  while (running.load() > 0) {
    read();
    reads.fetch_add(1);
  }
  for (std::thread& w : writers) w.join();
  read();
  if (slots != nullptr) *slots = taken;
}

int SharedSlotThreads(const std::vector<int>& slots) {
  return static_cast<int>(std::count(slots.begin(), slots.end(), kSharedSlot));
}

TEST(SharedCellsContention, OneCellAddedToFromManyThreadsLosesNothing) {
  std::atomic<uint64_t> cell{0};
  constexpr int kThreads = 8, kAdds = 50000;
  double last = 0;
  RunWithReader(
      kThreads, kAdds,
      [&](int, int begin, int end) {
        for (int i = begin; i < end; ++i) cells::AddDouble(cell, 1.5);
      },
      [&] {
        const double now = cells::Load(cell);
        EXPECT_GE(now, last);
        EXPECT_EQ(std::fmod(now, 1.5), 0) << "a whole number of adds";
        last = now;
      });
  EXPECT_EQ(cells::Load(cell), 1.5 * kThreads * kAdds);
}

// A shared segment's histogram cells [sum, counts...]: a read's count is the sum of the counts
// it read, each count only grows, and the totals are exact once the writers are done.
TEST(SharedCellsContention, HistogramCellsObservedFromManyThreads) {
  std::vector<std::atomic<uint64_t>> cell(1 + 3);  // sum, two bounds, +Inf
  constexpr int kThreads = 6, kObservations = 30000;
  std::vector<uint64_t> last(3, 0);
  RunWithReader(
      kThreads, kObservations,
      [&](int t, int begin, int end) {
        for (int i = begin; i < end; ++i) {
          const size_t bucket = static_cast<size_t>((t + i) % 3);
          cells::Observe(cell.data(), bucket, static_cast<double>(bucket + 1));
        }
      },
      [&] {
        const Histogram::Snapshot snap = cells::Read(cell.data(), 3);
        uint64_t total = 0;
        for (size_t b = 0; b < 3; ++b) {
          EXPECT_GE(snap.buckets[b], last[b]) << b;
          last[b] = snap.buckets[b];
          total += snap.buckets[b];
        }
        EXPECT_EQ(snap.count, total);
      });
  const Histogram::Snapshot done = cells::Read(cell.data(), 3);
  EXPECT_EQ(done.count, uint64_t{kThreads} * kObservations);
  double sum = 0;
  for (size_t b = 0; b < 3; ++b) sum += static_cast<double>(done.buckets[b]) * (b + 1);
  EXPECT_EQ(done.sum, sum);
  // An observation without a bucket (prometheus_client's NaN) reaches the sum only.
  std::vector<std::atomic<uint64_t>> nan_cell(1 + 2);
  cells::Observe(nan_cell.data(), SIZE_MAX, 2.5);
  const Histogram::Snapshot nan = cells::Read(nan_cell.data(), 2);
  EXPECT_EQ(nan.count, 0u);
  EXPECT_EQ(nan.sum, 2.5);
}

// Observations of 1.0 land in le=1 and of 2.0 in le=2, so a snapshot is consistent exactly when
// sum == b0 + 2 * b1 (and nothing is in +Inf): the sequence counter must make every read one.
void ExpectConsistentHistogramReads(int threads, int per_thread, int* shared_slot_threads) {
  Registry registry;
  Histogram h = registry.AddHistogram({.name = "h", .buckets = {1, 2}})->Labels({});
  uint64_t last_count = 0;
  std::vector<int> slots;
  RunWithReader(
      threads, per_thread,
      [&](int t, int begin, int end) {
        for (int i = begin; i < end; ++i) h.Observe((t + i) % 2 == 0 ? 1 : 2);
      },
      [&] {
        const Histogram::Snapshot snap = h.Read();
        ASSERT_EQ(snap.buckets.size(), 3u);
        EXPECT_EQ(snap.sum, static_cast<double>(snap.buckets[0] + 2 * snap.buckets[1]))
            << "a torn snapshot: " << snap.buckets[0] << " " << snap.buckets[1];
        EXPECT_EQ(snap.buckets[2], 0u);
        EXPECT_EQ(snap.count, snap.buckets[0] + snap.buckets[1]);
        EXPECT_GE(snap.count, last_count);
        last_count = snap.count;
      },
      &slots);
  const Histogram::Snapshot done = h.Read();
  EXPECT_EQ(done.count, static_cast<uint64_t>(threads) * per_thread);
  EXPECT_EQ(done.sum, static_cast<double>(done.buckets[0] + 2 * done.buckets[1]));
  *shared_slot_threads = SharedSlotThreads(slots);
  // The registry's exposition agrees: +Inf equals _count.
  const std::string text = registry.Render(Format::kText);
  const std::string count = std::to_string(done.count) + ".0\n";
  EXPECT_THAT(text, ::testing::HasSubstr("h_bucket{le=\"+Inf\"} " + count + "h_count " + count));
}

TEST(HistogramContention, ReadsAreWholeSnapshotsWhileOwnedSlotsObserve) {
  int shared = 0;
  ExpectConsistentHistogramReads(4, 200000, &shared);
  EXPECT_EQ(shared, 0) << "four threads fit in the owned slots";
}

TEST(HistogramContention, ReadsAreWholeSnapshotsWhileTheSharedSlotIsContended) {
  int shared = 0;
  ExpectConsistentHistogramReads(kCrowd, 20000, &shared);
  EXPECT_GE(shared, kCrowd - kOwnedSlots) << "the crowd's overflow shares one slot";
}

TEST(CounterContention, ACrowdOnOneCounterCountsExactlyAndNeverGoesDown) {
  Registry registry;
  Counter c = registry.AddCounter({.name = "c"})->Labels({});
  constexpr int kPerThread = 10000;
  double last = 0;
  std::vector<int> slots;
  RunWithReader(
      kCrowd, kPerThread,
      [&](int, int begin, int end) {
        for (int i = begin; i < end; ++i) {
          c.Inc();
          c.Add(uint64_t{2});
          c.Add(0.25);
        }
      },
      [&] {
        const double now = c.Value();
        EXPECT_GE(now, last);
        last = now;
      },
      &slots);
  EXPECT_GE(SharedSlotThreads(slots), kCrowd - kOwnedSlots);
  EXPECT_EQ(c.Value(), 3.25 * kCrowd * kPerThread);
  EXPECT_THAT(
      registry.Render(Format::kText),
      ::testing::HasSubstr("c_total " + std::to_string(13 * kCrowd * kPerThread / 4) + ".0\n"));
}

TEST(GaugeContention, AddsFromACrowdAreExactAndNeverTorn) {
  Registry registry;
  Gauge g = registry.AddGauge({.name = "g"})->Labels({});
  constexpr int kPerThread = 20000;
  RunWithReader(
      kCrowd, kPerThread,
      [&](int t, int begin, int end) {
        for (int i = begin; i < end; ++i) {
          g.Inc();
          g.Add(t % 2 == 0 ? 2 : -1);
        }
      },
      [&] {
        const double now = g.Value();
        EXPECT_EQ(now, std::floor(now)) << "only whole amounts were added";
      });
  // Half the threads add 3 per round, the other half 0.
  EXPECT_EQ(g.Value(), 3.0 * (kCrowd / 2) * kPerThread);
}

// A process's threads share its slot's cells in a shared segment: a crowd of them counting,
// observing and adding while a scrape of the segment runs beside them.
TEST(SharedSegmentContention, ACrowdOfThreadsSharesItsProcessesCells) {
  const std::string name = segment_testing::UniqueName("crowd");
  auto segment = segment_testing::Attach(name);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  Counter c = registry.AddCounter({.name = "c"})->Labels({});
  Histogram h = registry.AddHistogram({.name = "h", .buckets = {1, 2}})->Labels({});
  Gauge g =
      registry.AddGauge({.name = "g", .multiprocess_mode = MultiprocessMode::kSum})->Labels({});
  constexpr int kPerThread = 10000;
  double last_counter = 0;
  std::vector<uint64_t> last_buckets(3, 0);
  int scrapes = 0;
  RunWithReader(
      kCrowd, kPerThread,
      [&](int t, int begin, int end) {
        for (int i = begin; i < end; ++i) {
          c.Inc();
          h.Observe((t + i) % 3);  // 0 and 1 in le=1, 2 in le=2
          g.Add(0.5);
        }
      },
      [&] {
        const auto merged = segment->Collect();
        const MergedFamily* counter = segment_testing::Find(merged, "c");
        const MergedFamily* histogram = segment_testing::Find(merged, "h");
        ASSERT_NE(counter, nullptr);
        ASSERT_NE(histogram, nullptr);
        EXPECT_GE(counter->children.at(0).value, last_counter);
        last_counter = counter->children.at(0).value;
        const MergedChild& child = histogram->children.at(0);
        uint64_t total = 0;
        for (size_t b = 0; b < 3; ++b) {
          EXPECT_GE(child.buckets[b], last_buckets[b]);
          last_buckets[b] = child.buckets[b];
          total += child.buckets[b];
        }
        EXPECT_EQ(child.count, total);
        EXPECT_EQ(child.buckets[2], 0u);
        if (++scrapes % 16 == 0) segment_testing::StrictParse(segment->Render(Format::kText));
      });
  const uint64_t n = uint64_t{kCrowd} * kPerThread;
  uint64_t seen[3] = {0, 0, 0};  // the observations of 0, 1 and 2, counted from their definition
  for (int t = 0; t < kCrowd; ++t) {
    for (int i = 0; i < kPerThread; ++i) ++seen[(t + i) % 3];
  }
  EXPECT_EQ(c.Value(), static_cast<double>(n));
  const Histogram::Snapshot snap = h.Read();
  EXPECT_EQ(snap.count, n);
  EXPECT_EQ(snap.buckets, (std::vector<uint64_t>{seen[0] + seen[1], seen[2], 0}));
  EXPECT_EQ(snap.sum, static_cast<double>(seen[1] + 2 * seen[2]));
  EXPECT_EQ(g.Value(), 0.5 * static_cast<double>(n));
  EXPECT_EQ(segment_testing::CounterTotal(*segment, "c"), static_cast<double>(n));
}

// Each live thread that records owns a slot no other live thread has; one that exits hands its
// slot to the next thread; a thread that never records takes none.
TEST(ThreadSlots, LiveThreadsOwnDistinctSlotsAndExitedOnesAreHandedOn) {
  Registry registry;
  Counter c = registry.AddCounter({.name = "c"})->Labels({});
  int idle_slot = 0;
  std::thread([&] { idle_slot = metrics_internal::tls_thread_slot; }).join();
  EXPECT_EQ(idle_slot, -1) << "a thread that never recorded";
  std::vector<int> slots;
  RunWithReader(
      kOwnedSlots, 2, [&](int, int begin, int end) { c.Add(uint64_t(end - begin)); }, [] {},
      &slots);
  std::vector<int> owned;
  for (int s : slots) {
    EXPECT_GE(s, 0);
    EXPECT_LT(s, kSlots);
    if (s != kSharedSlot) owned.push_back(s);
  }
  std::sort(owned.begin(), owned.end());
  EXPECT_EQ(std::adjacent_find(owned.begin(), owned.end()), owned.end()) << "two live owners";
  EXPECT_GE(owned.size(), static_cast<size_t>(kOwnedSlots - 1))
      << "at most this thread holds one besides them";
  EXPECT_GE(metrics_internal::SlotsInUse(), owned.back() + 1);
  // Alone, a new thread takes the lowest free slot, and the next the same one once it is gone.
  int first = -1, second = -1;
  std::thread([&] {
    c.Add(uint64_t{1000});
    first = metrics_internal::tls_thread_slot;
  }).join();
  std::thread([&] {
    c.Add(uint64_t{500});
    second = metrics_internal::tls_thread_slot;
  }).join();
  EXPECT_NE(first, kSharedSlot);
  EXPECT_EQ(second, first);
  EXPECT_EQ(c.Value(), kOwnedSlots * 2 + 1500.0) << "the slot's sums continue";
}

}  // namespace
}  // namespace modelmetrics
