// The storage behind instrument handles. Private to src/metrics.
//
// Every series keeps up to kSlots shards, each on its own cache line(s), allocated at its slot's
// first write: a series one thread records costs one shard and a table of kSlots pointers, not
// kSlots shards (1 KiB per counter, 3 KiB per histogram), so a family of a million children stays
// within prometheus_client's memory per child. A shard is published with a release CAS (the
// shared slot's writers may race to make it; one wins) and found with an acquire load; readers
// skip slots without one. Shard `slot` is written only by the thread owning that slot (plain
// relaxed load + store), except kSharedSlot, which is written with atomic read-modify-writes
// (counters) or under its spin lock (histograms). Readers only load.
//
// Histogram shards are written under a sequence counter (even: stable, odd: being written); a
// reader copies a shard and retries until it saw the same even sequence before and after. Writers
// never wait for readers.
//
// A series kept in a SharedSegment (`shared.base` set) has no shards: its writes go to the
// process's cells there (shared_cells.h).
#ifndef MODELMETRICS_METRICS_SERIES_H_
#define MODELMETRICS_METRICS_SERIES_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "modelmetrics/metrics.h"
#include "thread_slot.h"

namespace modelmetrics::metrics_internal {

inline constexpr size_t kCacheLine = 64;

inline double BitsToDouble(uint64_t bits) { return std::bit_cast<double>(bits); }
inline uint64_t DoubleToBits(double v) { return std::bit_cast<uint64_t>(v); }

struct alignas(kCacheLine) CounterShard {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> fraction_bits{0};  // sum of Add(double) amounts, as double bits
};

struct CounterSeries {
  CounterSeries() = default;
  ~CounterSeries() {
    for (auto& shard : shards) delete shard.load(std::memory_order_relaxed);
  }
  CounterSeries(const CounterSeries&) = delete;
  CounterSeries& operator=(const CounterSeries&) = delete;

  // The slot's shard, made at its first write.
  CounterShard& Shard(int slot) {
    CounterShard* shard = shards[slot].load(std::memory_order_acquire);
    return shard != nullptr ? *shard : Make(slot);
  }
  // The slot's shard, or null when the slot never wrote.
  const CounterShard* Read(int slot) const { return shards[slot].load(std::memory_order_acquire); }

 private:
  CounterShard& Make(int slot) {
    CounterShard* fresh = new CounterShard;
    CounterShard* expected = nullptr;
    if (shards[slot].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
      return *fresh;
    }
    delete fresh;  // another writer of the shared slot made it first
    return *expected;
  }

  std::atomic<CounterShard*> shards[kSlots] = {};

 public:
  // NaN and +Inf amounts of Counter::AddFloat, summed as double bits (CAS): rare, so one word per
  // series rather than one per shard.
  std::atomic<uint64_t> non_finite_bits{0};
  SharedCell shared;  // in a SharedSegment: every amount goes there instead (no shards)
};

static_assert(alignof(GaugeSeries) == kCacheLine);  // GaugeSeries is in modelmetrics/metrics.h

// Words of one histogram shard: [0] sequence, [1] spin lock (shared slot only), [2] sum bits,
// [3 .. 3+buckets) per-bucket counts (the last bucket is +Inf).
struct HistogramSeries {
  static constexpr size_t kSeq = 0, kLock = 1, kSum = 2, kFirstBucket = 3;

  HistogramSeries(const std::vector<double>* upper_bounds)
      : bounds(upper_bounds),
        buckets(upper_bounds->size() + 1),
        stride(((kFirstBucket + buckets) * 8 + kCacheLine - 1) / kCacheLine * kCacheLine / 8) {}
  ~HistogramSeries() {
    for (auto& shard : shards) {
      if (auto* words = shard.load(std::memory_order_relaxed)) {
        ::operator delete(words, std::align_val_t(kCacheLine));
      }
    }
  }
  HistogramSeries(const HistogramSeries&) = delete;
  HistogramSeries& operator=(const HistogramSeries&) = delete;

  // The slot's shard (`stride` words), made at its first write.
  std::atomic<uint64_t>* shard(int slot) {
    std::atomic<uint64_t>* words = shards[slot].load(std::memory_order_acquire);
    return words != nullptr ? words : Make(slot);
  }
  // The slot's shard, or null when the slot never wrote.
  const std::atomic<uint64_t>* Read(int slot) const {
    return shards[slot].load(std::memory_order_acquire);
  }

  // The bucket of `value`: the first bound >= value, or +Inf (also for NaN). A linear scan below
  // 32 bounds (the omni lists have at most 14), where it beats a binary search; binary above.
  size_t BucketOf(double value) const {
    const size_t n = bounds->size();
    const double* b = bounds->data();
    if (n == 0 || !(value <= b[n - 1])) return n;
    if (n > 32) {
      size_t lo = 0, hi = n - 1;  // invariant: b[hi] >= value
      while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (b[mid] >= value) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      return lo;
    }
    size_t i = 0;
    while (value > b[i]) ++i;
    return i;
  }

  const std::vector<double>* bounds;  // owned by the family
  const size_t buckets;               // bounds + 1
  const size_t stride;                // words per shard, a whole number of cache lines

 private:
  std::atomic<uint64_t>* Make(int slot) {
    auto* fresh = static_cast<std::atomic<uint64_t>*>(
        ::operator new(stride * 8, std::align_val_t(kCacheLine)));
    for (size_t i = 0; i < stride; ++i) new (&fresh[i]) std::atomic<uint64_t>(0);
    std::atomic<uint64_t>* expected = nullptr;
    if (shards[slot].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
      return fresh;
    }
    ::operator delete(fresh, std::align_val_t(kCacheLine));  // the shared slot's race, lost
    return expected;
  }

  std::atomic<std::atomic<uint64_t>*> shards[kSlots] = {};

 public:
  // NaN observations of Histogram::ObserveFloat, summed as double bits: they reach `_sum` and no
  // bucket, as prometheus_client counts them.
  std::atomic<uint64_t> nan_sum_bits{0};
  SharedCell shared;  // in a SharedSegment: every observation goes there instead (no shards)
};

}  // namespace modelmetrics::metrics_internal

#endif  // MODELMETRICS_METRICS_SERIES_H_
