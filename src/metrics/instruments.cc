// Observation paths of Counter, Gauge and Histogram. See series.h for the shard protocol.
#include <cmath>
#include <thread>

#include "modelmetrics/metrics.h"
#include "series.h"
#include "shared_cells.h"

namespace modelmetrics {
namespace {

using metrics_internal::BitsToDouble;
using metrics_internal::DoubleToBits;
using metrics_internal::HistogramSeries;
using metrics_internal::kSharedSlot;
using metrics_internal::kSlots;
using metrics_internal::shared_cells::CpuRelax;

// Adds to a double stored as bits. Owned slots: plain load + store; shared slot: CAS loop.
inline void AddDoubleBits(std::atomic<uint64_t>& cell, double amount, bool shared) {
  if (!shared) {
    cell.store(DoubleToBits(BitsToDouble(cell.load(std::memory_order_relaxed)) + amount),
               std::memory_order_relaxed);
    return;
  }
  uint64_t old = cell.load(std::memory_order_relaxed);
  while (!cell.compare_exchange_weak(old, DoubleToBits(BitsToDouble(old) + amount),
                                     std::memory_order_relaxed)) {
  }
}

// One observation into a histogram shard, as a sequence-counter write section.
inline void WriteShard(std::atomic<uint64_t>* shard, size_t bucket, double value) {
  const uint64_t seq = shard[HistogramSeries::kSeq].load(std::memory_order_relaxed);
  shard[HistogramSeries::kSeq].store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::atomic<uint64_t>& count = shard[HistogramSeries::kFirstBucket + bucket];
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  AddDoubleBits(shard[HistogramSeries::kSum], value, false);
  shard[HistogramSeries::kSeq].store(seq + 2, std::memory_order_release);
}

}  // namespace

void Counter::AddLive(uint64_t amount) const {
  if (series_->shared.base != nullptr) {
    metrics_internal::shared_cells::AddDouble(*series_->shared.get(), static_cast<double>(amount));
    return;
  }
  const int slot = metrics_internal::ThreadSlot();
  std::atomic<uint64_t>& cell = series_->Shard(slot).count;
  if (slot != kSharedSlot) {
    cell.store(cell.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
  } else {
    cell.fetch_add(amount, std::memory_order_relaxed);
  }
}

void Counter::AddLive(double amount) const {
  if (!(amount > 0) || std::isinf(amount)) return;
  if (series_->shared.base != nullptr) {
    metrics_internal::shared_cells::AddDouble(*series_->shared.get(), amount);
    return;
  }
  const int slot = metrics_internal::ThreadSlot();
  AddDoubleBits(series_->Shard(slot).fraction_bits, amount, slot == kSharedSlot);
}

void Counter::AddFloatLive(double amount) const {
  if (!(amount > 0) && !std::isnan(amount)) return;
  if (series_->shared.base != nullptr) {  // one double cell holds NaN and +Inf too
    metrics_internal::shared_cells::AddDouble(*series_->shared.get(), amount);
    return;
  }
  if (std::isfinite(amount)) {
    AddLive(amount);
    return;
  }
  AddDoubleBits(series_->non_finite_bits, amount, true);
}

double Counter::Value() const {
  if (series_ == nullptr) return 0;
  if (series_->shared.base != nullptr) {  // this process's own, as prometheus_client reads it
    return metrics_internal::shared_cells::Load(*series_->shared.get());
  }
  uint64_t count = 0;
  double fraction = 0;
  const int slots = metrics_internal::SlotsInUse();
  for (int i = 0; i < slots; ++i) {
    const metrics_internal::CounterShard* shard = series_->Read(i);
    if (shard == nullptr) continue;
    count += shard->count.load(std::memory_order_relaxed);
    fraction += BitsToDouble(shard->fraction_bits.load(std::memory_order_relaxed));
  }
  const double non_finite = BitsToDouble(series_->non_finite_bits.load(std::memory_order_relaxed));
  return static_cast<double>(count) + fraction + non_finite;
}

void Gauge::AddLive(double amount) const {
  if (series_->shared.base == nullptr) {
    series_->value.fetch_add(amount, std::memory_order_relaxed);
    return;
  }
  std::atomic<uint64_t>* cell = series_->shared.get();
  metrics_internal::shared_cells::AddDouble(cell[0], amount);
  cell[1].store(metrics_internal::shared_cells::GaugeStamp(series_->stamped),
                std::memory_order_release);
}

double Gauge::Value() const {
  if (series_ == nullptr) return 0;
  if (series_->shared.base != nullptr) {
    return metrics_internal::shared_cells::Load(*series_->shared.get());
  }
  return series_->value.load(std::memory_order_relaxed);
}

namespace metrics_internal {
void SetShared(const GaugeSeries& series, double value) {
  std::atomic<uint64_t>* cell = series.shared.get();
  cell[0].store(DoubleToBits(value), std::memory_order_relaxed);
  cell[1].store(shared_cells::GaugeStamp(series.stamped), std::memory_order_release);
}
}  // namespace metrics_internal

void Histogram::ObserveLive(double value) const {
  const size_t bucket = series_->BucketOf(value);
  if (series_->shared.base != nullptr) {
    metrics_internal::shared_cells::Observe(series_->shared.get(), bucket, value);
    return;
  }
  const int slot = metrics_internal::ThreadSlot();
  std::atomic<uint64_t>* shard = series_->shard(slot);
  if (slot != kSharedSlot) {
    WriteShard(shard, bucket, value);
    return;
  }
  std::atomic<uint64_t>& lock = shard[HistogramSeries::kLock];
  // A holder descheduled mid-write (more threads than cores) is waited for by yielding.
  for (int spins = 0; lock.exchange(1, std::memory_order_acquire) != 0; ++spins) {
    if (spins < 64) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
  WriteShard(shard, bucket, value);
  lock.store(0, std::memory_order_release);
}

void Histogram::ObserveFloatLive(double value) const {
  if (std::isnan(value)) {
    if (series_->shared.base != nullptr) {
      metrics_internal::shared_cells::Observe(series_->shared.get(), SIZE_MAX, value);
    } else {
      AddDoubleBits(series_->nan_sum_bits, value, true);
    }
    return;
  }
  ObserveLive(value);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snap;
  if (series_ == nullptr) return snap;
  if (series_->shared.base != nullptr) {  // this process's own, as prometheus_client reads it
    return metrics_internal::shared_cells::Read(series_->shared.get(), series_->buckets);
  }
  const size_t n = series_->buckets;
  snap.buckets.assign(n, 0);
  std::vector<uint64_t> copy(n);
  const int slots = metrics_internal::SlotsInUse();
  for (int slot = 0; slot < slots; ++slot) {
    const std::atomic<uint64_t>* shard = series_->Read(slot);
    if (shard == nullptr) continue;
    double sum;
    for (int attempt = 0;; ++attempt) {
      const uint64_t before = shard[HistogramSeries::kSeq].load(std::memory_order_acquire);
      if ((before & 1) == 0) {
        for (size_t i = 0; i < n; ++i) {
          copy[i] = shard[HistogramSeries::kFirstBucket + i].load(std::memory_order_relaxed);
        }
        sum = BitsToDouble(shard[HistogramSeries::kSum].load(std::memory_order_relaxed));
        std::atomic_thread_fence(std::memory_order_acquire);
        if (shard[HistogramSeries::kSeq].load(std::memory_order_relaxed) == before) break;
      }
      // A writer is mid-observation (a few nanoseconds); it never waits for us.
      if (attempt < 64) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
    for (size_t i = 0; i < n; ++i) snap.buckets[i] += copy[i];
    snap.sum += sum;
  }
  for (uint64_t c : snap.buckets) snap.count += c;
  snap.sum += BitsToDouble(series_->nan_sum_bits.load(std::memory_order_relaxed));
  return snap;
}

}  // namespace modelmetrics
