"""RealtimeVADMetrics (upstream realtime.py @ 88a03fcf, §3.5): eager children, ms -> s,
reasons passed through, the log_stats gate."""

import pytest
from conftest import exposition, lines_with, sample

from modelmetrics.vllm_omni.metrics.realtime import RealtimeVADMetrics


def test_eager_children_and_observations(model):
    v = RealtimeVADMetrics(model)
    text = exposition()
    assert sample(text, f'vllm_omni:realtime_vad_active_sessions{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:realtime_vad_inference_latency_s_count{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:realtime_vad_endpoint_delay_s_count{{model_name="{model}"}}') == 0.0
    v.session_started()
    v.session_started()
    v.session_finished()
    v.observe_inference(4.0)
    v.observe_endpoint_delay(delay_ms=500)
    v.error("input_overflow")
    v.error("input_overflow")
    v.error("")
    text = exposition()
    assert sample(text, f'vllm_omni:realtime_vad_active_sessions{{model_name="{model}"}}') == 1.0
    assert sample(text, f'vllm_omni:realtime_vad_inference_latency_s_bucket{{le="0.005",model_name="{model}"}}') == 1.0
    assert sample(text, f'vllm_omni:realtime_vad_inference_latency_s_sum{{model_name="{model}"}}') == 0.004
    assert sample(text, f'vllm_omni:realtime_vad_endpoint_delay_s_sum{{model_name="{model}"}}') == 0.5
    errors = f'vllm_omni:realtime_vad_errors_total{{model_name="{model}",reason="%s"}}'
    assert sample(text, errors % "input_overflow") == 2.0
    assert sample(text, errors % "") == 1.0


def test_stats_off(model):
    v = RealtimeVADMetrics(model, log_stats=False)
    v.session_started()
    v.error("x")
    v.observe_inference(10)
    text = "\n".join(lines_with(exposition(), f'model_name="{model}"'))
    assert sample(text, f'vllm_omni:realtime_vad_active_sessions{{model_name="{model}"}}') == 0.0
    assert "realtime_vad_errors_total{" not in text


def test_bad_input(model):
    v = RealtimeVADMetrics(model)
    with pytest.raises(TypeError):
        v.observe_inference(None)
    with pytest.raises(TypeError):
        v.session_started(1)
    v.observe_inference(float("nan"))
    assert sample(exposition(), f'vllm_omni:realtime_vad_inference_latency_s_count{{model_name="{model}"}}') == 0.0
