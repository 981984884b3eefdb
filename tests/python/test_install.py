"""install(): a script that only does upstream-style imports gets modelmetrics' classes, with or
without a real vLLM-Omni installed; vLLM's unregister_vllm_metrics is scoped (§4.10)."""

import os
import subprocess
import sys
import textwrap


import modelmetrics

# Where this process found modelmetrics (the build tree or site-packages), for the children.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(modelmetrics.__file__)))


def run(code, tmp_path, extra_path=None):
    env = dict(os.environ)
    paths = [str(extra_path)] if extra_path else []
    env["PYTHONPATH"] = os.pathsep.join(paths + [PACKAGE_ROOT])
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=60, cwd=tmp_path)


UPSTREAM_STYLE = """
    import modelmetrics.vllm_omni
    modelmetrics.vllm_omni.install()
    from vllm_omni.metrics.modality import OmniModalityMetrics
    from vllm_omni.metrics.prometheus import OmniPrometheusMetrics, OmniRequestCounter
    from vllm_omni.metrics.transfer import OmniTransferMetrics
    from vllm_omni.metrics.realtime import RealtimeVADMetrics
    from vllm_omni.metrics.stats import OrchestratorAggregator
    from vllm_omni.metrics import utils, definitions
    from vllm_omni.metrics import OmniPrometheusMetrics as Exported
    from vllm_omni.benchmarks.audio_continuity import compute_continuity_stats
    import vllm_omni.metrics.modality as mod
    import modelmetrics.vllm_omni.metrics.modality as ours
    from modelmetrics import _native
    assert OmniModalityMetrics is _native.OmniModalityMetrics
    assert OmniPrometheusMetrics is Exported is _native.OmniPrometheusMetrics
    assert mod is ours
    OmniModalityMetrics("m").observe_audio_rtf("2", "0", 0.5)
    from prometheus_client import REGISTRY, generate_latest
    text = generate_latest(REGISTRY).decode()
    assert 'vllm_omni:audio_rtf_count{model_name="m",replica="0",stage="2"} 1.0' in text
    print("ours")
"""


def test_upstream_imports_resolve_to_ours_without_vllm_omni(tmp_path):
    result = run(UPSTREAM_STYLE, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ours"


def test_upstream_imports_resolve_to_ours_over_an_installed_vllm_omni(tmp_path):
    # A stand-in vLLM-Omni installation whose metrics package would fail if it were imported.
    fake = tmp_path / "site"
    (fake / "vllm_omni" / "metrics").mkdir(parents=True)
    (fake / "vllm_omni" / "__init__.py").write_text("REAL = True\n")
    (fake / "vllm_omni" / "metrics" / "__init__.py").write_text("raise RuntimeError('upstream')\n")
    (fake / "vllm_omni" / "metrics" / "modality.py").write_text("raise RuntimeError('upstream')\n")
    code = textwrap.dedent(UPSTREAM_STYLE) + "import vllm_omni\nassert vllm_omni.REAL\n"
    result = run(code, tmp_path, fake)
    assert result.returncode == 0, result.stderr
    assert "ours" in result.stdout


def test_install_after_upstream_import_is_a_clear_error(tmp_path):
    fake = tmp_path / "site"
    (fake / "vllm_omni" / "metrics").mkdir(parents=True)
    (fake / "vllm_omni" / "__init__.py").write_text("")
    (fake / "vllm_omni" / "metrics" / "__init__.py").write_text("")
    code = """
        import vllm_omni.metrics
        import modelmetrics.vllm_omni
        try:
            modelmetrics.vllm_omni.install()
        except RuntimeError as e:
            print("refused:", e)
    """
    result = run(code, tmp_path, fake)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("refused: vllm_omni.metrics was imported before")


def test_vllm_unregister_is_scoped_when_vllm_is_imported_later(tmp_path):
    # A stand-in vllm whose unregister drops every collector with "vllm" in its name, as vLLM
    # did before PR #42331.
    fake = tmp_path / "site"
    pkg = fake / "vllm" / "v1" / "metrics"
    pkg.mkdir(parents=True)
    for d in (fake / "vllm", fake / "vllm" / "v1", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "prometheus.py").write_text(textwrap.dedent("""
        from prometheus_client import REGISTRY
        def unregister_vllm_metrics():
            for c in list(REGISTRY._collector_to_names):
                if "vllm" in getattr(c, "_name", ""):
                    REGISTRY.unregister(c)
    """))
    code = """
        import modelmetrics.vllm_omni
        modelmetrics.vllm_omni.install()
        from prometheus_client import REGISTRY, Gauge, generate_latest
        from vllm_omni.metrics.prometheus import OmniPrometheusMetrics
        OmniPrometheusMetrics("m").set_running(3)
        Gauge("vllm:num_requests_running", "upstream", ["engine"]).labels("0").set(1)
        from vllm.v1.metrics.prometheus import unregister_vllm_metrics
        unregister_vllm_metrics()
        text = generate_latest(REGISTRY).decode()
        assert 'vllm_omni:num_requests_running{model_name="m"} 3.0' in text, text
        assert "vllm:num_requests_running" not in text
        print("scoped")
    """
    result = run(code, tmp_path, fake)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "scoped"
