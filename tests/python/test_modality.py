"""Ports tests/metrics/test_modality.py (upstream vllm-omni @ fceffaac, §7 of
pipeline-metrics-behaviour.md) to the drop-in, plus the Speech stream counters and bad input.
Values are read back from generate_latest(REGISTRY)."""

from types import SimpleNamespace

import pytest
from conftest import exposition, lines_with, sample

from modelmetrics.vllm_omni.metrics import modality
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
from modelmetrics.vllm_omni.metrics.stats import StageRequestStats, StageStats


def s(text, family, model, stage="1", replica="0", extra=""):
    return sample(text, f'vllm_omni:{family}{{model_name="{model}",{extra}replica="{replica}",stage="{stage}"}}')


def test_registration_eleven_families_after_one_observation_each(model):
    m = OmniModalityMetrics(model)
    m.observe_audio_ttfp("1", "0", 0.1)
    m.observe_audio_duration("1", "0", 1.0)
    m.observe_audio_rtf("1", "0", 0.5)
    m.inc_audio_frames("1", "0", 10)
    m.observe_audio_underrun("1", "0", 0.0)
    m.inc_audio_continuity_ok("1", "0", 100)
    m.inc_audio_skipped("1", "0", "malformed_codec")
    m.observe_diffusion_exec("1", "0", 1.0)
    m.observe_diffusion_exec_per_step("1", "0", 0.02)
    m.observe_diffusion_preprocess("1", "0", 0.01)
    m.observe_diffusion_postprocess("1", "0", 0.2)
    text = "\n".join(lines_with(exposition(), f'model_name="{model}"'))
    families = {line.split("{")[0].rsplit("_bucket", 1)[0].rsplit("_count", 1)[0]
                .rsplit("_sum", 1)[0].rsplit("_created", 1)[0] for line in text.splitlines()}
    assert len({f.replace("_total", "") for f in families}) == 11


def test_observed_values(model):
    m = OmniModalityMetrics(model)
    m.observe_audio_ttfp("talker_ttfp", "0", 0.3)
    m.observe_audio_duration("1", "0", 3.5)
    m.observe_audio_rtf("1", "0", 0.45)
    m.inc_audio_frames("1", "0", 240)
    m.inc_audio_frames("1", "0", 60)
    m.inc_audio_frames("2", "0", 0)
    m.inc_audio_frames("2", "0", -5)
    m.observe_audio_underrun("1", "0", 0.05)
    m.observe_audio_underrun("3", "0", -0.1)
    m.inc_audio_continuity_ok("1", "0", 100)
    m.inc_audio_continuity_ok("1", "0", 200)
    m.inc_audio_skipped("1", "0", "malformed_codec")
    m.inc_audio_skipped("1", "0", "")
    text = exposition()
    assert s(text, "audio_ttfp_s_count", model, stage="talker_ttfp") == 1.0
    assert s(text, "audio_duration_s_sum", model) == 3.5
    assert s(text, "audio_rtf_sum", model) == 0.45
    assert s(text, "audio_frames_total", model) == 300.0
    assert not [l for l in lines_with(text, f'model_name="{model}"') if "audio_frames" in l and 'stage="2"' in l]
    assert s(text, "audio_underrun_s_sum", model) == 0.05
    assert s(text, "audio_underrun_s_sum", model, stage="3") == 0.0
    for threshold in ("100", "200"):
        assert sample(text, f'vllm_omni:audio_continuity_ok_total{{model_name="{model}",replica="0",stage="1",threshold_ms="{threshold}"}}') == 1.0
    for reason in ("malformed_codec", "unknown"):
        assert sample(text, f'vllm_omni:audio_skipped_requests_total{{model_name="{model}",reason="{reason}",replica="0",stage="1"}}') == 1.0


def test_threshold_ms_label_is_str_of_int(model):
    m = OmniModalityMetrics(model)
    m.inc_audio_continuity_ok("1", "0", 100.9)  # int() truncates
    m.inc_audio_continuity_ok("1", "0", "200")
    text = exposition()
    for threshold in ("100", "200"):
        assert sample(text, f'vllm_omni:audio_continuity_ok_total{{model_name="{model}",replica="0",stage="1",threshold_ms="{threshold}"}}') == 1.0
    with pytest.raises(ValueError):
        m.inc_audio_continuity_ok("1", "0", "abc")


def test_diffusion_sums_and_stats_off(model):
    m = OmniModalityMetrics(model)
    m.observe_diffusion_exec("1", "0", 1.25)
    m.observe_diffusion_preprocess("1", "0", 0.03)
    m.observe_diffusion_postprocess("1", "0", 0.8)
    m.observe_diffusion_exec_per_step("1", "0", 0.078)
    m.observe_vae_decode("1", "0", -1.0)  # skipped (< 0)
    m.observe_denoise_step_latency("1", "0", 0.0)  # skipped (<= 0)
    m.observe_image_ttfp("1", "0", 0.0)  # zero is a sample
    text = exposition()
    assert s(text, "diffusion_exec_s_sum", model) == 1.25
    assert s(text, "diffusion_preprocess_s_sum", model) == 0.03
    assert s(text, "diffusion_postprocess_s_sum", model) == 0.8
    assert s(text, "diffusion_exec_per_step_s_sum", model) == 0.078
    assert s(text, "vae_decode_s_count", model) is None
    assert s(text, "denoise_step_latency_s_count", model) is None
    assert s(text, "image_ttfp_s_count", model) == 1.0
    off = OmniModalityMetrics(model + "-off", log_stats=False)
    off.observe_diffusion_exec("1", "0", 1.0)
    off.observe_audio_rtf("1", "0", 0.5)
    off.inc_speech_stream_completed()
    assert not lines_with(exposition(), f'model_name="{model}-off"')


def stage_metrics(**fields):
    base = dict(batch_id=1, batch_size=1, num_tokens_in=0, num_tokens_out=0, stage_gen_time_ms=0.0,
                rx_transfer_bytes=0, rx_decode_time_ms=0.0, rx_in_flight_time_ms=0.0,
                stage_stats=StageStats())
    base.update(fields)
    return StageRequestStats(**base)


class Recorder:
    """Records calls, as upstream's tests do with a mock OmniModalityMetrics."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def test_finalize_audio_frames_duration_rtf():
    rec = Recorder()
    out = SimpleNamespace(multimodal_output={"audio_sample_rate": 24000}, outputs=[])
    modality.observe_modality_at_finalize(
        rec, output_type="audio", stage_id=2, replica_id=0,
        stage_metrics=stage_metrics(audio_generated_frames=24000, stage_gen_time_ms=500.0),
        engine_outputs=out)
    assert ("inc_audio_frames", "2", "0", 24000) in rec.calls
    assert ("observe_audio_duration", "2", "0", 1.0) in rec.calls
    assert ("observe_audio_rtf", "2", "0", 0.5) in rec.calls
    assert not [c for c in rec.calls if c[0] in ("observe_audio_underrun", "inc_audio_continuity_ok")]


def test_finalize_zero_frames_is_a_skipped_request():
    rec = Recorder()
    modality.observe_modality_at_finalize(
        rec, output_type="audio", stage_id=2, replica_id=0, stage_metrics=stage_metrics(),
        engine_outputs=SimpleNamespace(multimodal_output={}, outputs=[]))
    assert ("inc_audio_frames", "2", "0", 0) in rec.calls
    assert ("inc_audio_skipped", "2", "0", "no_audio_data") in rec.calls
    assert not [c for c in rec.calls if c[0] in ("observe_audio_duration", "observe_audio_rtf")]


def test_finalize_sample_rate_key_and_diffusion_breakdown():
    rec = Recorder()
    modality.observe_modality_at_finalize(
        rec, output_type="audio", stage_id=1, replica_id=0,
        stage_metrics=stage_metrics(audio_generated_frames=16000),
        engine_outputs=SimpleNamespace(multimodal_output={"sample_rate": 16000}, outputs=[]))
    assert ("observe_audio_duration", "1", "0", 1.0) in rec.calls
    rec = Recorder()
    diffusion = {"preprocess_time_s": 0.05, "diffusion_engine_exec_time_s": 1.2,
                 "postprocess_time_s": 0.3, "num_inference_steps": 50}
    modality.observe_modality_at_finalize(
        rec, output_type="image", stage_id=1, replica_id=0,
        stage_metrics=stage_metrics(diffusion_metrics=diffusion), engine_outputs=None)
    assert ("observe_diffusion_preprocess", "1", "0", 0.05) in rec.calls
    assert ("observe_diffusion_exec", "1", "0", 1.2) in rec.calls
    assert ("observe_diffusion_postprocess", "1", "0", 0.3) in rec.calls
    per_step = [c for c in rec.calls if c[0] == "observe_diffusion_exec_per_step"]
    assert per_step and per_step[0][3] == pytest.approx(0.024)
    assert not [c for c in rec.calls if c[0].startswith("inc_audio") or "audio" in c[0]]


def test_finalize_guards():
    for replica, metrics in ((None, stage_metrics()), (0, None)):
        rec = Recorder()
        modality.observe_modality_at_finalize(rec, output_type="audio", stage_id=1,
                                              replica_id=replica, stage_metrics=metrics,
                                              engine_outputs=None)
        assert rec.calls == []
    rec = Recorder()
    modality.observe_modality_at_finalize(
        rec, output_type="text", stage_id=1, replica_id=0,
        stage_metrics=stage_metrics(diffusion_metrics=None), engine_outputs=None)
    assert rec.calls == []


def test_first_packet():
    rec = Recorder()
    modality.observe_audio_first_packet(rec, stage_id=2, replica_id=0, arrival_ts=100.0, now_ts=100.42)
    assert rec.calls[0][:3] == ("observe_audio_ttfp", "2", "0")
    assert rec.calls[0][3] == pytest.approx(0.42)
    rec = Recorder()
    modality.observe_audio_first_packet(rec, stage_id=2, replica_id=None, arrival_ts=100.0, now_ts=101.0)
    modality.observe_audio_first_packet(rec, stage_id=2, replica_id=0, arrival_ts=0, now_ts=101.0)
    assert rec.calls == []
    modality.observe_audio_first_packet(rec, stage_id=2, replica_id=0, arrival_ts=10.0, now_ts=9.0)
    assert rec.calls == [("observe_audio_ttfp", "2", "0", 0.0)]


def test_streaming_finalize_cases(model):
    m = OmniModalityMetrics(model)
    # 100 ms chunks every 100 ms: no underrun, continuity at threshold 100.
    modality.observe_audio_streaming_finalize(
        m, stage_id=2, replica_id=0, chunk_arrival_times_s=[0.0, 0.1, 0.2],
        chunk_bytes=[4800] * 3, sample_rate=24000)
    # A late chunk: underrun > 0.1, no continuity.
    modality.observe_audio_streaming_finalize(
        m, stage_id=2, replica_id=1, chunk_arrival_times_s=[0.0, 0.5], chunk_bytes=[4800, 4800],
        sample_rate=24000)
    # Stereo, 100 Hz: 0.5 s deficit.
    modality.observe_audio_streaming_finalize(
        m, stage_id=3, replica_id=0, chunk_arrival_times_s=[0.0, 1.0], chunk_bytes=[200, 200],
        sample_rate=100, channels=2)
    # Nothing for empty arrivals or no replica.
    modality.observe_audio_streaming_finalize(m, stage_id=4, replica_id=0, chunk_arrival_times_s=[],
                                              chunk_bytes=[], sample_rate=24000)
    modality.observe_audio_streaming_finalize(m, stage_id=4, replica_id=None,
                                              chunk_arrival_times_s=[0.0], chunk_bytes=[10],
                                              sample_rate=24000)
    text = exposition()
    ok = 'vllm_omni:audio_continuity_ok_total{{model_name="{}",replica="{}",stage="{}",threshold_ms="100"}}'
    assert s(text, "audio_underrun_s_sum", model, stage="2", replica="0") == 0.0
    assert sample(text, ok.format(model, "0", "2")) == 1.0
    assert s(text, "audio_underrun_s_sum", model, stage="2", replica="1") == pytest.approx(0.4)
    assert sample(text, ok.format(model, "1", "2")) is None
    assert s(text, "audio_underrun_s_sum", model, stage="3", replica="0") == pytest.approx(0.5)
    assert not [l for l in lines_with(text, f'model_name="{model}"') if 'stage="4"' in l]


def test_bucket_selection(model):
    m = OmniModalityMetrics(model)
    m.observe_audio_rtf("1", "0", 0.5)
    m.observe_audio_ttfp("1", "0", 0.5)
    m.observe_audio_underrun("1", "0", 0.5)
    text = exposition()
    assert 'audio_rtf_bucket{le="0.9"' in text
    assert 'audio_ttfp_s_bucket{le="0.05"' in text
    assert 'audio_underrun_s_bucket{le="0.001"' in text


def test_speech_stream_counters_bound_the_reason(model):
    m = OmniModalityMetrics(model)
    m.inc_speech_stream_completed()
    m.inc_speech_stream_completed()
    for reason in ("cancelled", "closed", "engine_dead", "error", "something else", ""):
        m.inc_speech_stream_aborted(reason)
    text = exposition()
    assert sample(text, f'vllm_omni:speech_stream_completed_total{{model_name="{model}"}}') == 2.0
    aborted = f'vllm_omni:speech_stream_aborted_total{{model_name="{model}",reason="%s"}}'
    assert sample(text, aborted % "error") == 3.0
    for reason in ("cancelled", "closed", "engine_dead"):
        assert sample(text, aborted % reason) == 1.0


def test_bad_input(model):
    m = OmniModalityMetrics(model)
    m.observe_audio_rtf("1", "0", 0.5)
    for call in (lambda: m.observe_audio_rtf("1", "0", None), lambda: m.observe_audio_rtf("1", "0"),
                 lambda: m.inc_audio_frames("1", "0", "240"), lambda: m.observe_audio_rtf("1", "0", "x")):
        with pytest.raises(TypeError):
            call()
    m.observe_audio_rtf("1", "0", float("nan"))
    m.observe_audio_rtf("\ud800", "0", 1.0)  # a lone surrogate is escaped, never raised
    assert 'replica="0",stage="\\\\ud800"' in exposition()  # the 6 characters \ud800, escaped
    m.observe_audio_ttfp(stage="1", replica="0", ttfp_seconds=0.2)  # keywords work
    text = exposition()
    assert s(text, "audio_rtf_count", model) == 1.0
    assert s(text, "audio_ttfp_s_count", model) == 1.0
