// The families of this process that wait to join a SharedSegment, and the thread that joins them.
// Private to src/metrics.
//
// A registration gives up on a segment whose directory a stopped process holds (the wait is
// bounded, segment_directory.cc); the family, or the new child, then records in this process
// (FamilyBase::Share, Find) and is added here. Every kPeriod a thread of this process's own
// calls FamilyBase::SyncShared on each, one at a time: it joins the segment as soon as the lock
// is released (or taken over from a dead holder) and keeps copying what the waiting children
// record into their cells; a family is dropped once it is done. The thread exists only while a
// family is listed. SharedSegment::Leave syncs once more, so a process that exits normally
// leaves nothing uncopied (unless the holder is still stopped then).
//
// Fork: the handlers (InstallForkHandlers, registered right after the segment's own, so their
// prepare runs before the segment's and after the Python fork gate's) hold the sync lock and the
// list across fork(); the child rebases its copy of each family (FamilyBase::RebaseAfterFork:
// what was recorded before fork() is the parent's) and starts its own thread.
//
// Lock order: the sync lock, the list's lock, a family's, the segment's registration lock. The
// list's lock is held only for moments; the sync lock across one family's sync (up to a bounded
// wait for the directory lock). Family methods that hold their own lock never call Add (Find
// calls it after releasing it).
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
// Unlists `family` (its destructor), after a SyncShared in flight ends (that may wait on the
// segment's directory lock, boundedly).
void Remove(FamilyBase* family);
// One sync of every listed family now, on this thread (SharedSegment::Leave).
void SyncNow();
// Registers the fork handlers; once, from the segment's own registration (segment_slots.cc).
void InstallForkHandlers();

}  // namespace pending_shares
}  // namespace modelmetrics::metrics_internal

#endif  // MODELMETRICS_METRICS_PENDING_SHARES_H_
