"""How the Python tests wait on time; the same rules as tests/paths/test_deadlines.h.

Two kinds of wait, one helper each:

* For something that will happen (a port that answers, four workers that have started, a page
  that shows a newer read): `wait_until` checks a condition every `POLL` seconds and returns as
  soon as it holds. Its timeout only ends a wait that has already failed, so it can be generous
  at no cost to a passing run: `EVENTUALLY`, or a test's own longer bound where the thing waited
  for has a known slow part (a Prometheus scrape interval, workers importing a framework).
* Letting time pass on purpose, where the length is part of what the test checks (traffic between
  two reads, a connection left idle): `let_time_pass`, with a comment beside it on why the margin
  holds.

The margin: the tests run on 2 cores, beside ctest -j3 and the sanitizer trees' builds, and
scripts/stress.sh adds two busy loops. A process there can wait tens of ms for a core, and an
instrumented (ASan, TSan) build runs 5-15x slower, so an event that takes 1 ms idle can take a few
hundred ms; 10 s is 20x that, and a real hang still fails. A test never sleeps to "let something
settle": it waits for the thing itself.
"""

import time

# How long a test waits for an event that will happen (seconds); see the margin above.
EVENTUALLY = 10.0
# How often wait_until checks (seconds): short against any wait, long enough to leave the cores to
# the code under test. A check that is itself expensive (a scrape, a query) passes a longer one.
POLL = 0.05


def wait_until(condition, timeout=EVENTUALLY, *, poll=POLL, what=None):
    """Calls `condition()` until it returns a truthy value, and returns that value (so a result
    that may be 0 or empty is returned wrapped, e.g. in a tuple). Raises AssertionError naming
    `what` (a string, or a callable giving one, for a message that shows the last state) after
    `timeout` seconds; the condition is checked once more at the deadline, so one that holds then
    is not reported as a timeout. An exception from `condition` is not caught."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(poll, remaining))
    if callable(what):
        what = what()
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what or condition}")


def let_time_pass(seconds):
    """Lets `seconds` of wall time pass; for the waits whose length is what the test checks."""
    time.sleep(seconds)
