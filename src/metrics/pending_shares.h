// The families of this process that wait to join a SharedSegment, and the thread that joins them.
// Private to src/metrics.
//
// A registration gives up on a segment whose directory a stopped process holds (the wait is
// bounded, segment_directory.cc); the family, or the new child, then records in this process
// (FamilyBase::Share, Find) and is added here. Every kPeriod a thread of this process's own
// calls FamilyBase::SyncShared on each: it joins the segment as soon as the lock is released
// (or taken over from a dead holder) and keeps copying what the waiting children record into
// their cells; a family is dropped when it returns false. The thread exists only while a family
// is listed. A fork child rebases its copy of the list (FamilyBase::RebaseAfterFork) and starts
// its own thread.
//
// Lock order: the list's lock, then a family's, then the segment's registration lock. Family
// methods that hold their own lock never call Add (Find calls it after releasing it).
//
// Thread-safety: any thread.
#ifndef MODELMETRICS_METRICS_PENDING_SHARES_H_
#define MODELMETRICS_METRICS_PENDING_SHARES_H_

#include <chrono>

namespace modelmetrics::metrics_internal {

class FamilyBase;

namespace pending_shares {

inline constexpr std::chrono::milliseconds kPeriod{100};

// Lists `family` (once) and starts the thread if it is not running.
void Add(FamilyBase* family);
// Unlists `family` (its destructor), after a SyncShared of it in flight ends (that may wait on
// the segment's directory lock, boundedly).
void Remove(FamilyBase* family);

}  // namespace pending_shares
}  // namespace modelmetrics::metrics_internal

#endif  // MODELMETRICS_METRICS_PENDING_SHARES_H_
