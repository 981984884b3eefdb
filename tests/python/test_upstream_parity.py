"""The drop-in prints what upstream's prometheus_client families print for the same
observations: the same calls go to the drop-in and to a prometheus_client implementation of
upstream's classes (prometheus_client_reference.py); the text of each family for the test's
model must be equal line for line, `_created` values aside."""

import re

from conftest import exposition
from prometheus_client import generate_latest
from prometheus_client_reference import Families, speech_request
import prometheus_client_reference as ref

from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
from modelmetrics.vllm_omni.metrics.realtime import RealtimeVADMetrics
from modelmetrics.vllm_omni.metrics.transfer import OmniTransferMetrics


def ours_for(text, model):
    """Sample lines of `model`, `_created` values masked, in text order."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or f'model_name="{model}"' not in line:
            continue
        if "_created{" in line:
            line = re.sub(r" \S+$", " T", line)
        out.append(line)
    return out


def workload(p, m, t, v):
    for i in range(5):
        speech_request(p, m, t, i)
    p.request_succeeded(9.0, "length")
    p.request_failed()
    p.inc_requests_failed("client_disconnect")
    p.inc_requests_failed("")
    p.observe_stage_in_queue(1, 0.0)
    p.observe_num_inference_steps(28)
    p.inc_image_count(2)
    p.observe_image_pixels(1024 * 1024)
    p.observe_tokens(0, 7)
    m.inc_audio_skipped("2", "1", "no_audio_data")
    m.inc_audio_frames("2", "1", 0)
    m.inc_speech_stream_aborted("cancelled")
    m.inc_speech_stream_aborted("weird")
    m.observe_diffusion_exec("1", "0", 1.2)
    m.observe_diffusion_exec_per_step("1", "0", 0.024)
    m.observe_diffusion_preprocess("1", "0", 0.05)
    m.observe_diffusion_postprocess("1", "0", 0.3)
    m.observe_vae_decode("1", "0", -1.0)
    m.observe_diffusion_forward("1", "0", 0.9)
    m.observe_diffusion_kv_load("1", "0", 0.02)
    m.observe_image_ttfp("1", "0", 0.0)
    m.observe_denoise_step_latency("1", "0", 0.0)
    m.observe_audio_underrun("2", "0", -0.5)
    t.observe_size(3, 0, 4, 0, 300000000)
    v.session_started()
    v.session_started()
    v.session_finished()
    v.observe_inference(3.5)
    v.observe_endpoint_delay(640)
    v.error("input_overflow")
    p.set_duplex_sessions(3, -1)
    p.set_duplex_sessions(2, 1)
    for outcome, latency in (("success", 0.004), ("timeout", 2.5), ("bogus", 0.3), ("error", -1.0)):
        p.observe_duplex_append(outcome, latency)
    p.observe_duplex_control_queue_wait("append", 0.002)
    p.observe_duplex_control_queue_wait("rewind", 0.02)
    p.set_duplex_context(4096, 8192, 0.5, 17)
    p.inc_duplex_replica_affinity_loss()
    p.inc_duplex_replica_affinity_loss(0)
    p.set_duplex_recovery_state(1000, 65536, 3)
    p.inc_duplex_kv_recovery("replica_loss", "success")
    p.inc_duplex_kv_recovery("context_rollover", "nope", 2)
    p.inc_duplex_kv_recovery("meteor", "success", -1)


def test_same_calls_same_text(model):
    families = Families()
    workload(ref.OmniPrometheusMetrics(families, model), ref.OmniModalityMetrics(families, model),
             ref.OmniTransferMetrics(families, model), ref.RealtimeVADMetrics(families, model))
    workload(OmniPrometheusMetrics(model), OmniModalityMetrics(model), OmniTransferMetrics(model),
             RealtimeVADMetrics(model))
    expected = ours_for(generate_latest(families.registry).decode(), model)
    got = ours_for(exposition(), model)
    assert len(expected) > 400
    # Families may come in another order (registration order differs); within a sample name the
    # lines, children in creation order, must be identical.
    assert by_name(got) == by_name(expected)


def by_name(lines):
    out = {}
    for line in lines:
        out.setdefault(line.split("{")[0], []).append(line)
    return out
