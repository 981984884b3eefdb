// See fork_gate.h.
#include "fork_gate.h"

#include <pthread.h>

#include <mutex>

namespace modelmetrics::python {
namespace {

// Writer-preferring, so a steady stream of renders cannot hold a fork off.
void InitGate(pthread_rwlock_t* lock) {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(lock, &attr);
  pthread_rwlockattr_destroy(&attr);
}

pthread_rwlock_t* Gate() {
  static pthread_rwlock_t lock;
  static const bool ready = (InitGate(&lock), true);
  (void)ready;
  return &lock;
}

void BeforeFork() { pthread_rwlock_wrlock(Gate()); }
void AfterForkInParent() { pthread_rwlock_unlock(Gate()); }
// glibc tells a writer's unlock from a reader's by thread id, which fork() changed: the child,
// alone now, starts from a fresh gate instead.
void AfterForkInChild() { InitGate(Gate()); }

}  // namespace

void InstallForkGate() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(&BeforeFork, &AfterForkInParent, &AfterForkInChild); });
}

WithoutGil::WithoutGil() : state_(PyEval_SaveThread()) { pthread_rwlock_rdlock(Gate()); }

WithoutGil::~WithoutGil() noexcept(false) {
  pthread_rwlock_unlock(Gate());
  PyEval_RestoreThread(state_);
}

}  // namespace modelmetrics::python
