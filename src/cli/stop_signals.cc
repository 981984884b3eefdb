// See stop_signals.h.
#include "cli/stop_signals.h"

#include <cstdio>

namespace modelmetrics::cli {

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

void WaitForStop(const sigset_t& signals, std::optional<std::chrono::milliseconds> duration,
                 const char* command) {
  const auto deadline =
      std::chrono::steady_clock::now() + duration.value_or(std::chrono::milliseconds(0));
  while (true) {
    timespec wait{1, 0};
    if (duration) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds(0)) return;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      wait.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      wait.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    const int signal = sigtimedwait(&signals, nullptr, &wait);
    if (signal == SIGINT || signal == SIGTERM) {
      std::fprintf(stderr, "%s: %s, stopping\n", command, signal == SIGINT ? "SIGINT" : "SIGTERM");
      return;
    }
  }
}

bool StopPending(const sigset_t& signals, const char* command) {
  timespec now{0, 0};
  const int signal = sigtimedwait(&signals, nullptr, &now);
  if (signal != SIGINT && signal != SIGTERM) return false;
  std::fprintf(stderr, "%s: %s during start-up, stopping\n", command,
               signal == SIGINT ? "SIGINT" : "SIGTERM");
  return true;
}

}  // namespace modelmetrics::cli
