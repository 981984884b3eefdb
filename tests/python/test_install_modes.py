"""install()'s two modes: a vLLM-Omni newer than the drop-in (a module and a method the drop-in
lacks) runs its own vllm_omni.metrics on modelmetrics' instruments, starts, and prints what
prometheus_client prints; one the drop-in covers gets the drop-in; forcing the drop-in over a newer
one fails before anything is switched. Each case runs in a child process (install() changes the
process's imports)."""

import json
import os
import subprocess
import sys
import textwrap

import modelmetrics

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(modelmetrics.__file__)))

# A vLLM-Omni newer than the drop-in, written for this test the way upstream writes its metrics:
# module-level prometheus_client families, a class whose methods observe them. The module
# `duplex_trace` and the method `observe_duplex_append` are what the drop-in lacks.
NEWER = {
    "vllm_omni/__init__.py": "",
    "vllm_omni/metrics/__init__.py": """
        from .prometheus import OmniPrometheusMetrics, OmniRequestCounter

        __all__ = ["OmniPrometheusMetrics", "OmniRequestCounter"]
    """,
    "vllm_omni/metrics/prometheus.py": """
        from prometheus_client import Counter, Gauge, Histogram

        REQUESTS = Counter("vllm_omni:test_requests", "Requests.", ["model_name", "stage"])
        RUNNING = Gauge("vllm_omni:test_running", "Running.", ["model_name"])
        APPEND = Histogram("vllm_omni:test_append_s", "Append latency.", ["model_name", "outcome"],
                           buckets=(0.001, 0.01, 0.1, 1.0))


        class OmniPrometheusMetrics:
            def __init__(self, model_name, log_stats=True):
                self.model_name = model_name
                self._running = RUNNING.labels(model_name=model_name)

            def request_succeeded(self, stage):
                REQUESTS.labels(model_name=self.model_name, stage=str(stage)).inc()

            def set_running(self, n):
                self._running.set(n)

            def observe_duplex_append(self, outcome, latency_s):
                APPEND.labels(model_name=self.model_name, outcome=outcome).observe(latency_s)


        class OmniRequestCounter:
            def __init__(self):
                self.value = 0
    """,
    "vllm_omni/metrics/duplex_trace.py": """
        import prometheus_client

        SESSIONS = prometheus_client.Gauge("vllm_omni:test_duplex_sessions", "Sessions.",
                                           ["model_name", "state"])


        def session_opened(model_name):
            SESSIONS.labels(model_name=model_name, state="active").inc()
    """,
}

# The calls a newer vLLM-Omni's server makes, then its /metrics text (no `_created` series: their
# values are the process's clock).
CALLS = """
    from vllm_omni.metrics import OmniPrometheusMetrics
    from vllm_omni.metrics.duplex_trace import session_opened
    from vllm_omni.metrics import prometheus as upstream
    m = OmniPrometheusMetrics("qwen")
    for stage in (0, 0, 1):
        m.request_succeeded(stage)
    m.set_running(3)
    for outcome, latency in (("ok", 0.004), ("ok", 0.2), ("rejected", 2.5)):
        m.observe_duplex_append(outcome, latency)
    session_opened("qwen")
    from prometheus_client import REGISTRY, generate_latest
    text = generate_latest(REGISTRY).decode()
    lines = [line for line in text.splitlines() if "vllm_omni:" in line]
"""


def write_tree(root, files):
    for path, text in files.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(textwrap.dedent(text))


def run(code, tmp_path, site):
    env = dict(os.environ, PROMETHEUS_DISABLE_CREATED_SERIES="True")
    env["PYTHONPATH"] = os.pathsep.join([str(site), PACKAGE_ROOT])
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=60, cwd=tmp_path)


INSTRUMENT_CHECKS = """
    import modelmetrics.prometheus_client as fast
    assert type(upstream.REQUESTS) is fast.Counter, type(upstream.REQUESTS)
    assert type(upstream.APPEND) is fast.Histogram
    import vllm_omni.metrics.duplex_trace as trace
    assert type(trace.SESSIONS) is fast.Gauge
"""


def test_a_newer_vllm_omni_runs_its_own_metrics_on_the_instruments(tmp_path):
    site = tmp_path / "site"
    write_tree(site, NEWER)
    plain = run(textwrap.dedent(CALLS) + "import json\nprint(json.dumps(lines))\n", tmp_path, site)
    assert plain.returncode == 0, plain.stderr
    installed = run(
        "import modelmetrics.vllm_omni\nmode = modelmetrics.vllm_omni.install()\n" +
        textwrap.dedent(CALLS) + textwrap.dedent(INSTRUMENT_CHECKS) +
        "import json\nprint(json.dumps({'mode': mode, 'lines': lines}))\n", tmp_path, site)
    assert installed.returncode == 0, installed.stderr
    result = json.loads(installed.stdout)
    assert result["mode"] == "instruments"
    # The same families, samples and values, line for line.
    assert result["lines"] == json.loads(plain.stdout)
    assert 'vllm_omni:test_requests_total{model_name="qwen",stage="0"} 2.0' in result["lines"]
    # One line says which mode, and why: the first thing the drop-in lacks.
    assert ("modelmetrics.vllm_omni: instruments mode: the drop-in lacks module "
            "vllm_omni.metrics.duplex_trace") in installed.stderr


def test_a_vllm_omni_the_drop_in_covers_gets_the_drop_in(tmp_path):
    site = tmp_path / "site"
    older = dict(NEWER)
    del older["vllm_omni/metrics/duplex_trace.py"]
    older["vllm_omni/metrics/prometheus.py"] = """
        from prometheus_client import Gauge


        class OmniPrometheusMetrics:
            def __init__(self, model_name, log_stats=True):
                self.model_name = model_name

            def set_running(self, n):
                pass


        class OmniRequestCounter:
            def increment(self):
                pass
    """
    write_tree(site, older)
    result = run("""
        import modelmetrics.vllm_omni
        print(modelmetrics.vllm_omni.install())
        from vllm_omni.metrics import OmniPrometheusMetrics
        from modelmetrics import _native
        assert OmniPrometheusMetrics is _native.OmniPrometheusMetrics
    """, tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "drop-in"
    assert "modelmetrics.vllm_omni: drop-in mode: it provides everything" in result.stderr


def test_a_parameter_the_drop_in_lacks_chooses_the_instruments(tmp_path):
    site = tmp_path / "site"
    changed = dict(NEWER)
    del changed["vllm_omni/metrics/duplex_trace.py"]
    changed["vllm_omni/metrics/prometheus.py"] = """
        class OmniPrometheusMetrics:
            def __init__(self, model_name, log_stats=True):
                pass

            def set_running(self, n, replica=None):
                pass
    """
    write_tree(site, changed)
    result = run("""
        import modelmetrics.vllm_omni
        print(modelmetrics.vllm_omni.install())
    """, tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "instruments"
    assert ("the drop-in lacks vllm_omni.metrics.prometheus.OmniPrometheusMetrics."
            "set_running(replica)") in result.stderr


def test_forcing_the_drop_in_over_a_newer_vllm_omni_fails_before_switching(tmp_path):
    site = tmp_path / "site"
    write_tree(site, NEWER)
    result = run("""
        import sys
        import modelmetrics.vllm_omni
        before = list(sys.meta_path)
        try:
            modelmetrics.vllm_omni.install(mode="drop-in")
        except RuntimeError as e:
            print(e)
        assert sys.meta_path == before
        assert not modelmetrics.vllm_omni.installed()
        assert modelmetrics.vllm_omni.mode() is None
        # The process still starts on upstream's own package.
        from vllm_omni.metrics.duplex_trace import session_opened
        session_opened("m")
    """, tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert "install(mode='drop-in'): the drop-in lacks module vllm_omni.metrics.duplex_trace" \
        in result.stdout


def test_forcing_the_instruments_without_a_vllm_omni_is_a_clear_error(tmp_path):
    result = run("""
        import modelmetrics.vllm_omni
        try:
            modelmetrics.vllm_omni.install(mode="instruments")
        except RuntimeError as e:
            print(e)
        try:
            modelmetrics.vllm_omni.install(mode="fast")
        except ValueError as e:
            print(e)
    """, tmp_path, tmp_path / "empty")
    assert result.returncode == 0, result.stderr
    assert "no vLLM-Omni is installed" in result.stdout
    assert "mode is 'drop-in' or 'instruments'" in result.stdout


def test_a_package_that_cannot_be_read_gets_the_instruments(tmp_path):
    site = tmp_path / "site"
    write_tree(site, {"vllm_omni/__init__.py": "", "vllm_omni/metrics/__init__.py": ""})
    (site / "vllm_omni" / "metrics" / "broken.py").write_bytes(b"def f(:\n")
    result = run("""
        import modelmetrics.vllm_omni
        print(modelmetrics.vllm_omni.install())
        import vllm_omni.metrics
    """, tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "instruments"


def test_a_family_defined_otherwise_chooses_the_instruments(tmp_path):
    # The drop-in's API, but a family whose HELP the installed version changed: the drop-in would
    # print the old text, so the installed package runs on the instruments.
    site = tmp_path / "site"
    write_tree(site, {
        "vllm_omni/__init__.py": "",
        "vllm_omni/metrics/__init__.py": "",
        "vllm_omni/metrics/prometheus.py": """
            from prometheus_client import Gauge

            _running = Gauge("vllm_omni:num_requests_running", "A new HELP text.", ["model_name"])
        """,
    })
    result = run("""
        import modelmetrics.vllm_omni
        print(modelmetrics.vllm_omni.install())
    """, tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "instruments"
    assert "family vllm_omni:num_requests_running (differs: help)" in result.stderr


def test_an_editable_install_is_found_as_an_import_finds_it(tmp_path):
    # pip's editable installs put a finder on sys.meta_path rather than a folder on sys.path.
    source = tmp_path / "src"
    write_tree(source, NEWER)
    result = run(f"""
        import importlib.machinery, importlib.util, sys

        class EditableFinder:
            def find_spec(self, name, path=None, target=None):
                if name == "vllm_omni":
                    return importlib.util.spec_from_file_location(
                        name, {str(source / "vllm_omni" / "__init__.py")!r},
                        submodule_search_locations=[{str(source / "vllm_omni")!r}])
                return None

        sys.meta_path.append(EditableFinder())
        import modelmetrics.vllm_omni
        print(modelmetrics.vllm_omni.install())
        from vllm_omni.metrics.duplex_trace import session_opened
        session_opened("m")
    """, tmp_path, tmp_path / "empty")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "instruments"


def test_upstream_may_import_prometheus_client_submodules_in_instruments_mode(tmp_path):
    site = tmp_path / "site"
    tree = dict(NEWER)
    tree["vllm_omni/metrics/duplex_trace.py"] = """
        import prometheus_client.core
        from prometheus_client import core, registry
        from prometheus_client.registry import REGISTRY

        SESSIONS = prometheus_client.Gauge("vllm_omni:test_duplex_sessions", "Sessions.",
                                           ["model_name", "state"])
        assert core.GaugeMetricFamily is not None and REGISTRY is registry.REGISTRY


        def session_opened(model_name):
            SESSIONS.labels(model_name=model_name, state="active").inc()
    """
    write_tree(site, tree)
    result = run("""
        import modelmetrics.vllm_omni
        assert modelmetrics.vllm_omni.install() == "instruments"
        import modelmetrics.prometheus_client as fast
        import vllm_omni.metrics.duplex_trace as trace
        assert type(trace.SESSIONS) is fast.Gauge, type(trace.SESSIONS)
        trace.session_opened("m")
        print("ok")
    """, tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_call_upstream_accepts_must_bind_on_the_drop_in():
    from modelmetrics.vllm_omni._api import Callable

    def f(positional, keyword_only=(), required=None, **kw):
        return Callable(positional, keyword_only,
                        positional if required is None else required, **kw)

    # (upstream, drop-in, the first thing a call written for upstream cannot pass)
    cases = [
        (f(["a", "b"]), f(["a", "b"]), None),
        (f(["a", "b"]), f(["a"], ["b"]), "b"),  # f(1, 2) breaks
        (f(["a", "b"]), f(["a"], varargs=True), "b"),  # f(1, b=2) breaks
        (f(["a", "b"], required=["a"]), f(["a", "b"]), "(it requires b)"),  # f(1) breaks
        (f(["a"]), f(["a", "b"], required=["a"]), None),  # an extra optional parameter
        (f(["a", "b"]), f(["a", "b"], posonly=2), "a"),  # f(a=1, b=2) breaks
        (f([], ["a"], required=[]), f([], ["a"], required=["a"]), "(it requires a)"),
    ]
    for upstream, ours, expected in cases:
        assert ours.accepts(upstream) == expected, (upstream.__dict__, ours.__dict__)


def test_families_read_as_prometheus_client_would_build_them(tmp_path):
    from modelmetrics.vllm_omni import _families

    folder = tmp_path / "metrics"
    write_tree(folder, {
        "__init__.py": "",
        "prometheus.py": """
            import collections
            from prometheus_client import Histogram as H, Summary

            counts = collections.Counter(["a", "b"])  # not a family
            _e2e = H("vllm_omni:e2e_request_latency_s",
                     "Pipeline-global end-to-end request latency in seconds (user arrival to "
                     "complete response).", ["model_name"])  # prometheus_client's default buckets
            _s = Summary("vllm_omni:test_summary", "S.")
        """,
    })
    found, unresolved = _families.families(str(folder))
    assert list(found) == ["vllm_omni:e2e_request_latency_s"]
    assert found["vllm_omni:e2e_request_latency_s"]["buckets"] == _families.DEFAULT_BUCKETS
    assert unresolved == ["vllm_omni.metrics.prometheus:9 (Summary)"]
    rows, _ = _families.compare(found, _families.catalog())
    assert ("vllm_omni:e2e_request_latency_s", "differs: buckets",
            "vllm_omni.metrics.prometheus:6") in rows
    assert _families.first_difference(found, unresolved).startswith("a family it cannot compare")
