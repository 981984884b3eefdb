// See shared_reads.h.
#include "deployment/shared_reads.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace modelmetrics::deployment {
namespace {

struct Waiter {
  SteadyTime deadline;
  SharedReads::Callback done;
};

// One deployment's read: queued (not running) until a worker takes it.
struct Flight {
  std::string ns;
  std::string name;
  std::vector<Waiter> waiters;
  bool running = false;
};

struct Finished {
  SharedReads::Result result;
  SteadyTime at;
};

std::string Key(const std::string& ns, const std::string& name) {
  // '/' is in neither a DNS-1123 label nor a subdomain, so the key is unambiguous.
  return ns + "/" + name;
}

}  // namespace

ApiStatus SharedReads::NotStartedInTime() {
  return ApiStatus::Unavailable(
      "ModelDeployment metrics read could not start within the request's time limit: the server "
      "is busy reading other deployments");
}

struct SharedReads::Impl {
  Options options;
  ReadFunction read;

  std::mutex mu;
  std::condition_variable work_cv;    // workers: a flight was queued, or stopping
  std::condition_variable reaper_cv;  // reaper: a flight was queued, or stopping
  std::map<std::string, std::shared_ptr<Flight>> flights;  // running or queued, by key
  std::deque<std::shared_ptr<Flight>> queue;               // queued, oldest first
  std::map<std::string, Finished> recent;                  // within reuse_for of their end
  size_t waiters = 0;
  bool stopping = false;
  std::vector<std::thread> workers;
  std::thread reaper;

  // Takes, from `flight`, every waiter that cannot get min_read_budget any more.
  std::vector<Waiter> TakeLate(Flight* flight, SteadyTime now) {
    std::vector<Waiter> late;
    auto& list = flight->waiters;
    auto keep = std::stable_partition(list.begin(), list.end(), [&](const Waiter& w) {
      return w.deadline - now >= options.min_read_budget;
    });
    std::move(keep, list.end(), std::back_inserter(late));
    list.erase(keep, list.end());
    waiters -= late.size();
    return late;
  }

  void DropFlight(const std::shared_ptr<Flight>& flight) {
    flights.erase(Key(flight->ns, flight->name));
    queue.erase(std::remove(queue.begin(), queue.end(), flight), queue.end());
  }

  static void AnswerLate(std::vector<Waiter>& late) {
    if (late.empty()) return;
    const Result result{.status = NotStartedInTime(), .body = nullptr, .retry = true};
    for (Waiter& waiter : late) waiter.done(result);
  }

  void PurgeRecent(SteadyTime now) {
    for (auto it = recent.begin(); it != recent.end();) {
      it = now - it->second.at >= options.reuse_for ? recent.erase(it) : std::next(it);
    }
  }

  void Work() {
    std::unique_lock lock(mu);
    while (true) {
      work_cv.wait(lock, [this] { return stopping || !queue.empty(); });
      if (stopping) return;
      std::shared_ptr<Flight> flight = std::move(queue.front());
      queue.pop_front();
      std::vector<Waiter> late = TakeLate(flight.get(), SteadyClock::now());
      if (flight->waiters.empty()) {
        DropFlight(flight);
        lock.unlock();
        AnswerLate(late);
        lock.lock();
        continue;
      }
      flight->running = true;
      SteadyTime deadline = SteadyTime::max();
      for (const Waiter& w : flight->waiters) deadline = std::min(deadline, w.deadline);
      lock.unlock();
      AnswerLate(late);
      Result result;
      try {
        result = read(flight->ns, flight->name, deadline);
      } catch (const std::exception& e) {
        result = {.status = ApiStatus::Internal(e.what())};
      } catch (...) {
        result = {.status = ApiStatus::Internal("unknown error")};
      }
      lock.lock();
      const SteadyTime now = SteadyClock::now();
      const std::string key = Key(flight->ns, flight->name);
      flights.erase(key);
      if (options.reuse_for.count() > 0) {
        PurgeRecent(now);
        recent[key] = Finished{result, now};
      }
      std::vector<Waiter> done = std::move(flight->waiters);
      waiters -= done.size();
      // The slot is free from here: the replies below are written after it.
      lock.unlock();
      for (Waiter& waiter : done) waiter.done(result);
      done.clear();
      lock.lock();
    }
  }

  // Answers queued waiters whose last useful start time has passed, while every worker is busy.
  void Reap() {
    std::unique_lock lock(mu);
    while (!stopping) {
      const SteadyTime now = SteadyClock::now();
      std::vector<Waiter> late;
      SteadyTime next = SteadyTime::max();
      for (size_t i = 0; i < queue.size();) {
        const std::shared_ptr<Flight> flight = queue[i];
        std::vector<Waiter> taken = TakeLate(flight.get(), now);
        std::move(taken.begin(), taken.end(), std::back_inserter(late));
        if (flight->waiters.empty()) {
          DropFlight(flight);
          continue;
        }
        for (const Waiter& w : flight->waiters) {
          next = std::min(next, w.deadline - options.min_read_budget);
        }
        ++i;
      }
      if (!late.empty()) {
        lock.unlock();
        AnswerLate(late);
        late.clear();
        lock.lock();
        continue;
      }
      if (next == SteadyTime::max()) {
        reaper_cv.wait(lock);
      } else {
        reaper_cv.wait_until(lock, next);
      }
    }
  }
};

SharedReads::SharedReads(Options options, ReadFunction read) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->read = std::move(read);
  for (int i = 0; i < std::max(options.threads, 1); ++i) {
    impl_->workers.emplace_back([impl = impl_.get()] { impl->Work(); });
  }
  impl_->reaper = std::thread([impl = impl_.get()] { impl->Reap(); });
}

SharedReads::~SharedReads() { Shutdown(); }

SharedReads::Admission SharedReads::Submit(const std::string& ns, const std::string& name,
                                           SteadyTime deadline, Callback done) {
  Impl& impl = *impl_;
  const std::string key = Key(ns, name);
  std::unique_lock lock(impl.mu);
  if (impl.stopping) return Admission::kBusy;
  const SteadyTime now = SteadyClock::now();
  if (auto it = impl.recent.find(key); it != impl.recent.end()) {
    if (now - it->second.at < impl.options.reuse_for) {
      const Result result = it->second.result;
      lock.unlock();
      done(result);
      return Admission::kAccepted;
    }
    impl.recent.erase(it);
  }
  if (impl.waiters >= impl.options.max_waiters) return Admission::kBusy;
  auto it = impl.flights.find(key);
  if (it == impl.flights.end()) {
    if (impl.flights.size() >= std::max<size_t>(impl.options.max_reads, 1)) {
      return Admission::kBusy;
    }
    auto flight = std::make_shared<Flight>();
    flight->ns = ns;
    flight->name = name;
    it = impl.flights.emplace(key, flight).first;
    impl.queue.push_back(std::move(flight));
    impl.work_cv.notify_one();
    impl.reaper_cv.notify_one();
  }
  it->second->waiters.push_back({deadline, std::move(done)});
  ++impl.waiters;
  return Admission::kAccepted;
}

void SharedReads::Shutdown() {
  Impl& impl = *impl_;
  std::map<std::string, std::shared_ptr<Flight>> dropped;
  {
    std::lock_guard lock(impl.mu);
    if (impl.stopping && impl.workers.empty()) return;
    impl.stopping = true;
    impl.queue.clear();
    dropped.swap(impl.flights);  // running flights keep their own reference
    impl.work_cv.notify_all();
    impl.reaper_cv.notify_all();
  }
  for (std::thread& worker : impl.workers) worker.join();
  impl.workers.clear();
  if (impl.reaper.joinable()) impl.reaper.join();
}

}  // namespace modelmetrics::deployment
