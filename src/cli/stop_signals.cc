// See stop_signals.h.
#include "stop_signals.h"

#include <cstdio>

namespace modelmetrics::cli {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

const char* SignalName(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return nullptr;
  }
}

}  // namespace

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (const int signal : kStopSignals) {
    std::signal(signal, SIG_DFL);  // an inherited SIG_IGN would drop it before sigtimedwait
    sigaddset(&signals, signal);
  }
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

ScopedStopSignals::ScopedStopSignals() {
  pthread_sigmask(SIG_BLOCK, nullptr, &previous_);
  signals_ = BlockStopSignals();
}

ScopedStopSignals::~ScopedStopSignals() {
  timespec now{0, 0};
  while (sigtimedwait(&signals_, nullptr, &now) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

bool WaitForStop(const sigset_t& signals, std::optional<std::chrono::milliseconds> duration,
                 const char* command) {
  const auto deadline =
      std::chrono::steady_clock::now() + duration.value_or(std::chrono::milliseconds(0));
  while (true) {
    timespec wait{1, 0};
    if (duration) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds(0)) return false;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      wait.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      wait.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    if (const char* name = SignalName(sigtimedwait(&signals, nullptr, &wait))) {
      std::fprintf(stderr, "%s: %s, stopping\n", command, name);
      return true;
    }
  }
}

bool StopPending(const sigset_t& signals, const char* command) {
  timespec now{0, 0};
  const char* name = SignalName(sigtimedwait(&signals, nullptr, &now));
  if (name == nullptr) return false;
  std::fprintf(stderr, "%s: %s during start-up, stopping\n", command, name);
  return true;
}

}  // namespace modelmetrics::cli
