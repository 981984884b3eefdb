// See shared_reads.h.
#include "apiserver/shared_reads.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"

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

// What a waiter whose own deadline passed while the read it joined was still running gets (it
// joined late with an early deadline, e.g. after a slow authorisation).
Status TimedOut() {
  return {
      504, "Timeout",
      "ModelDeployment metrics request exceeded its time limit while waiting for a shared read"};
}

struct Finished {
  SharedReads::Result result;
  SteadyTime at;
};

std::string Key(const std::string& ns, const std::string& name) {
  // '/' is in neither a DNS-1123 label nor a subdomain, so the key is unambiguous.
  return ns + "/" + name;
}

}  // namespace

Status SharedReads::NotStartedInTime() {
  return Status::Unavailable(
      "ModelDeployment metrics read could not start within the request's time limit: the server "
      "is busy reading other deployments");
}

struct SharedReads::Impl {
  Options options;
  ReadFunction read;

  base::Mutex mu;
  std::condition_variable work_cv;    // workers: a flight was queued, or stopping
  std::condition_variable reaper_cv;  // reaper: a flight was queued, or stopping
  std::map<std::string, std::shared_ptr<Flight>> flights GUARDED_BY(mu);  // running or queued
  std::deque<std::shared_ptr<Flight>> queue GUARDED_BY(mu);               // queued, oldest first
  std::map<std::string, Finished> recent GUARDED_BY(mu);  // within KeepFor() of their end
  size_t waiters GUARDED_BY(mu) = 0;
  bool stopping GUARDED_BY(mu) = false;
  std::vector<std::thread> workers;
  std::thread reaper;

  // The last moment a waiter of `flight` may still be answered by it: for a queued read, while
  // min_read_budget is left to start it; for a running one, the waiter's own deadline.
  SteadyTime CutOff(const Flight& flight, const Waiter& w) const {
    return flight.running ? w.deadline : w.deadline - options.min_read_budget;
  }

  // Takes, from `flight`, every waiter past its cut-off.
  std::vector<Waiter> TakeLate(Flight* flight, SteadyTime now) REQUIRES(mu) {
    std::vector<Waiter> late;
    auto& list = flight->waiters;
    auto keep = std::stable_partition(list.begin(), list.end(),
                                      [&](const Waiter& w) { return CutOff(*flight, w) > now; });
    std::move(keep, list.end(), std::back_inserter(late));
    list.erase(keep, list.end());
    waiters -= late.size();
    return late;
  }

  void DropFlight(const std::shared_ptr<Flight>& flight) REQUIRES(mu) {
    flights.erase(Key(flight->ns, flight->name));
    queue.erase(std::remove(queue.begin(), queue.end(), flight), queue.end());
  }

  static void AnswerLate(std::vector<Waiter>& late, bool running = false) {
    if (late.empty()) return;
    const Result result{
        .status = running ? TimedOut() : NotStartedInTime(), .body = nullptr, .retry = true};
    for (Waiter& waiter : late) waiter.done(result);
  }

  std::chrono::milliseconds KeepFor() const {
    return std::max(options.reuse_for, options.keep_for);
  }

  void PurgeRecent(SteadyTime now) REQUIRES(mu) {
    for (auto it = recent.begin(); it != recent.end();) {
      it = now - it->second.at >= KeepFor() ? recent.erase(it) : std::next(it);
    }
  }

  void Work() {
    base::MutexLock lock(&mu);
    while (true) {
      work_cv.wait(lock.native(), [this]() REQUIRES(mu) { return stopping || !queue.empty(); });
      if (stopping) return;
      std::shared_ptr<Flight> flight = std::move(queue.front());
      queue.pop_front();
      std::vector<Waiter> late = TakeLate(flight.get(), SteadyClock::now());
      if (flight->waiters.empty()) {
        DropFlight(flight);
        lock.Unlock();
        AnswerLate(late);
        lock.Lock();
        continue;
      }
      flight->running = true;
      SteadyTime deadline = SteadyTime::max();
      for (const Waiter& w : flight->waiters) deadline = std::min(deadline, w.deadline);
      lock.Unlock();
      AnswerLate(late);
      Result result;
      try {
        result = read(flight->ns, flight->name, deadline);
      } catch (const std::exception& e) {
        result = {.status = Status::Internal(e.what())};
      } catch (...) {
        result = {.status = Status::Internal("unknown error")};
      }
      lock.Lock();
      const SteadyTime now = SteadyClock::now();
      const std::string key = Key(flight->ns, flight->name);
      flights.erase(key);
      if (KeepFor().count() > 0) {
        PurgeRecent(now);
        recent[key] = Finished{result, now};
      }
      std::vector<Waiter> done = std::move(flight->waiters);
      waiters -= done.size();
      // The slot is free from here: the replies below are written after it.
      lock.Unlock();
      for (Waiter& waiter : done) waiter.done(result);
      done.clear();
      lock.Lock();
    }
  }

  // Answers waiters past their cut-off: queued ones that can no longer start in time, and ones
  // that joined a running read with an earlier deadline than the read's.
  void Reap() {
    base::MutexLock lock(&mu);
    while (!stopping) {
      const SteadyTime now = SteadyClock::now();
      std::vector<Waiter> not_started;
      std::vector<Waiter> timed_out;
      SteadyTime next = SteadyTime::max();
      std::vector<std::shared_ptr<Flight>> emptied;
      for (const auto& [key, flight] : flights) {
        std::vector<Waiter> taken = TakeLate(flight.get(), now);
        auto& into = flight->running ? timed_out : not_started;
        std::move(taken.begin(), taken.end(), std::back_inserter(into));
        if (flight->waiters.empty() && !flight->running) emptied.push_back(flight);
        for (const Waiter& w : flight->waiters) next = std::min(next, CutOff(*flight, w));
      }
      for (const std::shared_ptr<Flight>& flight : emptied) DropFlight(flight);
      if (!not_started.empty() || !timed_out.empty()) {
        lock.Unlock();
        AnswerLate(not_started);
        AnswerLate(timed_out, /*running=*/true);
        lock.Lock();
        continue;
      }
      if (next == SteadyTime::max()) {
        reaper_cv.wait(lock.native());
      } else {
        reaper_cv.wait_until(lock.native(), next);
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
                                           SteadyTime deadline, Callback done,
                                           std::optional<std::chrono::milliseconds> reuse) {
  Impl& impl = *impl_;
  const std::string key = Key(ns, name);
  const std::chrono::milliseconds accepted =
      std::min(reuse.value_or(impl.options.reuse_for), impl.KeepFor());
  base::MutexLock lock(&impl.mu);
  if (impl.stopping) return Admission::kBusy;
  const SteadyTime now = SteadyClock::now();
  if (auto it = impl.recent.find(key); it != impl.recent.end()) {
    if (now - it->second.at < accepted) {
      const Result result = it->second.result;
      lock.Unlock();
      done(result);
      return Admission::kReused;
    }
    if (now - it->second.at >= impl.KeepFor()) impl.recent.erase(it);
  }
  if (impl.waiters >= impl.options.max_waiters) return Admission::kBusy;
  auto it = impl.flights.find(key);
  const bool joined = it != impl.flights.end();
  if (!joined) {
    if (impl.flights.size() >= std::max<size_t>(impl.options.max_reads, 1)) {
      return Admission::kBusy;
    }
    auto flight = std::make_shared<Flight>();
    flight->ns = ns;
    flight->name = name;
    it = impl.flights.emplace(key, flight).first;
    impl.queue.push_back(std::move(flight));
    impl.work_cv.notify_one();
  }
  it->second->waiters.push_back({deadline, std::move(done)});
  ++impl.waiters;
  impl.reaper_cv.notify_one();  // this waiter's cut-off may be the earliest
  return joined ? Admission::kJoined : Admission::kStarted;
}

std::string_view SharedReads::AdmissionName(Admission admission) {
  switch (admission) {
    case Admission::kReused:
      return "reused";
    case Admission::kJoined:
      return "joined";
    case Admission::kStarted:
      return "started";
    case Admission::kBusy:
      break;
  }
  return "busy";
}

void SharedReads::Shutdown() {
  Impl& impl = *impl_;
  std::map<std::string, std::shared_ptr<Flight>> dropped;
  {
    base::MutexLock lock(&impl.mu);
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
