// Writes and reads of one series' cells in a SharedSegment, for the instruments (instruments.cc).
// Private to src/metrics. Layout and protocol: segment_layout.h.
//
// Every write is an atomic read-modify-write or a store of a whole word, because the process's
// threads share its slot; no write waits for a reader. A histogram write holds the cell's
// sequence word odd (taken by CAS, so the process's threads exclude each other) for a few
// nanoseconds; a writer that finds it odd spins, then yields, and after a million tries (its
// holder stopped, or died in a slot it shared after a failed fork re-attach) takes it anyway
// rather than wait forever.
#ifndef MODELMETRICS_METRICS_SHARED_CELLS_H_
#define MODELMETRICS_METRICS_SHARED_CELLS_H_

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

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
// only) and `value` added to the sum.
inline void Observe(std::atomic<uint64_t>* cell, size_t bucket, double value) {
  std::atomic<uint64_t>& seq = cell[0];
  uint64_t s = seq.load(std::memory_order_relaxed);
  for (uint32_t spins = 0;; ++spins) {
    if ((s & 1) == 0) {
      if (seq.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                    std::memory_order_relaxed)) {
        break;
      }
      continue;
    }
    if (spins > (1u << 20)) {  // its holder is gone: write under its odd sequence
      --s;
      break;
    }
    if (spins < 64) {
      CpuRelax();
    } else {
      std::this_thread::yield();  // a holder descheduled mid-write
    }
    s = seq.load(std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  if (bucket != SIZE_MAX) {
    std::atomic<uint64_t>& count = cell[2 + bucket];
    count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  cell[1].store(std::bit_cast<uint64_t>(Load(cell[1]) + value), std::memory_order_relaxed);
  seq.store(s + 2, std::memory_order_release);
}

// A consistent copy of the cell into `snap` (bounded retries; see segment_layout.h), reusing its
// memory.
inline void Read(const std::atomic<uint64_t>* cell, size_t buckets, Histogram::Snapshot* out) {
  Histogram::Snapshot& snap = *out;
  snap.buckets.resize(buckets);
  for (int attempt = 0; attempt < 2000; ++attempt) {
    const uint64_t before = cell[0].load(std::memory_order_acquire);
    for (size_t b = 0; b < buckets; ++b) {
      snap.buckets[b] = cell[2 + b].load(std::memory_order_relaxed);
    }
    snap.sum = Load(cell[1]);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1) == 0 && cell[0].load(std::memory_order_relaxed) == before) break;
    CpuRelax();
  }
  snap.count = 0;
  for (uint64_t c : snap.buckets) snap.count += c;
}

inline Histogram::Snapshot Read(const std::atomic<uint64_t>* cell, size_t buckets) {
  Histogram::Snapshot snap;
  Read(cell, buckets, &snap);
  return snap;
}

}  // namespace modelmetrics::metrics_internal::shared_cells

#endif  // MODELMETRICS_METRICS_SHARED_CELLS_H_
