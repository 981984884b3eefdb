// See base/worker_pool.h.
#include "base/worker_pool.h"

#include <algorithm>
#include <utility>

namespace modelmetrics::base {

WorkerPool::WorkerPool(int threads, size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  for (int i = 0; i < std::max(threads, 1); ++i) {
    threads_.emplace_back([this] { Run(); });
  }
}

bool WorkerPool::TrySubmit(std::function<void()> job, const std::string& source,
                           size_t per_source) {
  MutexLock lock(&mu_);
  if (stopping_ || in_flight_ >= capacity_) return false;
  size_t& held = by_source_[source];
  if (held >= per_source) {
    if (held == 0) by_source_.erase(source);
    return false;
  }
  ++held;
  ++in_flight_;
  queue_.push_back({std::move(job), source});
  cv_.notify_one();
  return true;
}

size_t WorkerPool::in_flight() const {
  MutexLock lock(&mu_);
  return in_flight_;
}

void WorkerPool::Shutdown() {
  std::deque<Job> dropped;
  {
    MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(queue_);
    cv_.notify_all();
  }
  dropped.clear();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void WorkerPool::Run() {
  while (true) {
    Job job;
    {
      MutexLock lock(&mu_);
      cv_.wait(lock.native(), [this]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job.run();
    job.run = nullptr;  // release the job's captures (a Responder) before the place frees
    MutexLock lock(&mu_);
    --in_flight_;
    if (auto it = by_source_.find(job.source); it != by_source_.end() && --it->second == 0) {
      by_source_.erase(it);
    }
  }
}

}  // namespace modelmetrics::base
