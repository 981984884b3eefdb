// Writes and reads of one series' cells in a SharedSegment, for the instruments (instruments.cc)
// and the scrape (segment_merge.cc). Private to src/metrics. Layout: segment_layout.h.
//
// Every write is an atomic read-modify-write or a store of a whole word, because the process's
// threads share its slot; no write ever waits, for a reader or for another writer, so a process
// stopped or killed mid-write holds nobody up.
#ifndef MODELMETRICS_METRICS_SHARED_CELLS_H_
#define MODELMETRICS_METRICS_SHARED_CELLS_H_

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "modelmetrics/metrics.h"

namespace modelmetrics::metrics_internal::shared_cells {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

inline double Load(const std::atomic<uint64_t>& cell) {
  return std::bit_cast<double>(cell.load(std::memory_order_relaxed));
}

inline void AddDouble(std::atomic<uint64_t>& cell, double amount) {
  uint64_t old = cell.load(std::memory_order_relaxed);
  while (!cell.compare_exchange_weak(old,
                                     std::bit_cast<uint64_t>(std::bit_cast<double>(old) + amount),
                                     std::memory_order_relaxed)) {
  }
}

// A gauge's stamp word: wall seconds for most-recent gauges, else 1.0 ("set").
inline uint64_t GaugeStamp(bool wall_time) {
  if (!wall_time) return std::bit_cast<uint64_t>(1.0);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return std::bit_cast<uint64_t>(now);
}

// One observation: `bucket` counted (none when bucket == SIZE_MAX: a NaN, which reaches `_sum`
// only) and `value` added to the sum. Cell: [sum bits, counts per bucket, +Inf last].
inline void Observe(std::atomic<uint64_t>* cell, size_t bucket, double value) {
  if (bucket != SIZE_MAX) cell[1 + bucket].fetch_add(1, std::memory_order_relaxed);
  AddDouble(cell[0], value);
}

// The cell's counts and sum, into `out` (reusing its memory). `count` is the sum of the counts
// read, so it equals the +Inf bucket; `sum` may differ by observations in flight.
inline void Read(const std::atomic<uint64_t>* cell, size_t buckets, Histogram::Snapshot* out) {
  Histogram::Snapshot& snap = *out;
  snap.buckets.resize(buckets);
  snap.count = 0;
  for (size_t b = 0; b < buckets; ++b) {
    snap.buckets[b] = cell[1 + b].load(std::memory_order_relaxed);
    snap.count += snap.buckets[b];
  }
  snap.sum = Load(cell[0]);
}

inline Histogram::Snapshot Read(const std::atomic<uint64_t>* cell, size_t buckets) {
  Histogram::Snapshot snap;
  Read(cell, buckets, &snap);
  return snap;
}

}  // namespace modelmetrics::metrics_internal::shared_cells

#endif  // MODELMETRICS_METRICS_SHARED_CELLS_H_
