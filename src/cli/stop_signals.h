// Stopping a long-running command (serve, ui) on SIGINT/SIGTERM: the signals are blocked in every
// thread before any starts (BlockStopSignals), then taken synchronously on the main thread, so a
// stop during start-up stays pending until the next check.
//
// Thread-safety: BlockStopSignals before any thread starts; the rest from the main thread.
#ifndef MODELMETRICS_CLI_STOP_SIGNALS_H_
#define MODELMETRICS_CLI_STOP_SIGNALS_H_

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <optional>

namespace modelmetrics::cli {

// Blocks SIGINT and SIGTERM in the calling thread (and the threads it starts); returns the set.
sigset_t BlockStopSignals();

// Waits for SIGINT/SIGTERM or until `duration` passes, if set; says which on stderr.
void WaitForStop(const sigset_t& signals, std::optional<std::chrono::milliseconds> duration,
                 const char* command);

// Takes a pending SIGINT/SIGTERM without waiting; true (and says so) when there was one.
bool StopPending(const sigset_t& signals, const char* command);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_STOP_SIGNALS_H_
