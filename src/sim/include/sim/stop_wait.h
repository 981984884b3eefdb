// How a simulator run waits out its duration: a function that returns when the duration has
// passed or a stop was asked for (a signal, from the command line), true in the second case.
// The command line passes one that takes SIGINT/SIGTERM/SIGHUP (cli/stop_signals.h); unset, a
// run sleeps its whole duration.
//
// Thread-safety: called once, on the thread that started the run.
#ifndef MODELMETRICS_SIM_STOP_WAIT_H_
#define MODELMETRICS_SIM_STOP_WAIT_H_

#include <chrono>
#include <functional>
#include <thread>

namespace modelmetrics::sim {

using StopWait = std::function<bool(std::chrono::milliseconds duration)>;

// Waits with `wait`, or sleeps `duration` when it is unset; true when a stop was asked for.
inline bool WaitOut(const StopWait& wait, std::chrono::milliseconds duration) {
  if (wait) return wait(duration);
  std::this_thread::sleep_for(duration);
  return false;
}

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_STOP_WAIT_H_
