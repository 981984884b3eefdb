"""Constants and helpers of modelmetrics.vllm_omni.metrics.definitions, plus the taxonomy and queue
wait helpers of utils that the upstream tests (test_emit_calls.py @ 9cfbfc89, the superseded
definitions test) pin. Values from pipeline-metrics-behaviour.md §2, §4.2, §4.4, §4.6, §4.17."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

import pytest

from modelmetrics.vllm_omni.metrics import definitions as defs
from modelmetrics.vllm_omni.metrics.utils import (
    FAILURE_REASONS,
    coerce_positive_int_scalar,
    extract_queue_wait_s,
    normalize_failure_reason,
)


class Scalar:
    """A tensor / numpy scalar stand-in: only ``.item()``."""

    def __init__(self, value, *, fail: bool = False) -> None:
        self._value = value
        self._fail = fail

    def item(self):
        if self._fail:
            raise RuntimeError("item() on a multi-element tensor")
        return self._value


# ---- constants ----
def test_prefix_and_family_names() -> None:
    assert defs.METRIC_PREFIX == "vllm_omni:"
    names = defs.ALL_METRIC_NAMES
    assert len(names) == len(set(names)) == 55
    assert all(n.startswith("vllm_omni:") and len(n) > len("vllm_omni:") for n in names)
    assert not any(n.endswith("_total") for n in names)  # the exposition appends it once
    assert not any(n.startswith("vllm:omni_") for n in names)


@pytest.mark.parametrize(
    ("constant", "value"),
    [
        ("NUM_REQUESTS_RUNNING", "vllm_omni:num_requests_running"),
        ("REQUESTS_SUCCESS", "vllm_omni:requests_success"),
        ("E2E_REQUEST_LATENCY_S", "vllm_omni:e2e_request_latency_s"),
        ("PROMPT_TOKENS", "vllm_omni:prompt_tokens"),
        ("STAGE_GEN_TIME_S", "vllm_omni:stage_gen_time_s"),
        ("STAGE_IN_QUEUE_S", "vllm_omni:stage_in_queue_s"),
        ("IMAGE_COUNT_METRIC", "vllm_omni:image_count"),
        ("IMAGE_PIXELS_METRIC", "vllm_omni:image_pixels"),
        ("REQUESTS_FAILED", "vllm_omni:requests_failed"),
        ("KV_WAIT_S", "vllm_omni:kv_wait_s"),
        ("DENOISE_STEP_LATENCY_S", "vllm_omni:denoise_step_latency_s"),
        ("AUDIO_RTF_METRIC", "vllm_omni:audio_rtf"),
        ("AUDIO_FRAMES_METRIC", "vllm_omni:audio_frames"),
        ("AUDIO_CONTINUITY_OK_METRIC", "vllm_omni:audio_continuity_ok"),
        ("AUDIO_SKIPPED_REQUESTS_METRIC", "vllm_omni:audio_skipped_requests"),
        ("TRANSFER_SIZE_BYTES", "vllm_omni:transfer_size_bytes"),
        ("TRANSFER_TX_S", "vllm_omni:transfer_tx_s"),
        ("TRANSFER_RX_S", "vllm_omni:transfer_rx_s"),
        ("TRANSFER_IN_FLIGHT_S", "vllm_omni:transfer_in_flight_s"),
        ("SPEECH_STREAM_COMPLETED", "vllm_omni:speech_stream_completed"),
        ("SPEECH_STREAM_ABORTED", "vllm_omni:speech_stream_aborted"),
        ("REALTIME_VAD_ACTIVE_SESSIONS", "vllm_omni:realtime_vad_active_sessions"),
        ("REALTIME_VAD_INFERENCE_LATENCY_S", "vllm_omni:realtime_vad_inference_latency_s"),
        ("REALTIME_VAD_ENDPOINT_DELAY_S", "vllm_omni:realtime_vad_endpoint_delay_s"),
        ("REALTIME_VAD_ERRORS", "vllm_omni:realtime_vad_errors"),
    ],
)
def test_family_constant_values(constant: str, value: str) -> None:
    assert getattr(defs, constant) == value


def test_legacy_ms_transfer_names_are_gone() -> None:
    for legacy in ("TRANSFER_TX_TIME_MS", "TRANSFER_RX_DECODE_TIME_MS", "TRANSFER_IN_FLIGHT_TIME_MS"):
        assert not hasattr(defs, legacy)


def test_label_sets() -> None:
    assert defs.PIPELINE_LABELS == ("model_name",)
    assert defs.SUCCESS_LABELS == ("model_name", "finished_reason")
    assert defs.STAGE_LABELS == ("model_name", "stage", "replica")
    assert defs.STAGE_GEN_TIME_LABELS == ("model_name", "stage", "stage_type")
    assert defs.DIFFUSION_LABELS == ("model_name", "stage")
    assert defs.FAILED_LABELS == ("model_name", "reason")
    assert defs.KV_WAIT_LABELS == ("model_name", "connector_type")
    assert defs.AUDIO_CONTINUITY_LABELS == ("model_name", "stage", "replica", "threshold_ms")
    assert defs.AUDIO_SKIPPED_LABELS == ("model_name", "stage", "replica", "reason")
    assert defs.TRANSFER_LABELS == ("model_name", "from_stage", "from_replica", "to_stage", "to_replica")
    assert defs.REALTIME_VAD_LABELS == ("model_name",)
    assert defs.REALTIME_VAD_ERROR_LABELS == ("model_name", "reason")


def test_buckets() -> None:
    assert defs.SECONDS_BUCKETS == (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
    assert defs.SECONDS_FAST_BUCKETS == (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0)
    assert defs.RTF_BUCKETS == (0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5, 2.0, 5.0, 10.0)
    assert defs.BYTES_BUCKETS == tuple(1024 * 4**i for i in range(10))
    for buckets in (defs.SECONDS_BUCKETS, defs.SECONDS_FAST_BUCKETS, defs.RTF_BUCKETS, defs.BYTES_BUCKETS):
        assert isinstance(buckets, tuple)
        assert list(buckets) == sorted(set(buckets))


def test_other_constants() -> None:
    assert defs.DEFAULT_AUDIO_SAMPLE_RATE == 24000
    assert defs.DEFAULT_AUDIO_CHANNELS == 1
    assert defs.DEFAULT_AUDIO_SAMPLE_WIDTH == 2
    assert defs.AUDIO_SAMPLE_RATE_ENV == "VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE"
    assert defs.AUDIO_CHANNELS_ENV == "VLLM_OMNI_BENCH_AUDIO_CHANNELS"
    assert defs.AUDIO_CONTINUITY_DEFAULT_THRESHOLD_S == 0.1
    assert defs.DIFFUSION_SCHEDULER_WAITING_KEY == "scheduler_num_waiting_reqs"
    assert FAILURE_REASONS == {"client_abort", "client_disconnect", "stage_error", "unknown"}


# ---- compute_* ----
def test_compute_audio_rtf() -> None:
    assert defs.compute_audio_rtf(0.5, 1.0) == 0.5
    assert defs.compute_audio_rtf(3.0, 2.0) == 1.5
    assert defs.compute_audio_rtf(1.0, 0.0) == 0.0
    assert defs.compute_audio_rtf(1.0, -1.0) == 0.0
    assert defs.compute_audio_rtf(1.0, math.nan) == 0.0  # guard: no NaN RTF sample
    assert defs.compute_audio_rtf(Scalar(1.0), Scalar(4.0)) == 0.25


@pytest.mark.parametrize("args", [(None, 1.0), (1.0, None), ("1", 2.0), (1.0, "2")])
def test_compute_audio_rtf_rejects_non_numbers(args) -> None:
    with pytest.raises(TypeError, match="compute_audio_rtf"):
        defs.compute_audio_rtf(*args)


def test_compute_audio_frames() -> None:
    assert defs.compute_audio_frames(4800) == 2400
    assert defs.compute_audio_frames(4801) == 2400
    assert defs.compute_audio_frames(4800, sample_width=2, channels=2) == 1200
    assert defs.compute_audio_frames(0) == 0
    assert defs.compute_audio_frames(-4) == 0
    assert defs.compute_audio_frames(4800, channels=0) == 0
    assert defs.compute_audio_frames(2**60 + 2) == 2**59 + 1  # exact for big ints
    assert defs.compute_audio_frames(9.0) == 4
    assert defs.compute_audio_frames(math.nan) == 0
    with pytest.raises(TypeError):
        defs.compute_audio_frames(None)  # type: ignore[arg-type]


def test_compute_denoise_step_latency() -> None:
    assert defs.compute_denoise_step_latency(1000.0, 20) == 50.0
    assert defs.compute_denoise_step_latency(1000.0, 0) == 0.0
    assert defs.compute_denoise_step_latency(1000.0, -3) == 0.0
    assert defs.compute_denoise_step_latency(1000.0, None) == 0.0  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        defs.compute_denoise_step_latency(None, 10)  # type: ignore[arg-type]


# ---- sample-rate chain (§4.4) ----
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"audio_sample_rate": 16000}, 16000),
        ({"sample_rate": 22050}, 22050),
        ({"sampling_rate": 44100}, 44100),
        ({"sr": 8000}, 8000),
        ({"sr": 8000, "output_sample_rate": 48000}, 48000),  # key order, not dict order
        ({"output_sample_rate": 0, "sample_rate": 16000}, 16000),  # non-positive falls through
        ({"output_sample_rate": None, "sr": 16000}, 16000),
        ({"sample_rate": "24000"}, 24000),
        ({"sample_rate": "24000.0", "sr": 11025}, 11025),  # int("24000.0") fails
        ({"sample_rate": 16000.9}, 16000),  # floats truncate
        ({"sample_rate": Scalar(44100)}, 44100),
        ({"sample_rate": Scalar(44100, fail=True), "sr": 8000}, 8000),
        ({"sample_rate": [Scalar(32000)]}, 32000),
        ({"sample_rate": [None, "x", 12000]}, 12000),
        ({"sample_rate": -1}, None),
        ({"sample_rate": math.nan}, None),
        ({"sample_rate": math.inf}, None),
        ({"sample_rate": "abc"}, None),
        ({"sample_rate": object()}, None),
        ({}, None),
        (None, None),
        (SimpleNamespace(sampling_rate=16000), 16000),
        (SimpleNamespace(), None),
        ([None, {}, {"sr": 22050}, {"sr": 8000}], 22050),  # first item with a rate wins
        (({"sample_rate": 0}, SimpleNamespace(audio_sample_rate=Scalar(16000))), 16000),
        ([], None),
        ("24000", None),  # a str is not a sequence of sources
    ],
)
def test_resolve_audio_sample_rate_or_none(source, expected) -> None:
    assert defs.resolve_audio_sample_rate_or_none(source) == expected


def test_resolve_audio_sample_rate_defaults() -> None:
    assert defs.resolve_audio_sample_rate({}) == 24000
    assert defs.resolve_audio_sample_rate(None) == 24000
    assert defs.resolve_audio_sample_rate({"sr": "bad"}, default=0) == 0
    assert defs.resolve_audio_sample_rate({"sr": 16000}, default=0) == 16000


def test_coerce_positive_int_scalar_bool_is_one() -> None:
    assert coerce_positive_int_scalar(True) == 1
    assert coerce_positive_int_scalar(False) is None


# ---- environment (§4.4) ----
def test_stream_pcm_format_defaults(monkeypatch) -> None:
    monkeypatch.delenv(defs.AUDIO_SAMPLE_RATE_ENV, raising=False)
    monkeypatch.delenv(defs.AUDIO_CHANNELS_ENV, raising=False)
    assert defs.stream_pcm_format_from_env() == (24000, 1)
    assert defs.stream_pcm_format_from_env(default_sample_rate=16000, default_channels=2) == (16000, 2)


def test_stream_pcm_format_from_env_values(monkeypatch) -> None:
    monkeypatch.setenv(defs.AUDIO_SAMPLE_RATE_ENV, "44100")
    monkeypatch.setenv(defs.AUDIO_CHANNELS_ENV, " 2 ")
    assert defs.stream_pcm_format_from_env() == (44100, 2)


def test_stream_pcm_format_empty_env_means_default(monkeypatch) -> None:
    monkeypatch.setenv(defs.AUDIO_SAMPLE_RATE_ENV, "")
    monkeypatch.setenv(defs.AUDIO_CHANNELS_ENV, "")
    assert defs.stream_pcm_format_from_env() == (24000, 1)


def test_stream_pcm_format_invalid_env_warns_and_defaults(monkeypatch, caplog) -> None:
    monkeypatch.setenv(defs.AUDIO_SAMPLE_RATE_ENV, "fast")
    monkeypatch.setenv(defs.AUDIO_CHANNELS_ENV, "2.0")
    with caplog.at_level(logging.WARNING, logger=defs.logger.name):
        assert defs.stream_pcm_format_from_env() == (24000, 1)
    messages = [r.getMessage() for r in caplog.records]
    assert any(defs.AUDIO_SAMPLE_RATE_ENV in m and "'fast'" in m for m in messages)
    assert any(defs.AUDIO_CHANNELS_ENV in m for m in messages)


def test_stream_pcm_format_clamps_to_one(monkeypatch) -> None:
    monkeypatch.setenv(defs.AUDIO_SAMPLE_RATE_ENV, "-5")
    monkeypatch.setenv(defs.AUDIO_CHANNELS_ENV, "0")
    assert defs.stream_pcm_format_from_env() == (1, 1)


def test_stream_pcm_format_rejects_bad_defaults() -> None:
    with pytest.raises(TypeError):
        defs.stream_pcm_format_from_env(default_sample_rate=None)  # type: ignore[arg-type]


# ---- extract_queue_wait_s (test_emit_calls @ 9cfbfc89) ----
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (({"queue_wait_ms": 0.0},), 0.0),
        (({"queue_wait_ms": 131.0}, {"scheduler_queue_wait_s": 135.0}), 135.131),
        ((None, {"scheduler_queue_wait_s": 135.0}), 135.0),
        (({"preprocess_ms": 2.0},), None),
        ((None,), None),
        ((None, {"scheduler_queue_wait_s": 0.0}), 0.0),
        (({"queue_wait_ms": 250.0},), 0.25),
        (({"queue_wait_ms": None},), 0.0),  # a present None counts as 0
        (({"queue_wait_ms": 100.0}, {"other": 1.0}), 0.1),
        (({}, {}), None),
    ],
)
def test_extract_queue_wait_s(args, expected) -> None:
    result = extract_queue_wait_s(*args)
    if expected is None:
        assert result is None
    else:
        assert result == pytest.approx(expected)


@pytest.mark.parametrize(
    "args",
    [
        ({"queue_wait_ms": math.nan},),
        ({"queue_wait_ms": "soon"},),
        (["queue_wait_ms"],),
        (None, {"scheduler_queue_wait_s": math.inf}),
        (None, "scheduler_queue_wait_s"),
    ],
)
def test_extract_queue_wait_s_bad_input_is_missing(args) -> None:
    assert extract_queue_wait_s(*args) is None


# ---- normalize_failure_reason (§4.6) ----
@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("client_abort", "client_abort"),
        ("client_disconnect", "client_disconnect"),
        ("stage_error", "stage_error"),
        ("unknown", "unknown"),
        ("timeout for request req-1", "unknown"),
        ("CUDA error for req-1", "unknown"),
        ("STAGE_ERROR", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
        (42, "unknown"),
        (["stage_error"], "unknown"),
    ],
)
def test_normalize_failure_reason(reason, expected) -> None:
    assert normalize_failure_reason(reason) == expected
