"""A loopback child process for the Python end-to-end tests (tests/ui, tests/deploy): its output
is drained into lines on a thread (so it never blocks on a full pipe), searched with until(), and
it is stopped with SIGTERM (then SIGKILL) by stop()."""

import queue
import re
import subprocess
import threading
import time


class Process:
    def __init__(self, args):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def until(self, pattern, timeout=30):
        """Every line read so far once one matches `pattern`; fails after `timeout` s. Each line
        is waited for itself (a blocking read, no polling); the default, 3x deadlines.EVENTUALLY,
        is for `demo`, which starts every simulator and server before its banner."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None, (
                    f"{self.proc.args[0]} exited with {self.proc.returncode}:\n" +
                    "\n".join(self.seen))
                continue
            self.seen.append(line)
            if re.search(pattern, line):
                return self.seen
        raise AssertionError(f"no {pattern!r} within {timeout}s in:\n" + "\n".join(self.seen))

    def match(self, pattern, timeout=30):
        """The first match of `pattern` in a line, waiting for it."""
        return re.search(pattern, self.until(pattern, timeout)[-1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
