// A SharedSegment's process slots: taking one, liveness, fork, mark_process_dead. See
// segment_layout.h for the locks.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <new>
#include <vector>

#include "pending_shares.h"
#include "segment_layout.h"

namespace modelmetrics {
namespace segment {
namespace {

// Clears what a dead owner left in slot `i` that must not outlive it: its gauges (unset).
// Counters and histograms stay: the new owner continues their sums.
void ResetForNewOwner(SharedSegment::Impl& impl, uint32_t i) {
  std::atomic<uint64_t>* cells = impl.SlotCells(i);
  const uint32_t series = impl.PublishedSeries();  // series first: their families are older
  const uint32_t families = impl.PublishedFamilies();
  for (uint32_t s = 0; s < series; ++s) {
    const SeriesRecord r = impl.series[s];
    if (!impl.ValidSeries(r, families)) continue;
    const FamilyRecord f = impl.families[r.family];
    if (static_cast<MetricType>(f.type) != MetricType::kGauge ||
        uint64_t{r.cell} + 2 > impl.geometry.words_per_slot) {
      continue;
    }
    cells[r.cell + 1].store(0, std::memory_order_relaxed);
    cells[r.cell].store(0, std::memory_order_relaxed);
  }
}

// Takes slot `i` for this process once its lock is held.
void Take(SharedSegment::Impl& impl, uint32_t i) {
  ProcessSlot& s = impl.slots[i];
  // Read again under the lock: another process may have used the slot since the first look.
  if (s.state.load(std::memory_order_acquire) == static_cast<uint32_t>(SlotState::kUsed)) {
    ResetForNewOwner(impl, i);
  }
  s.pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
  s.flags.store(0, std::memory_order_relaxed);
  s.generation.fetch_add(1, std::memory_order_relaxed);
  s.state.store(static_cast<uint32_t>(SlotState::kUsed), std::memory_order_release);
  impl.slot.store(static_cast<int>(i), std::memory_order_relaxed);
  impl.slot_cells.store(impl.SlotCells(i), std::memory_order_release);
}

// ---- fork ----------------------------------------------------------------------------------

base::Mutex& AttachedMutex() {
  static base::Mutex mu;
  return mu;
}

std::vector<SharedSegment::Impl*>& Attached() {
  static auto* attached = new std::vector<SharedSegment::Impl*>();
  return *attached;
}

// The description the child will own, opened in the parent before fork() and holding the
// attached lock already: the service counts the child as attached from the moment it exists,
// so a parent that leaves at once cannot remove the segment under it.
void PrepareChildDescription(SharedSegment::Impl& impl) {
  impl.fork_fd = -1;
  if (impl.left.load(std::memory_order_relaxed) || impl.fd < 0) return;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", impl.fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0 && !LockByte(fd, kAttachedLock, F_RDLCK, false)) {
    close(fd);
    return;
  }
  impl.fork_fd = fd;
}

// In the child: its own slot through its own description. If that cannot be had, it keeps the
// parent's description and slot (their locks then live as long as either process) and never
// leaves, since unlocking that description would unlock the parent's attachment. Only
// async-signal-safe calls, no allocation.
void ReattachInChild(SharedSegment::Impl& impl) NO_THREAD_SAFETY_ANALYSIS {  // mu: PrepareFork
  if (impl.left.load(std::memory_order_relaxed) || impl.fd < 0) return;
  const int fd = impl.fork_fd;
  impl.fork_fd = -1;
  if (fd < 0 || !ClaimSlot(impl, fd, nullptr)) {
    if (fd >= 0) close(fd);
    impl.left.store(true, std::memory_order_relaxed);
    static const char kMessage[] =
        "modelmetrics: no process slot of its own in the shared segment after fork(); this "
        "process records into its parent's slot\n";
    (void)!write(2, kMessage, sizeof(kMessage) - 1);
    return;
  }
  close(impl.fd);  // the parent's description: the parent keeps it, and its locks
  impl.fd = fd;
  std::atomic<uint64_t>* cells = impl.slot_cells.load(std::memory_order_relaxed);
  for (uint32_t cell : impl.bound_gauges) MarkGaugeCreated(cells + cell);
}

// The registration mutex is held across fork (registration never waits for the Python fork
// gate). The scrape mutex is only tried: a scrape holds the fork gate and then it, so waiting
// for it here, inside fork(), before the gate's own handler would deadlock.
void PrepareFork() NO_THREAD_SAFETY_ANALYSIS {
  AttachedMutex().Lock();
  for (SharedSegment::Impl* impl : Attached()) {
    impl->mu.Lock();
    impl->render_mu_held_at_fork = !impl->render_mu.TryLock();
    PrepareChildDescription(*impl);
  }
}

void ParentAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  for (SharedSegment::Impl* impl : Attached()) {
    if (impl->fork_fd >= 0) close(impl->fork_fd);  // the child's now; its lock stays with it
    impl->fork_fd = -1;
    if (!impl->render_mu_held_at_fork) impl->render_mu.Unlock();
    impl->mu.Unlock();
  }
  AttachedMutex().Unlock();
}

void ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  for (SharedSegment::Impl* impl : Attached()) {
    ReattachInChild(*impl);
    if (impl->render_mu_held_at_fork) {
      // Held by a thread that does not exist here, over a cache it may have been changing: a
      // fresh mutex and cache (the old cache's memory is left, not freed mid-change).
      new (&impl->render_mu) base::Mutex();
      new (&impl->cache) ScrapeCache();
    } else {
      impl->render_mu.Unlock();
    }
    impl->mu.Unlock();
  }
  AttachedMutex().Unlock();
}

}  // namespace

void Track(SharedSegment::Impl* impl) {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork);
    metrics_internal::pending_shares::InstallForkHandlers();  // after ours: see pending_shares.h
  });
  base::MutexLock lock(&AttachedMutex());
  Attached().push_back(impl);
}

void Untrack(SharedSegment::Impl* impl) {
  base::MutexLock lock(&AttachedMutex());
  std::erase(Attached(), impl);
}

bool ClaimSlot(SharedSegment::Impl& impl, int fd, std::string* error) {
  const uint32_t n = impl.geometry.process_slots;
  // Never-used slots first (a dead process's gauges stay visible as long as possible), then those
  // mark_process_dead named, then any whose owner is gone.
  for (int pass = 0; pass < 3; ++pass) {
    for (uint32_t i = 0; i < n; ++i) {
      ProcessSlot& s = impl.slots[i];
      const auto state = static_cast<SlotState>(s.state.load(std::memory_order_acquire));
      const bool marked = (s.flags.load(std::memory_order_relaxed) & kMarkedDead) != 0;
      if ((pass == 0) != (state == SlotState::kNeverUsed)) continue;
      if (pass == 1 && !marked) continue;
      if (!LockByte(fd, kSlotLocks + static_cast<off_t>(i), F_WRLCK, false)) continue;
      Take(impl, i);
      return true;
    }
  }
  if (error != nullptr) {
    *error = "all " + std::to_string(n) +
             " process slots of the shared segment are held by running processes "
             "(MODELMETRICS_MULTIPROC_PROCESSES)";
  }
  return false;
}

}  // namespace segment

bool SharedSegment::Impl::Alive(uint32_t i) const {
  if (static_cast<int>(i) == slot.load(std::memory_order_relaxed)) return true;
  return segment::ByteLockedElsewhere(fd, segment::kSlotLocks + static_cast<off_t>(i));
}

size_t SharedSegment::MarkProcessDead(int pid) {
  Impl& impl = *impl_;
  if (impl.observer) return 0;  // a read-only view marks nothing (liveness needs no marks)
  size_t marked = 0;
  for (uint32_t i = 0; i < impl.geometry.process_slots; ++i) {
    segment::ProcessSlot& s = impl.slots[i];
    if (static_cast<int>(i) == impl.slot.load(std::memory_order_relaxed) ||
        s.state.load(std::memory_order_acquire) !=
            static_cast<uint32_t>(segment::SlotState::kUsed) ||
        s.pid.load(std::memory_order_relaxed) != pid) {
      continue;
    }
    // Holding the slot's lock while marking it: a running process (a reused pid, or one that
    // took the slot meanwhile) is never marked.
    const off_t byte = segment::kSlotLocks + static_cast<off_t>(i);
    if (!segment::LockByte(impl.fd, byte, F_WRLCK, false)) continue;
    if (s.pid.load(std::memory_order_relaxed) == pid) {
      s.flags.fetch_or(segment::kMarkedDead, std::memory_order_relaxed);
      ++marked;
    }
    segment::LockByte(impl.fd, byte, F_UNLCK, false);
  }
  return marked;
}

SegmentStats SharedSegment::Stats() const {
  const Impl& impl = *impl_;
  SegmentStats stats;
  for (uint32_t i = 0; i < impl.geometry.process_slots; ++i) {
    if (impl.slots[i].state.load(std::memory_order_acquire) == 0) continue;
    ++stats.slots_used;
    stats.live += impl.Alive(i);
  }
  stats.series = impl.PublishedSeries();
  stats.families = impl.PublishedFamilies();
  stats.cell_words_per_slot = impl.geometry.words_per_slot;
  for (uint32_t s = 0; s < stats.series; ++s) {
    const segment::SeriesRecord r = impl.series[s];
    if (!impl.ValidSeries(r, stats.families)) continue;
    const segment::FamilyRecord f = impl.families[r.family];
    const uint64_t end = r.cell + segment::CellWords(static_cast<MetricType>(f.type), f.bounds);
    if (end > stats.cell_words_used) stats.cell_words_used = end;
  }
  return stats;
}

}  // namespace modelmetrics
