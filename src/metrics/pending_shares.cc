// See pending_shares.h.
#include "pending_shares.h"

#include <pthread.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "modelmetrics/metrics.h"

namespace modelmetrics::metrics_internal::pending_shares {
namespace {

using SyncResult = FamilyBase::SyncResult;

struct Pending {
  // Held across one family's SyncShared, so Remove can wait for it and fork() never copies a
  // family mid-sync; the list's lock is never held across one (Add never waits for a sync).
  base::Mutex sync_mu ACQUIRED_BEFORE(mu);
  base::Mutex mu;
  std::vector<FamilyBase*> families GUARDED_BY(mu);
  bool running GUARDED_BY(mu) = false;
};

// Never destroyed: the thread and families' destructors may use it during exit.
Pending& List() {
  static auto* pending = new Pending;
  return *pending;
}

// One pass over the list, a family at a time; it stops at the first family whose registration
// found the directory lock held (the rest would wait for it too).
void Sweep() {
  Pending& p = List();
  for (size_t next = 0;;) {
    base::MutexLock sync(&p.sync_mu);
    FamilyBase* family = nullptr;
    {
      base::MutexLock lock(&p.mu);
      if (next < p.families.size()) family = p.families[next];
    }
    if (family == nullptr) return;
    const SyncResult result = family->SyncShared();
    base::MutexLock lock(&p.mu);
    if (result == SyncResult::kDone) {
      std::erase(p.families, family);
    } else {
      ++next;  // a Remove meanwhile may make this skip one family until the next sweep
    }
    if (result == SyncResult::kBusy) return;
  }
}

void Run() {
  Pending& p = List();
  for (;;) {
    std::this_thread::sleep_for(kPeriod);
    Sweep();
    base::MutexLock lock(&p.mu);
    if (p.families.empty()) {
      p.running = false;
      return;
    }
  }
}

void StartLocked(Pending& p) REQUIRES(p.mu) {
  if (p.running) return;
  std::thread(Run).detach();
  p.running = true;
}

void PrepareFork() NO_THREAD_SAFETY_ANALYSIS {
  List().sync_mu.Lock();
  List().mu.Lock();
}

void ParentAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  List().mu.Unlock();
  List().sync_mu.Unlock();
}

void ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  Pending& p = List();
  p.running = false;  // the parent's thread is not here
  // A family whose lock a thread held at fork() (that thread is not here) would stop the sweep
  // for good: it is left out.
  std::erase_if(p.families, [](FamilyBase* family) { return !family->RebaseAfterFork(); });
  if (!p.families.empty()) StartLocked(p);
  p.mu.Unlock();
  p.sync_mu.Unlock();
}

}  // namespace

void InstallForkHandlers() { pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork); }

void Add(FamilyBase* family) {
  Pending& p = List();
  base::MutexLock lock(&p.mu);
  if (std::find(p.families.begin(), p.families.end(), family) == p.families.end()) {
    p.families.push_back(family);
  }
  StartLocked(p);
}

void Remove(FamilyBase* family) {
  Pending& p = List();
  {
    base::MutexLock lock(&p.mu);
    std::erase(p.families, family);
  }
  base::MutexLock wait_for_a_sync_in_flight(&p.sync_mu);
}

void SyncNow() { Sweep(); }

}  // namespace modelmetrics::metrics_internal::pending_shares
