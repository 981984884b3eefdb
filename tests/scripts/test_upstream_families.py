"""scripts/upstream-families.py on small vLLM-Omni-style checkouts: families resolved through the
package's constants and compared with the native catalog, and the API the drop-in lacks."""
import json
import os
import subprocess
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "upstream-families.py")
PYTHON = os.path.join(ROOT, "build", "venv", "bin", "python")  # where modelmetrics is installed

DEFINITIONS = """
    NUM_REQUESTS_RUNNING = "vllm_omni:num_requests_running"
    E2E = "vllm_omni:e2e_request_latency_s"
    PIPELINE_LABELS = ("model_name",)
    SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
"""
PROMETHEUS = """
    from prometheus_client import Gauge, Histogram

    from vllm_omni.metrics import definitions as defs

    _labels = list(defs.PIPELINE_LABELS)
    _running = Gauge(defs.NUM_REQUESTS_RUNNING,
                     "Number of requests currently running across all pipeline stages.",
                     labelnames=_labels)
    _e2e = Histogram(defs.E2E, "A HELP text that drifted.", labelnames=_labels,
                     buckets=defs.SECONDS_BUCKETS)
    _new = Histogram("vllm_omni:test_only_family_s", "New.", ["model_name", "outcome"])


    class OmniPrometheusMetrics:
        def __init__(self, model_name, log_stats=True):
            pass

        def set_running(self, n):
            pass
"""


def run(checkout):
    result = subprocess.run([PYTHON, SCRIPT, str(checkout), "--json"], capture_output=True,
                            text=True, timeout=60)
    return result.returncode, json.loads(result.stdout), result.stderr


def test_families_are_read_through_the_packages_constants_and_compared(tmp_path):
    metrics = tmp_path / "vllm_omni" / "metrics"
    metrics.mkdir(parents=True)
    (metrics / "__init__.py").write_text("")
    (metrics / "definitions.py").write_text(textwrap.dedent(DEFINITIONS))
    (metrics / "prometheus.py").write_text(textwrap.dedent(PROMETHEUS))
    code, report, stderr = run(tmp_path)
    assert code == 1, stderr
    states = {f["name"]: f["state"] for f in report["families"]}
    assert states["vllm_omni:num_requests_running"] == "ok"
    assert states["vllm_omni:e2e_request_latency_s"] == "differs: help"
    assert states["vllm_omni:test_only_family_s"] == "new"
    assert states["vllm_omni:realtime_vad_errors"] == "only in the catalog"
    # The drop-in's definitions lack the checkout's constants: listed as API differences.
    assert "vllm_omni.metrics.definitions.E2E" in report["api"]
    assert not any("OmniPrometheusMetrics" in line for line in report["api"])
