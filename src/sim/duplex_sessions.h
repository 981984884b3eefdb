// Simulated scheduler-native full-duplex voice sessions for the pipeline simulator, recorded
// through pipeline::DuplexMetrics (the 13 vllm_omni:duplex_* families).
//
// Contract. Start() begins a chain of sessions on the caller's event loop (through `after`):
// each opens 0.8-2 s after the one before and lasts 2.5-5 s, so one or two are active at once.
// A session appends every 80 ms (the upstream tick period): the append outcome is mostly
// success, sometimes deduplicated or timeout; each command waits in the session's control tail
// first. Its retained context grows per append; past its limit it rolls over (a KV rebuild,
// reason context_rollover). Every third session loses its replica affinity once and rebuilds its
// KV on another replica (reason replica_loss; one in four rebuilds fails). A report every 0.5 s
// publishes the gauges as upstream's orchestrator does: session counts by state, and the largest
// context, limit, utilization, receipt cache, replay journal and resource generation among the
// active sessions.
//
// Thread-safety: not thread-safe; every call and every scheduled event runs on the loop's thread.
#ifndef MODELMETRICS_SIM_DUPLEX_SESSIONS_H_
#define MODELMETRICS_SIM_DUPLEX_SESSIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <random>

#include "pipeline/duplex_metrics.h"

namespace modelmetrics::sim {

class DuplexSessions {
 public:
  using After = std::function<void(double seconds, std::function<void()> fn)>;
  DuplexSessions(pipeline::DuplexMetrics& metrics, std::mt19937_64& rng, After after)
      : metrics_(metrics), rng_(rng), after_(std::move(after)) {}

  void Start();

 private:
  struct Session {
    double tokens = 0;
    double limit = 0;
    double receipts = 0;
    double journal_tokens = 0;
    double generation = 0;
    bool closing = false;
  };

  void Open();
  void Append(uint64_t id, int tick, int ticks);
  void Close(uint64_t id);
  void Rebuild(Session& s, std::string_view reason);
  void Report();
  double Uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng_); }

  pipeline::DuplexMetrics& metrics_;
  std::mt19937_64& rng_;
  After after_;
  std::map<uint64_t, Session> sessions_;
  uint64_t opened_ = 0;
};

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_DUPLEX_SESSIONS_H_
