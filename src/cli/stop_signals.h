// Stopping a long-running command (serve, ui, demo, the simulators) on SIGINT, SIGTERM or SIGHUP:
// the signals are blocked in every thread before any starts (BlockStopSignals), then taken
// synchronously on the main thread, so a stop during start-up stays pending until the next check
// and the command always ends through its own clean-up, with exit status 0.
//
// SIGHUP stops too: a terminal that closes under `demo` or `ui` sends it, and `serve` reads its
// configuration once at start (a change is applied by a restart, as a Deployment rollout does).
// SIGINT is taken even when the shell that started the command ignores it (a background job).
//
// Thread-safety: BlockStopSignals before any thread starts; the rest from the main thread.
#ifndef MODELMETRICS_CLI_STOP_SIGNALS_H_
#define MODELMETRICS_CLI_STOP_SIGNALS_H_

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <optional>

namespace modelmetrics::cli {

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and the threads it starts), after
// restoring their default action; returns the set.
sigset_t BlockStopSignals();

// BlockStopSignals for a scope that may return to a caller who goes on (a command run by a test
// harness, or before another command): on the way out, stop signals still pending (sent during a
// failing start-up, or a second one during clean-up) are taken first, since unblocked they would
// kill the process and turn the documented exit code into 143; then the previous mask returns.
class ScopedStopSignals {
 public:
  ScopedStopSignals();
  ~ScopedStopSignals();
  ScopedStopSignals(const ScopedStopSignals&) = delete;
  ScopedStopSignals& operator=(const ScopedStopSignals&) = delete;

  const sigset_t& signals() const { return signals_; }

 private:
  sigset_t previous_;
  sigset_t signals_;
};

// Waits for a stop signal or until `duration` passes, if set; says which signal on stderr.
// True when a signal came.
bool WaitForStop(const sigset_t& signals, std::optional<std::chrono::milliseconds> duration,
                 const char* command);

// Takes a pending stop signal without waiting; true (and says so) when there was one.
bool StopPending(const sigset_t& signals, const char* command);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_STOP_SIGNALS_H_
