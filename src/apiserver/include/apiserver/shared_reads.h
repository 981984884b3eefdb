// Single-flight deployment reads with a short reuse window and admission by deadline: what lets
// many clients poll the same ModelDeployment without each starting its own scrape of every Pod.
//
// Contract:
//   * At most one read per deployment (ns/name) runs or waits to start at a time. A request for a
//     deployment whose read is running or queued joins it and gets that read's result; so the
//     baseline store advances once per read and windows stay exact whoever asked.
//   * A finished read's result is handed, as is, to requests arriving within `reuse_for` of its
//     end (default 1 s; 0 turns reuse off), or within the longer reuse a request asks for (up to
//     `keep_for`: an autoscaler's metric call accepts a read a few seconds old, so however many
//     autoscalers ask, a Pod is read at most once in that time). Errors are reused too: an
//     unreadable deployment is not hammered harder than a healthy one.
//   * Reads run on `threads` worker threads. Queued reads start oldest first, one per deployment,
//     so a deployment with hung Pods holds at most one worker, however many clients ask for it.
//   * Deadlines count from each request's arrival. A read starts only while its earliest waiter
//     has at least `min_read_budget` left; a waiter that would not get that much is answered at
//     once with 503 (retry = true), never late. A running read is given the earliest deadline of
//     the waiters it has when it starts. A waiter that joins a running read with an earlier
//     deadline (it was authorised slowly) and is still waiting at its deadline is answered then
//     with 504 Timeout (retry = true).
//   * Submit() never blocks on a read. It refuses (kBusy, callback not called) when
//     `max_reads` deployments are already running or queued and the request would need another,
//     or when `max_waiters` requests are already waiting; the caller answers 429.
//   * The worker gives its slot back before it runs the callbacks, so a slot is free before any
//     reply is written. Callbacks run on a worker thread (or, for a reused result, on the
//     caller's) and must be quick: post the response, nothing more.
//
// Thread-safety: Submit() may be called from any thread; Shutdown() and the destructor from one
// controlling thread. After Shutdown(), Submit() refuses and queued waiters are dropped without
// their callbacks (the server they would answer is gone).
#ifndef MODELMETRICS_APISERVER_SHARED_READS_H_
#define MODELMETRICS_APISERVER_SHARED_READS_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "aggregation/snapshot.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {

class SharedReads {
 public:
  struct Result {
    Status status;
    std::shared_ptr<const std::string> body;   // the rendered document when status.ok()
    std::shared_ptr<const Snapshot> snapshot;  // the snapshot itself when status.ok()
    bool retry = false;                        // say Retry-After: the read could not start in time
  };
  // Reads deployment `ns`/`name`, finishing by `deadline`.
  using ReadFunction =
      std::function<Result(const std::string& ns, const std::string& name, SteadyTime deadline)>;
  // Called exactly once per accepted Submit (unless shut down first).
  using Callback = std::function<void(const Result&)>;

  struct Options {
    int threads = 8;
    size_t max_reads = 32;
    size_t max_waiters = 4096;
    std::chrono::milliseconds reuse_for{1000};
    // How long a result is kept for requests asking a longer reuse; below reuse_for: reuse_for.
    std::chrono::milliseconds keep_for{0};
    std::chrono::milliseconds min_read_budget{2000};
  };

  // How a request was taken: it reused a finished read's result (its callback has run), joined a
  // running or queued read, started a new one, or was refused.
  enum class Admission { kReused, kJoined, kStarted, kBusy };
  static std::string_view AdmissionName(Admission admission);  // reused, joined, started, busy

  SharedReads(Options options, ReadFunction read);
  ~SharedReads();  // Shutdown()s

  SharedReads(const SharedReads&) = delete;
  SharedReads& operator=(const SharedReads&) = delete;

  // `reuse`: how old a finished read this request accepts (nullopt: reuse_for; capped at the
  // longer of reuse_for and keep_for).
  Admission Submit(const std::string& ns, const std::string& name, SteadyTime deadline,
                   Callback done, std::optional<std::chrono::milliseconds> reuse = std::nullopt);

  // Stops the workers after the reads they are running; drops queued ones. Idempotent.
  void Shutdown();

  // The status a waiter gets when its read could not start in time.
  static Status NotStartedInTime();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_SHARED_READS_H_
