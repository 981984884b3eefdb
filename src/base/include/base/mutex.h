// base::Mutex, a std::mutex the thread-safety analysis knows (thread_annotations.h), and
// base::MutexLock, its scoped holder. libstdc++'s std::mutex and std::lock_guard carry no
// annotations, so data GUARDED_BY a std::mutex could not be checked.
//
//   base::Mutex mu_;
//   int hits_ GUARDED_BY(mu_) = 0;
//   ...
//   base::MutexLock lock(&mu_);
//   ++hits_;
//   cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return hits_ > 1; });  // std::condition_variable
//
// Thread-safety: a Mutex is shared between threads; a MutexLock belongs to the thread that made it.
#ifndef MODELMETRICS_BASE_MUTEX_H_
#define MODELMETRICS_BASE_MUTEX_H_

#include <mutex>

#include "base/thread_annotations.h"

namespace modelmetrics::base {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : lock_(mu->mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Drops and retakes the mutex inside the scope (work done without it, e.g. a callback).
  void Unlock() RELEASE() { lock_.unlock(); }
  void Lock() ACQUIRE() { lock_.lock(); }

  // For std::condition_variable, whose wait releases and retakes the mutex: the analysis sees it
  // held throughout, as the code after the wait may assume.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_MUTEX_H_
