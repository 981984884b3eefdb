// How every test suite waits on time. Two kinds of wait, one helper each, so that no test
// depends on how fast the machine is at that moment:
//
//  - Waiting for something that will happen (a server that accepted four connections, a counter
//    that reached three, a port that answers): `WaitUntil` checks a condition every few
//    milliseconds and returns the moment it holds. Its deadline only ends a wait that failed, so
//    it can be generous at no cost to a passing run: `kEventually` (10 s).
//  - Letting time pass on purpose (traffic between two reads of a counter, a connection left idle
//    past or under a timeout): `LetTimePass`. There the length is part of what the test checks;
//    the test says beside it why the margin holds.
//
// The margin: the tests run on 2 cores with one more test process than cores (ctest -j3), beside
// the sanitizer trees' builds, and `scripts/stress.sh` runs the threaded suites with two busy
// loops beside them. A thread there may not run for a whole scheduler period (tens of ms), and an
// instrumented TSan or ASan build runs 5-15x slower than the release one, so an event that takes
// 1 ms idle can take a few hundred ms. 10 s is 20x that; a real hang still fails the test.
// A test never sleeps to "let something settle": it waits for the thing itself.
#pragma once

#include <chrono>
#include <thread>

namespace modelmetrics::testing {

// How long a test waits for an event that will happen; see the margin above.
inline constexpr std::chrono::seconds kEventually{10};
// How often WaitUntil checks: short against any wait, long enough not to steal the core from
// the code under test on a 2-core machine.
inline constexpr std::chrono::milliseconds kPollInterval{5};

// Waits until `done()` is true or `timeout` has passed; returns whether it became true (checked
// once more at the deadline, so a condition that holds then is not reported as a timeout).
template <class Condition>
bool WaitUntil(Condition&& done, std::chrono::milliseconds timeout = kEventually) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(kPollInterval);
  }
  return true;
}

// Lets `duration` of wall time pass; for the waits whose length is what the test checks.
inline void LetTimePass(std::chrono::milliseconds duration) {
  std::this_thread::sleep_for(duration);
}

}  // namespace modelmetrics::testing
