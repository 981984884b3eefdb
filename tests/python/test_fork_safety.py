"""fork() while other threads render, collect or create label children: every child can record
and render. vLLM and Gunicorn fork workers while /metrics may be serving; render() and collect()
run without the GIL holding C++ locks, so a child forked at that moment used to inherit a lock
held by a thread that no longer exists and hang at its first render (15 of 30 children in a
probe). Each load forks 100 children; a child that has not exited 5 s after the fork is hung.
"""

import pytest
from conftest import TESTS_DIR, run_isolated

FORKS = 100
# A healthy child records once and renders: milliseconds, even on a loaded core; a hung one never
# exits. Not EVENTUALLY: 100 hung children x 5 s must fit in run_isolated's 600 s below.
HUNG_AFTER = 5

LOAD = """
import os, sys, threading, time
sys.path.append({tests!r})
from deadlines import wait_until
import modelmetrics
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics

load = sys.argv[1] if len(sys.argv) > 1 else {load!r}
m = OmniModalityMetrics("fork-model")
m.inc_audio_frames("0", "0", 1)
stop = threading.Event()

def render(busy):
    while not stop.is_set():
        modelmetrics.render()
        busy.set()

def collect(busy):
    while not stop.is_set():
        modelmetrics._native.collect()
        busy.set()

def create(busy):
    i = 0
    while not stop.is_set():
        for _ in range(10):  # a new child every call, in bursts: the registry grows by
            i += 1           # thousands, not millions, so each render stays short
            m.inc_audio_frames(str(i % 7), str(i), 1)
        busy.set()
        time.sleep(0.001)  # workload: the bursts' pace

workers = {{"render": [render, render], "create": [create, render],
            "collect": [collect, create, render]}}[load]
busy = [threading.Event() for _ in workers]
threads = [threading.Thread(target=w, args=(b,), daemon=True) for w, b in zip(workers, busy)]
for t in threads:
    t.start()
wait_until(lambda: all(b.is_set() for b in busy), what="every thread at its work")

hung = failed = 0
for _ in range({forks}):
    pid = os.fork()
    if pid == 0:
        try:
            m.inc_audio_frames("0", "0", 1)
            text = modelmetrics.render().decode()
            ok = 'vllm_omni:audio_frames_total{{model_name="fork-model",replica="0",stage="0"}}' in text
            os._exit(0 if ok else 3)
        except BaseException:
            os._exit(4)
    def exited(pid=pid):
        done, status = os.waitpid(pid, os.WNOHANG)
        return (status,) if done else None
    try:  # checked every 2 ms: the 100 children are waited for one after another
        status, = wait_until(exited, {hung_after}, poll=0.002, what="the child to exit")
        failed += os.waitstatus_to_exitcode(status) != 0
    except AssertionError:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        hung += 1
stop.set()
print(f"{{load}}: {{hung}} hung, {{failed}} failed of {{{forks}}} forks")
"""


@pytest.mark.parametrize("load", ["render", "create", "collect"])
def test_forked_children_record_and_render_under_load(load):
    result = run_isolated(LOAD.format(load=load, forks=FORKS, tests=TESTS_DIR,
                                      hung_after=HUNG_AFTER), timeout=600)
    assert result.returncode == 0, result.stderr
    print(result.stdout)
    assert f"{load}: 0 hung, 0 failed of {FORKS} forks" in result.stdout, result.stdout
