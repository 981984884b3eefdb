"""Shared helpers: read values back the way upstream's tests do, from
``prometheus_client.generate_latest(REGISTRY)`` text."""

import itertools
import os
import re
import sys

import pytest

# tests/, for the helpers shared with tests/ui, tests/apiserver and tests/deploy (deadlines.py); after
# everything else on the path, so none of its names hides an installed module.
TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTS_DIR not in sys.path:
    sys.path.append(TESTS_DIR)

_ids = itertools.count()


@pytest.fixture
def model():
    """A model name no other test uses (the registry is process-wide, as upstream's REGISTRY)."""
    return f"test-model-{next(_ids)}"


def exposition() -> str:
    import modelmetrics.vllm_omni.metrics  # noqa: F401  (installs the bridge)
    from prometheus_client import REGISTRY, generate_latest

    return generate_latest(REGISTRY).decode()


def sample(text: str, series: str):
    """The value of the sample line starting with `series` (name and label text), or None."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def lines_with(text: str, needle: str) -> list:
    return [line for line in text.splitlines() if needle in line and not line.startswith("#")]


def help_and_type(text: str) -> dict:
    """{family: (type, help)} from # HELP / # TYPE lines."""
    out, helps = {}, {}
    for line in text.splitlines():
        m = re.match(r"# HELP (\S+) (.*)$", line)
        if m:
            helps[m.group(1)] = m.group(2)
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            out[m.group(1)] = (m.group(2), helps.get(m.group(1)))
    return out


def run_isolated(code: str, timeout: float = 120):
    """Runs `code` in a fresh interpreter with this package on its path (for tests that fill the
    process registry with thousands of series, which would slow every later scrape here)."""
    import os
    import subprocess
    import sys
    import textwrap

    import modelmetrics

    root = os.path.dirname(os.path.dirname(os.path.abspath(modelmetrics.__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=timeout)


def free_port() -> int:
    """A loopback port nothing listens on now (the caller retries if another process takes it)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(proc, timeout: float = 5):
    """Stops a child process: SIGTERM, then SIGKILL after `timeout` seconds."""
    import subprocess

    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
