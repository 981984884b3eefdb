// See pending_shares.h.
#include "pending_shares.h"

#include <pthread.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "modelmetrics/metrics.h"

namespace modelmetrics::metrics_internal::pending_shares {
namespace {

struct Pending {
  base::Mutex mu;
  std::vector<FamilyBase*> families GUARDED_BY(mu);
  bool running GUARDED_BY(mu) = false;
};

// Never destroyed: the thread and families' destructors may use it during exit.
Pending& List() {
  static auto* pending = new Pending;
  return *pending;
}

void Run() {
  Pending& p = List();
  for (;;) {
    std::this_thread::sleep_for(kPeriod);
    base::MutexLock lock(&p.mu);
    std::erase_if(p.families, [](FamilyBase* family) { return !family->SyncShared(); });
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

// Registered after the segment's own handlers (a family waits only once a segment exists), so
// this prepare runs first: the list's lock before the segment's, as the thread takes them.
void PrepareFork() NO_THREAD_SAFETY_ANALYSIS { List().mu.Lock(); }
void ParentAfterFork() NO_THREAD_SAFETY_ANALYSIS { List().mu.Unlock(); }
void ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  Pending& p = List();
  p.running = false;  // the parent's thread is not here
  for (FamilyBase* family : p.families) family->RebaseAfterFork();
  if (!p.families.empty()) StartLocked(p);
  p.mu.Unlock();
}

}  // namespace

void Add(FamilyBase* family) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork); });
  Pending& p = List();
  base::MutexLock lock(&p.mu);
  if (std::find(p.families.begin(), p.families.end(), family) == p.families.end()) {
    p.families.push_back(family);
  }
  StartLocked(p);
}

void Remove(FamilyBase* family) {
  Pending& p = List();
  base::MutexLock lock(&p.mu);
  std::erase(p.families, family);
}

}  // namespace modelmetrics::metrics_internal::pending_shares
