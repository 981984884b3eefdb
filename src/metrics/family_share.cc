// How a family joins a SharedSegment: at once (Share), or, while a stopped process holds the
// segment's directory, later from the pending-shares thread, with what it recorded meanwhile
// (SyncShared). See family_state.h (State::Deferred) and pending_shares.h.
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>

#include "family_state.h"
#include "modelmetrics/shared_segment.h"
#include "pending_shares.h"
#include "shared_cells.h"

namespace modelmetrics::metrics_internal {

namespace {

// Bitwise: a NaN value equals itself (it was copied already), +0 and -0 differ.
bool Same(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

}  // namespace

void CopyNew(MetricType type, bool stamped, const Recorded& now, Recorded* copied,
             std::atomic<uint64_t>* cell) {
  switch (type) {
    case MetricType::kCounter:
      // A NaN or infinite total reaches the cell once and stays (NaN - NaN adds nothing new).
      if (!Same(now.counter, copied->counter)) {
        shared_cells::AddDouble(cell[0], now.counter - copied->counter);
      }
      break;
    case MetricType::kGauge:
      if (!Same(now.gauge, copied->gauge)) {
        cell[0].store(std::bit_cast<uint64_t>(now.gauge), std::memory_order_relaxed);
        cell[1].store(shared_cells::GaugeStamp(stamped), std::memory_order_release);
      }
      break;
    default: {
      const Histogram::Snapshot& to = now.histogram;
      Histogram::Snapshot& from = copied->histogram;
      from.buckets.resize(to.buckets.size());
      for (size_t b = 0; b < to.buckets.size(); ++b) {
        if (to.buckets[b] != from.buckets[b]) {
          cell[1 + b].fetch_add(to.buckets[b] - from.buckets[b], std::memory_order_relaxed);
        }
      }
      if (!Same(to.sum, from.sum)) shared_cells::AddDouble(cell[0], to.sum - from.sum);
      break;
    }
  }
  *copied = now;
}

Recorded FamilyBase::RecordedIn(const void* s) const {
  Recorded now;
  void* series = const_cast<void*>(s);  // the handles' constructors take it so; only read here
  switch (type_) {
    case MetricType::kCounter:
      now.counter = MakeCounter(series).Value();
      break;
    case MetricType::kGauge:
      now.gauge = MakeGauge(series).Value();
      break;
    default:
      now.histogram = MakeHistogram(series).Read();
      break;
  }
  return now;
}

bool FamilyBase::Share(std::shared_ptr<SharedSegment> segment, std::string* error) {
  std::string why;
  bool busy = false;
  const std::optional<uint32_t> index = segment->RegisterFamily(options_, type_, &why, &busy);
  if (!index && !busy) {
    if (error != nullptr) *error = why;
    return false;
  }
  shared_ = std::move(segment);
  State& st = *state_;
  {
    base::MutexLock lock(&st.mu);
    st.join = index ? State::Join::kJoined : State::Join::kWaiting;
    if (index) st.shared_family = *index;
  }
  if (!index) {
    // A metric never stops a server from starting: it records here, and joins once released.
    std::fprintf(stderr,
                 "modelmetrics: %s records in this process until it can join the shared "
                 "segment: %s\n",
                 options_.name.c_str(), why.c_str());
    pending_shares::Add(this);
  }
  return true;
}

FamilyBase::SyncResult FamilyBase::SyncShared() {
  State& st = *state_;
  base::MutexLock lock(&st.mu);
  std::string error;
  bool busy = false;
  if (st.join == State::Join::kWaiting) {
    const std::optional<uint32_t> index = shared_->RegisterFamily(options_, type_, &error, &busy);
    if (!index && busy) return SyncResult::kBusy;
    if (!index) {
      std::fprintf(stderr, "modelmetrics: %s records in this process only: %s\n",
                   options_.name.c_str(), error.c_str());
      st.deferred.clear();
      st.join = State::Join::kNone;
      return SyncResult::kDone;
    }
    st.shared_family = *index;
    st.join = State::Join::kJoined;
  }
  const bool stamped = options_.multiprocess_mode == MultiprocessMode::kMostRecent ||
                       options_.multiprocess_mode == MultiprocessMode::kLiveMostRecent;
  for (auto it = st.deferred.begin(); it != st.deferred.end();) {
    State::Deferred& d = *it;
    if (d.cell.base == nullptr) {
      d.cell = shared_->RegisterSeries(st.shared_family, type_, options_.buckets.size(),
                                       KeyValues(d.child->key), &error, &busy);
      if (d.cell.base == nullptr && busy) return SyncResult::kBusy;
      if (d.cell.base == nullptr) {  // the segment is full: this child stays in this process
        st.Refuse(options_.name, &State::warned_shared, error, nullptr);
        it = st.deferred.erase(it);
        continue;
      }
    }
    CopyNew(type_, stamped, RecordedIn(d.child->raw()), &d.copied, d.cell.get());
    ++it;
  }
  return st.deferred.empty() ? SyncResult::kDone : SyncResult::kAgain;
}

bool FamilyBase::RebaseAfterFork() {
  State& st = *state_;
  if (!st.mu.TryLock()) return false;
  for (State::Deferred& d : st.deferred) {
    if (type_ == MetricType::kGauge) {
      // A joined gauge's cell in the child's new slot starts at 0: so does a waiting one.
      std::get<1>(d.child->series)->value.store(0, std::memory_order_relaxed);
      d.copied.gauge = std::nan("");
    } else {
      d.copied = RecordedIn(d.child->raw());
    }
  }
  st.mu.Unlock();
  return true;
}

}  // namespace modelmetrics::metrics_internal
