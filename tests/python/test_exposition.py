"""The exposition: every family's name, type, HELP, labels and buckets against the references
(family_table.py); the prometheus_client bridge and the native render print the same bytes;
`_created` follows PROMETHEUS_DISABLE_CREATED_SERIES; the package works without
prometheus_client; the ASGI app serves the native render."""

import asyncio
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import exposition, help_and_type
from family_table import FAMILIES
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_latest_om
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

import modelmetrics
from modelmetrics import prometheus_bridge
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
from modelmetrics.vllm_omni.metrics.realtime import RealtimeVADMetrics
from modelmetrics.vllm_omni.metrics.transfer import OmniTransferMetrics


def touch_every_family(model):
    """One valid observation per family (lazy children need one to appear)."""
    p = OmniPrometheusMetrics(model)
    p.set_running(1)
    p.set_waiting(1)
    p.request_succeeded(1.0, "stop")
    p.observe_tokens(3, 4)
    p.observe_stage_gen_time(0, "llm", 0.5)
    p.observe_queue_wait(0.1)
    p.set_stage_waiting_requests(1, 2)
    p.observe_stage_in_queue(1, 0.01)
    p.observe_num_inference_steps(20)
    p.inc_image_count(1)
    p.observe_image_pixels(1024 * 1024)
    p.set_peak_memory(1, 100.0)
    p.inc_requests_failed("stage_error")
    p.observe_kv_wait("SharedMemoryConnector", 0.2)
    p.set_duplex_sessions(1, 0)
    p.observe_duplex_append("success", 0.01)
    p.observe_duplex_control_queue_wait("open", 0.001)
    p.set_duplex_context(10, 100, 0.1, 1)
    p.inc_duplex_replica_affinity_loss()
    p.set_duplex_recovery_state(10, 100, 1)
    p.inc_duplex_kv_recovery("replica_loss", "success")
    m = OmniModalityMetrics(model)
    for method in ("observe_audio_ttfp", "observe_audio_duration", "observe_audio_rtf",
                   "observe_audio_underrun", "observe_diffusion_exec",
                   "observe_diffusion_exec_per_step", "observe_diffusion_preprocess",
                   "observe_diffusion_postprocess", "observe_vae_decode",
                   "observe_diffusion_forward", "observe_diffusion_kv_load", "observe_image_ttfp",
                   "observe_denoise_step_latency"):
        getattr(m, method)("2", "0", 0.5)
    m.inc_audio_frames("2", "0", 240)
    m.inc_audio_continuity_ok("2", "0", 100)
    m.inc_audio_skipped("2", "0", "no_audio_data")
    m.inc_speech_stream_completed()
    m.inc_speech_stream_aborted("cancelled")
    t = OmniTransferMetrics(model)
    for method in ("observe_size", "observe_tx_time", "observe_rx_time", "observe_in_flight_time"):
        getattr(t, method)(0, 0, 1, 0, 2048)
    v = RealtimeVADMetrics(model)
    v.session_started()
    v.observe_inference(3.0)
    v.observe_endpoint_delay(400)
    v.error("input_overflow")


def test_help_and_type_of_every_family_equal_the_references(model):
    touch_every_family(model)
    exposed = {name: value for name, value in help_and_type(exposition()).items()
               if name.startswith("vllm_omni:") and not name.endswith("_created")}
    expected = {name: (typ, help_text) for name, (typ, help_text, _, _) in FAMILIES.items()}
    assert exposed == expected


def test_labels_and_buckets_of_every_family_equal_the_references(model):
    touch_every_family(model)
    seen = set()
    for family in text_string_to_metric_families(exposition()):
        exposed = family.name + ("_total" if family.type == "counter" else "")
        if exposed not in FAMILIES:
            continue
        typ, _, labels, buckets = FAMILIES[exposed]
        mine = [s for s in family.samples if s.labels.get("model_name") == model]
        assert mine, exposed
        seen.add(exposed)
        for s in mine:
            assert set(s.labels) - {"le"} == set(labels), (exposed, s)
        if typ == "histogram":
            les = [s.labels["le"] for s in mine if s.name.endswith("_bucket")]
            child = len(buckets) + 1
            assert les[:child] == [floatToGoString(b) for b in buckets] + ["+Inf"], exposed
    assert seen == set(FAMILIES)


def only_ours():
    registry = CollectorRegistry(auto_describe=True)
    registry.register(prometheus_bridge.ModelmetricsCollector())
    return registry


def test_bridge_and_native_render_print_the_same_bytes(model):
    touch_every_family(model)
    registry = only_ours()
    text = generate_latest(registry)
    assert text == modelmetrics.render()
    assert b"_created{" in text
    assert generate_latest_om(registry) == modelmetrics.render(openmetrics=True)


def test_the_bridge_serves_from_the_default_registry_once():
    import modelmetrics.vllm_omni.metrics  # noqa: F401
    from prometheus_client import REGISTRY

    collectors = [c for c in REGISTRY._collector_to_names
                  if isinstance(c, prometheus_bridge.ModelmetricsCollector)]
    assert len(collectors) == 1
    assert prometheus_bridge.install() is collectors[0]  # idempotent
    assert not hasattr(collectors[0], "_name")  # vLLM's unregister_vllm_metrics skips it


def test_upstream_style_duplicate_families_are_refused():
    from prometheus_client import REGISTRY, Gauge

    with pytest.raises(ValueError):
        Gauge("vllm_omni:num_requests_running", "x", ["model_name"], registry=REGISTRY)


def run_python(code, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=60)


def test_created_series_follow_the_environment_switch():
    code = """
        from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
        from prometheus_client import REGISTRY, generate_latest
        import modelmetrics
        OmniPrometheusMetrics("m").request_succeeded(1.0)
        text = generate_latest(REGISTRY).decode()
        print("bridge_created" if "vllm_omni:requests_success_created" in text else "bridge_none")
        print("native_created" if b"_created" in modelmetrics.render() else "native_none")
    """
    off = run_python(code, {"PROMETHEUS_DISABLE_CREATED_SERIES": "True"})
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["bridge_none", "native_none"]
    on = run_python(code, {"PROMETHEUS_DISABLE_CREATED_SERIES": "false"})
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == ["bridge_created", "native_created"]


def test_import_works_without_prometheus_client():
    code = """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "prometheus_client" or name.startswith("prometheus_client."):
                    raise ImportError("blocked for the test")
        sys.meta_path.insert(0, Block())
        import modelmetrics
        from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
        OmniModalityMetrics("m").observe_audio_rtf("2", "0", 0.5)
        text = modelmetrics.render().decode()
        assert 'vllm_omni:audio_rtf_count{model_name="m",replica="0",stage="2"} 1.0' in text, text
        assert "prometheus_client" not in sys.modules
        print("ok")
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_asgi_app_serves_text_and_openmetrics(model):
    OmniPrometheusMetrics(model).set_running(7)
    app = modelmetrics.make_asgi_app()

    def call(headers):
        sent = []

        async def receive():
            return {"type": "http.request", "body": b""}

        async def send(message):
            sent.append(message)

        asyncio.run(app({"type": "http", "headers": headers}, receive, send))
        start, body = sent
        return dict(start["headers"])[b"content-type"], body["body"]

    content_type, body = call([])
    assert content_type.startswith(b"text/plain; version=0.0.4")
    assert f'vllm_omni:num_requests_running{{model_name="{model}"}} 7.0'.encode() in body
    content_type, body = call([(b"accept", b"application/openmetrics-text; version=1.0.0")])
    assert content_type.startswith(b"application/openmetrics-text")
    assert body.endswith(b"# EOF\n")
