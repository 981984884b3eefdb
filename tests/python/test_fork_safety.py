"""fork() while other threads render, collect or create label children: every child can record
and render. vLLM and Gunicorn fork workers while /metrics may be serving; render() and collect()
run without the GIL holding C++ locks, so a child forked at that moment used to inherit a lock
held by a thread that no longer exists and hang at its first render (15 of 30 children in a
probe). Each load forks 100 children; a child that has not exited 5 s after the fork is hung.
"""

import pytest
from conftest import run_isolated

FORKS = 100

LOAD = """
import os, sys, threading, time
import modelmetrics
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics

load = sys.argv[1] if len(sys.argv) > 1 else {load!r}
m = OmniModalityMetrics("fork-model")
m.inc_audio_frames("0", "0", 1)
stop = threading.Event()

def render():
    while not stop.is_set():
        modelmetrics.render()

def collect():
    while not stop.is_set():
        modelmetrics._native.collect()

def create():
    i = 0
    while not stop.is_set():
        for _ in range(10):  # a new child every call, in bursts: the registry grows by
            i += 1           # thousands, not millions, so each render stays short
            m.inc_audio_frames(str(i % 7), str(i), 1)
        time.sleep(0.001)

workers = {{"render": [render, render], "create": [create, render],
            "collect": [collect, create, render]}}[load]
threads = [threading.Thread(target=w, daemon=True) for w in workers]
for t in threads:
    t.start()
time.sleep(0.2)  # the threads are busy

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
    deadline = time.monotonic() + 5
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            failed += os.waitstatus_to_exitcode(status) != 0
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            hung += 1
            break
        time.sleep(0.002)
stop.set()
print(f"{{load}}: {{hung}} hung, {{failed}} failed of {{{forks}}} forks")
"""


@pytest.mark.parametrize("load", ["render", "create", "collect"])
def test_forked_children_record_and_render_under_load(load):
    result = run_isolated(LOAD.format(load=load, forks=FORKS), timeout=600)
    assert result.returncode == 0, result.stderr
    print(result.stdout)
    assert f"{load}: 0 hung, 0 failed of {FORKS} forks" in result.stdout, result.stdout
