"""examples/vllm_omni_fastapi.py as a real consumer: the FastAPI app runs under uvicorn, its
``/metrics`` (prometheus_client's ASGI app) carries the drop-in's families next to
prometheus_client's own, and Debian's Prometheus scrapes it and answers an RTF quantile query.

Everything binds 127.0.0.1 only, and every process started here is stopped in teardown.
"""

import json
import math
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port, stop
from deadlines import wait_until

import modelmetrics

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vllm_omni_fastapi.py"
PROMETHEUS = "/usr/bin/prometheus"
# Where this process found modelmetrics (the build tree or site-packages), for the child.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(modelmetrics.__file__)))
RTF_LOW, RTF_HIGH = 0.3, 1.5  # the example's RTF range (RTF_LOW / RTF_HIGH there)
RATE = 15  # requests per second: enough RTF observations per 1 s scrape
QUANTILE = "histogram_quantile({q}, sum by (le) (rate(vllm_omni:audio_rtf_bucket[30s])))"


def http_get(url: str, timeout: float = 2.0) -> tuple:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode()


def tail(path: Path) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-20:]) if path.exists() else ""


def start_until(argv_for_port, ready_url_for_port, log: Path, env=None, timeout=20.0):
    """Starts argv_for_port(port) on a free port until ready_url answers 200; a child that exits
    early (most likely another process took the port first) is retried on a new port. 20 s per
    try, twice EVENTUALLY: the example imports FastAPI, uvicorn and the extension, Prometheus
    opens its TSDB; CPU-bound starts that a loaded 2-core machine slows most."""
    for _attempt in range(3):
        port = free_port()
        with open(log, "w") as out:
            proc = subprocess.Popen(argv_for_port(port), stdout=out, stderr=subprocess.STDOUT,
                                    env=env, cwd=log.parent)

        def ready_or_exited():
            if proc.poll() is not None:
                return "exited"
            try:
                return http_get(ready_url_for_port(port))[0] == 200 and "ready"
            except OSError:
                return None

        try:
            state = wait_until(ready_or_exited, timeout, what="an answer")
        except AssertionError:
            state = "timed out"
        if state == "ready":
            return proc, port
        stop(proc)
        if state == "timed out":
            break
    pytest.fail(f"{argv_for_port(port)[0]} did not become ready:\n{tail(log)}")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example app under uvicorn; yields its base URL."""
    work = tmp_path_factory.mktemp("example")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    proc, port = start_until(
        lambda port: [sys.executable, str(EXAMPLE), "--host", "127.0.0.1", "--port", str(port),
                      "--rate", str(RATE), "--seed", "7"],
        lambda port: f"http://127.0.0.1:{port}/healthz",
        work / "example.log",
        env=env,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def prometheus(example, tmp_path_factory):
    """Debian's Prometheus scraping the example every second; yields its base URL."""
    if not os.path.exists(PROMETHEUS):
        pytest.skip(f"{PROMETHEUS} is not installed (Debian package `prometheus`)")
    work = tmp_path_factory.mktemp("prometheus")
    target = urllib.parse.urlsplit(example).netloc
    config = work / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: example\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    proc, port = start_until(
        lambda port: [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={work / 'data'}",
                      f"--web.listen-address=127.0.0.1:{port}"],
        lambda port: f"http://127.0.0.1:{port}/-/ready",
        work / "prometheus.log",
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def query(prom: str, promql: str) -> list:
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    status, body = http_get(url)
    answer = json.loads(body)
    assert status == 200 and answer["status"] == "success", body
    return answer["data"]["result"]


def poll_scalar(prom: str, promql: str, deadline: float) -> float:
    """The single sample of an instant query once it is a finite number (rate() needs two scrapes
    with new observations in its window), by `deadline` (time.monotonic())."""
    result = []

    def finite():
        result[:] = query(prom, promql)
        return len(result) == 1 and math.isfinite(float(result[0]["value"][1]))

    # Checked twice a scrape interval: nothing changes faster.
    wait_until(finite, max(0.0, deadline - time.monotonic()), poll=0.5,
               what=lambda: f"a finite value for {promql}; last answer: {result}")
    return float(result[0]["value"][1])


def test_metrics_endpoint_serves_drop_in_and_process_families(example):
    from prometheus_client.parser import text_string_to_metric_families

    # The first RTF is observed when the first simulated response has finished streaming: 1-5 s
    # of audio at an RTF of at most 1.5, so within 7.5 s of the first request. Checked twice a
    # second: each check parses a whole scrape.
    def observed_rtf():
        status, text = http_get(f"{example}/metrics")
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        rtf = families.get("vllm_omni:audio_rtf")
        if rtf and any(s.name.endswith("_count") and s.value > 0 for s in rtf.samples):
            return text, families
        return None

    text, families = wait_until(observed_rtf, 20, poll=0.5,
                                what="a vllm_omni:audio_rtf observation")

    # Served on /metrics itself, not through Starlette's redirect to /metrics/.
    with urllib.request.urlopen(f"{example}/metrics", timeout=2) as resp:
        assert resp.geturl() == f"{example}/metrics"
    # prometheus_client's own collectors and ours come out of the same default REGISTRY.
    assert any(line.startswith("process_") for line in text.splitlines())
    assert "process_cpu_seconds" in families and "python_info" in families
    # Every kind of observation the example documents shows up with data.
    observed = {}
    for family in families.values():
        for s in family.samples:
            if s.name.endswith(("_count", "_total")) and s.value > 0:
                observed.setdefault(family.name, set()).add(s.labels.get("stage"))
    for name in ("vllm_omni:requests_success", "vllm_omni:prompt_tokens",
                 "vllm_omni:generation_tokens", "vllm_omni:audio_ttfp_s",
                 "vllm_omni:audio_frames", "vllm_omni:audio_duration_s",
                 "vllm_omni:audio_underrun_s", "vllm_omni:speech_stream_completed",
                 "vllm_omni:transfer_size_bytes", "vllm_omni:transfer_tx_s",
                 "vllm_omni:transfer_rx_s", "vllm_omni:transfer_in_flight_s"):
        assert name in observed, f"{name} has no observations"
    assert observed["vllm_omni:stage_gen_time_s"] >= {"0", "1", "2"}
    assert observed["vllm_omni:audio_rtf"] == {"2"}  # audio is recorded on code2wav
    stage_types = {s.labels["stage_type"] for s in families["vllm_omni:stage_gen_time_s"].samples}
    assert stage_types == {"llm"}
    running = families["vllm_omni:num_requests_running"].samples
    assert len(running) == 1 and running[0].labels["model_name"]
    # /healthz is a plain JSON liveness answer.
    status, body = http_get(f"{example}/healthz")
    assert status == 200 and json.loads(body)["status"] == "ok"


def test_prometheus_scrapes_example_and_answers_rtf_quantile(example, prometheus):
    # rate() over 30 s needs two 1 s scrapes with new observations in it; 60 s for both queries.
    deadline = time.monotonic() + 60
    p90 = poll_scalar(prometheus, QUANTILE.format(q=0.9), deadline)
    p50 = poll_scalar(prometheus, QUANTILE.format(q=0.5), deadline)
    print(f"audio RTF p50={p50:.3f} p90={p90:.3f}")
    assert RTF_LOW <= p90 <= RTF_HIGH
    assert RTF_LOW <= p50 < p90  # the spread makes the quantiles distinct
    up = query(prometheus, 'up{job="example"}')
    assert len(up) == 1 and float(up[0]["value"][1]) == 1.0, up
