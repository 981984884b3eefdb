// A bounded pool of threads: at most `capacity` jobs running or queued, and optionally at most
// a share of them per source (a client address, a user), so one source cannot take every place.
// The API server runs its authorisation and review work on two of them.
//
// Thread-safety: every method may be called from any thread; jobs run on the pool's threads.
#ifndef MODELMETRICS_BASE_WORKER_POOL_H_
#define MODELMETRICS_BASE_WORKER_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace modelmetrics::base {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t capacity);
  ~WorkerPool() { Shutdown(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False when full, when `source` already holds `per_source` jobs, or when shut down: the
  // caller answers for the job (the API server: 429).
  bool TrySubmit(std::function<void()> job, const std::string& source = {},
                 size_t per_source = SIZE_MAX);

  // Jobs running or queued.
  size_t in_flight() const;

  // Drops queued jobs (their captures are destroyed unrun), waits for running ones, joins.
  void Shutdown();

 private:
  struct Job {
    std::function<void()> run;
    std::string source;
  };
  void Run();

  const size_t capacity_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_ GUARDED_BY(mu_);
  size_t in_flight_ GUARDED_BY(mu_) = 0;
  std::map<std::string, size_t, std::less<>> by_source_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_WORKER_POOL_H_
