"""Metric names, label sets, buckets and audio formula helpers of the vLLM-Omni metrics.

Drop-in for upstream ``vllm_omni.metrics.definitions`` (vllm-project/vllm-omni, N @ 88a03fcf, plus
``compute_denoise_step_latency`` from main @ 778959797c). Behaviour follows
docs/pipeline-behaviour.md (§2 constants, §4.2 RTF, §4.4 sample-rate chain)
and docs/python.md (``definitions.py``).

Layout: the "catalog constants" block below holds every family name, label tuple and bucket tuple;
the label and bucket tuples are read from the C++ catalog, so they are defined once. Counter names carry no ``_total`` (the exposition appends it once, §1).

Section numbers (§n) cite docs/pipeline-behaviour.md.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence

from modelmetrics import _native

from . import utils as _utils  # coercion helpers live in utils, as upstream (used at call time)


def resolve_int_by_sequential_keys(source, keys):
    """utils.resolve_int_by_sequential_keys, also reachable here as upstream's definitions
    imports it (the two modules import each other, so this forwards at call time)."""
    return _utils.resolve_int_by_sequential_keys(source, keys)


logger = logging.getLogger(__name__)

# =================================================================================================
# BEGIN catalog constants: upstream's family-name constants (tests/python/test_catalog.py checks
# each against the C++ catalog, src/pipeline/catalog.h), then label and bucket tuples read from it.
# =================================================================================================
METRIC_PREFIX = "vllm_omni:"

# ---- Pipeline (OmniPrometheusMetrics, §3.1) ----
NUM_REQUESTS_RUNNING = "vllm_omni:num_requests_running"
NUM_REQUESTS_WAITING = "vllm_omni:num_requests_waiting"
REQUESTS_SUCCESS = "vllm_omni:requests_success"  # counter
E2E_REQUEST_LATENCY_S = "vllm_omni:e2e_request_latency_s"
PROMPT_TOKENS = "vllm_omni:prompt_tokens"  # counter
GENERATION_TOKENS = "vllm_omni:generation_tokens"  # counter

# ---- Image / diffusion service level (OmniPrometheusMetrics, §3.1) ----
STAGE_GEN_TIME_S = "vllm_omni:stage_gen_time_s"
REQUEST_QUEUE_WAIT_S = "vllm_omni:request_queue_wait_s"
STAGE_WAITING_REQUESTS = "vllm_omni:stage_waiting_requests"
STAGE_IN_QUEUE_S = "vllm_omni:stage_in_queue_s"
NUM_INFERENCE_STEPS = "vllm_omni:num_inference_steps"
IMAGE_COUNT_METRIC = "vllm_omni:image_count"  # counter
IMAGE_PIXELS_METRIC = "vllm_omni:image_pixels"
PEAK_MEMORY_MB = "vllm_omni:peak_memory_mb"
PEAK_MEMORY_MB_METRIC = PEAK_MEMORY_MB  # the name newer upstream modules import
REQUESTS_FAILED = "vllm_omni:requests_failed"  # counter
KV_WAIT_S = "vllm_omni:kv_wait_s"

# ---- Diffusion breakdown (OmniModalityMetrics, §3.3) ----
DIFFUSION_EXEC_S = "vllm_omni:diffusion_exec_s"
DIFFUSION_EXEC_PER_STEP_S = "vllm_omni:diffusion_exec_per_step_s"
DIFFUSION_PREPROCESS_S = "vllm_omni:diffusion_preprocess_s"
DIFFUSION_POSTPROCESS_S = "vllm_omni:diffusion_postprocess_s"
VAE_DECODE_S = "vllm_omni:vae_decode_s"
DIFFUSION_FORWARD_S = "vllm_omni:diffusion_forward_s"
DIFFUSION_KV_LOAD_S = "vllm_omni:diffusion_kv_load_s"
IMAGE_TTFP_S = "vllm_omni:image_ttfp_s"
DENOISE_STEP_LATENCY_S = "vllm_omni:denoise_step_latency_s"

# ---- Audio (OmniModalityMetrics, §3.2) ----
AUDIO_TTFP_S = "vllm_omni:audio_ttfp_s"
AUDIO_DURATION_S = "vllm_omni:audio_duration_s"
AUDIO_RTF_METRIC = "vllm_omni:audio_rtf"
AUDIO_FRAMES_METRIC = "vllm_omni:audio_frames"  # counter
AUDIO_UNDERRUN_S = "vllm_omni:audio_underrun_s"
AUDIO_CONTINUITY_OK_METRIC = "vllm_omni:audio_continuity_ok"  # counter
AUDIO_SKIPPED_REQUESTS_METRIC = "vllm_omni:audio_skipped_requests"  # counter

# ---- Speech streaming (PR #6853; §3.7) ----
SPEECH_STREAM_COMPLETED = "vllm_omni:speech_stream_completed"  # counter
SPEECH_STREAM_ABORTED = "vllm_omni:speech_stream_aborted"  # counter

# ---- Cross-stage transfer (OmniTransferMetrics, §3.4) ----
TRANSFER_SIZE_BYTES = "vllm_omni:transfer_size_bytes"
TRANSFER_TX_S = "vllm_omni:transfer_tx_s"
TRANSFER_RX_S = "vllm_omni:transfer_rx_s"
TRANSFER_IN_FLIGHT_S = "vllm_omni:transfer_in_flight_s"

# ---- Realtime server VAD (RealtimeVADMetrics, §3.5) ----
REALTIME_VAD_ACTIVE_SESSIONS = "vllm_omni:realtime_vad_active_sessions"
REALTIME_VAD_INFERENCE_LATENCY_S = "vllm_omni:realtime_vad_inference_latency_s"
REALTIME_VAD_ENDPOINT_DELAY_S = "vllm_omni:realtime_vad_endpoint_delay_s"
REALTIME_VAD_ERRORS = "vllm_omni:realtime_vad_errors"  # counter

# ---- Scheduler-native full duplex (OmniPrometheusMetrics, pipeline-behaviour.md §3.9) ----
DUPLEX_SESSIONS = "vllm_omni:duplex_sessions"
DUPLEX_APPEND_REQUESTS = "vllm_omni:duplex_append_requests"  # counter
DUPLEX_APPEND_LATENCY_S = "vllm_omni:duplex_append_latency_s"
DUPLEX_CONTROL_QUEUE_WAIT_S = "vllm_omni:duplex_control_queue_wait_s"
DUPLEX_CONTEXT_TOKENS = "vllm_omni:duplex_context_tokens"
DUPLEX_CONTEXT_LIMIT_TOKENS = "vllm_omni:duplex_context_limit_tokens"
DUPLEX_CONTEXT_UTILIZATION = "vllm_omni:duplex_context_utilization"
DUPLEX_APPEND_RECEIPTS = "vllm_omni:duplex_append_receipts"
DUPLEX_REPLICA_AFFINITY_LOSS = "vllm_omni:duplex_replica_affinity_loss"  # counter
DUPLEX_REPLAY_JOURNAL_TOKENS = "vllm_omni:duplex_replay_journal_tokens"
DUPLEX_REPLAY_JOURNAL_BYTES = "vllm_omni:duplex_replay_journal_bytes"
DUPLEX_RESOURCE_GENERATION = "vllm_omni:duplex_resource_generation"
DUPLEX_KV_REBUILDS = "vllm_omni:duplex_kv_rebuilds"  # counter

# ---- Label sets (§2.3) and buckets (§2.1), read from the C++ catalog (one definition) ----
_ROWS = {row[0]: row for row in _native.catalog()}  # name -> (name, kind, help, labels, buckets, ...)


def _labels(family: str) -> tuple[str, ...]:
    return tuple(_ROWS[family][3])


PIPELINE_LABELS = _labels(NUM_REQUESTS_RUNNING)
SUCCESS_LABELS = _labels(REQUESTS_SUCCESS)
STAGE_LABELS = _labels(AUDIO_TTFP_S)
STAGE_GEN_TIME_LABELS = _labels(STAGE_GEN_TIME_S)
DIFFUSION_LABELS = _labels(STAGE_IN_QUEUE_S)
FAILED_LABELS = _labels(REQUESTS_FAILED)
KV_WAIT_LABELS = _labels(KV_WAIT_S)
AUDIO_CONTINUITY_LABELS = _labels(AUDIO_CONTINUITY_OK_METRIC)
AUDIO_SKIPPED_LABELS = _labels(AUDIO_SKIPPED_REQUESTS_METRIC)
TRANSFER_LABELS = _labels(TRANSFER_SIZE_BYTES)
SPEECH_STREAM_ABORTED_LABELS = _labels(SPEECH_STREAM_ABORTED)
REALTIME_VAD_LABELS = _labels(REALTIME_VAD_ACTIVE_SESSIONS)
REALTIME_VAD_ERROR_LABELS = _labels(REALTIME_VAD_ERRORS)
DUPLEX_SESSION_LABELS = _labels(DUPLEX_SESSIONS)
DUPLEX_APPEND_LABELS = _labels(DUPLEX_APPEND_REQUESTS)
DUPLEX_CONTROL_LABELS = _labels(DUPLEX_CONTROL_QUEUE_WAIT_S)
DUPLEX_KV_REBUILD_LABELS = _labels(DUPLEX_KV_REBUILDS)

# `+Inf` is implicit. Byte bounds are ints, as upstream writes them.
SECONDS_BUCKETS = tuple(_ROWS[E2E_REQUEST_LATENCY_S][4])
SECONDS_FAST_BUCKETS = tuple(_ROWS[STAGE_IN_QUEUE_S][4])
RTF_BUCKETS = tuple(_ROWS[AUDIO_RTF_METRIC][4])
BYTES_BUCKETS = tuple(int(b) for b in _ROWS[TRANSFER_SIZE_BYTES][4])
# =================================================================================================
# END catalog constants
# =================================================================================================

# Every family name above, in catalog order (derived, so it survives a regenerated block).
ALL_METRIC_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys(  # once each: an alias (PEAK_MEMORY_MB_METRIC) names the same family
        value
        for name, value in list(globals().items())
        if name.isupper() and isinstance(value, str) and value.startswith(METRIC_PREFIX) and value != METRIC_PREFIX
    )
)

# ---- Bench-side stems and snapshot keys (§3.8; plain names, not Prometheus families) ----
AUDIO_TTFP = "audio_ttfp"
AUDIO_DURATION = "audio_duration"
AUDIO_RTF = "audio_rtf"
AUDIO_FRAMES = "audio_frames"
AUDIO_UNDERRUN = "audio_underrun"
AUDIO_CONTINUITY_OK = "audio_continuity_ok"
AUDIO_SKIPPED_REQUESTS = "audio_skipped_requests"
MEAN_AUDIO_TTFP_MS = f"mean_{AUDIO_TTFP}_ms"
MEDIAN_AUDIO_TTFP_MS = f"median_{AUDIO_TTFP}_ms"
STD_AUDIO_TTFP_MS = f"std_{AUDIO_TTFP}_ms"
PERCENTILES_AUDIO_TTFP_MS = f"percentiles_{AUDIO_TTFP}_ms"
TOTAL_AUDIO_DURATION_S = f"total_{AUDIO_DURATION}_s"
TOTAL_AUDIO_FRAMES = f"total_{AUDIO_FRAMES}"
AUDIO_THROUGHPUT = "audio_throughput"
MEAN_AUDIO_RTF = f"mean_{AUDIO_RTF}"
MEDIAN_AUDIO_RTF = f"median_{AUDIO_RTF}"
STD_AUDIO_RTF = f"std_{AUDIO_RTF}"
PERCENTILES_AUDIO_RTF = f"percentiles_{AUDIO_RTF}"
MEAN_AUDIO_DURATION_S = f"mean_{AUDIO_DURATION}_s"
MEDIAN_AUDIO_DURATION_S = f"median_{AUDIO_DURATION}_s"
STD_AUDIO_DURATION_S = f"std_{AUDIO_DURATION}_s"
PERCENTILES_AUDIO_DURATION_S = f"percentiles_{AUDIO_DURATION}_s"
MEAN_AUDIO_UNDERRUN_S = f"mean_{AUDIO_UNDERRUN}_s"
MEDIAN_AUDIO_UNDERRUN_S = f"median_{AUDIO_UNDERRUN}_s"
STD_AUDIO_UNDERRUN_S = f"std_{AUDIO_UNDERRUN}_s"
PERCENTILES_AUDIO_UNDERRUN_S = f"percentiles_{AUDIO_UNDERRUN}_s"
AUDIO_CONTINUITY_OK_RATE = f"{AUDIO_CONTINUITY_OK}_rate"
IMAGE_COUNT = "image_count"
IMAGE_GENERATION = "image_generation"
IMAGE_GENERATION_TIME_MS = f"{IMAGE_GENERATION}_time_ms"
IMAGE_PIXELS = "image_pixels"
TOTAL_IMAGES = "total_images"
IMAGE_THROUGHPUT = "image_throughput"
AVERAGE_PIXELS_PER_IMAGE = "average_pixels_per_image"
DENOISE_STEP_LATENCY = "denoise_step_latency"
DENOISE_STEP_LATENCY_MS = f"{DENOISE_STEP_LATENCY}_ms"
MEAN_DENOISE_STEP_LATENCY_MS = f"mean_{DENOISE_STEP_LATENCY}_ms"
MEAN_IMAGE_GENERATION_MS = f"mean_{IMAGE_GENERATION}_ms"
MEDIAN_IMAGE_GENERATION_MS = f"median_{IMAGE_GENERATION}_ms"
STD_IMAGE_GENERATION_MS = f"std_{IMAGE_GENERATION}_ms"
PERCENTILES_IMAGE_GENERATION_MS = f"percentiles_{IMAGE_GENERATION}_ms"
STAGE_GEN_TIME = "stage_gen_time"
STAGE_GEN_TIME_MS = f"{STAGE_GEN_TIME}_ms"
POSTPROCESS_TIME = "postprocess_time"
POSTPROCESS_TIME_MS = f"{POSTPROCESS_TIME}_ms"
# Stage snapshot (StageBenchmarkMetrics) list keys, upstream's names (vllm-omni main, August 2026).
TOTAL_OUTPUT = "total_output"
TTFTS = "ttfts"
TPOTS = "tpots"
ITLS = "itls"
VLLM_TTFTS = "vllm_ttfts"
VLLM_TPOTS = "vllm_tpots"
VLLM_ITLS = "vllm_itls"
AUDIO_TTFPS = "audio_ttfps"
AUDIO_DURATIONS = "audio_durations"
MISSING_AUDIO_DURATION_COUNT = "missing_audio_duration_count"
STAGE_GEN_TIMES_MS = f"{STAGE_GEN_TIME}s_ms"
POSTPROCESS_TIMES_MS = f"{POSTPROCESS_TIME}s_ms"
SERVING_TIME_TO_FIRST_OUTPUTS_MS = "serving_time_to_first_outputs_ms"
TIME_PER_OUTPUT_UNITS_MS = "time_per_output_units_ms"
OUTPUT_UNIT_COUNT = "output_unit_count"
SERVING_TIME_TO_FIRST_OUTPUT_MS = "serving_time_to_first_output_ms"
IMAGE_TIME_TO_FIRST_OUTPUT_MS = "image_time_to_first_output_ms"
TIME_PER_OUTPUT_UNIT_MS = "time_per_output_unit_ms"
INTER_OUTPUT_LATENCY_MS = "inter_output_latency_ms"
INTER_OUTPUT_LATENCIES_MS = "inter_output_latencies_ms"
VLLM_TTFT_MS = "vllm_ttft_ms"
VLLM_TPOT_MS = "vllm_tpot_ms"
VLLM_ITL_MS = "vllm_itl_ms"
VLLM_ITLS_MS = "vllm_itls_ms"
NUM_TOKENS_IN = "num_tokens_in"
NUM_TOKENS_OUT = "num_tokens_out"
AUDIO_SAMPLE_RATE = "audio_sample_rate"

# ---- Other constants (§2.2) ----
DEFAULT_AUDIO_SAMPLE_RATE = 24000
DEFAULT_AUDIO_CHANNELS = 1
DEFAULT_AUDIO_SAMPLE_WIDTH = 2  # bytes per sample (s16le)
AUDIO_SAMPLE_RATE_ENV = "VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE"
AUDIO_CHANNELS_ENV = "VLLM_OMNI_BENCH_AUDIO_CHANNELS"
AUDIO_CONTINUITY_THRESHOLD_ENV = "VLLM_OMNI_BENCH_AUDIO_CONTINUITY_THRESHOLD_S"
AUDIO_CONTINUITY_DEFAULT_THRESHOLD_S = 0.1  # inclusive: a worst underrun equal to it is continuous
DIFFUSION_SCHEDULER_WAITING_KEY = "scheduler_num_waiting_reqs"

# Key chain tried, in order, to resolve an audio sample rate (§4.4).
_SAMPLE_RATE_KEYS = ("output_sample_rate", "audio_sample_rate", "sample_rate", "sampling_rate", "sr")


def _real(func: str, name: str, value: object) -> float:
    """``value`` as a float; a clear TypeError for None, strings and other non-numbers."""
    if isinstance(value, (int, float)):
        return float(value)
    item = getattr(value, "item", None)  # numpy / tensor scalars
    if callable(item) and not isinstance(value, (str, bytes)):
        try:
            return float(item())
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{func}: {name} must be a real number, got {type(value).__name__}")


# ---- Formula helpers ----
def compute_audio_rtf(audio_generation_latency_s: float, audio_duration_s: float) -> float:
    """Real-time factor ``generation latency / audio duration`` (§4.2); SLO < 1.

    Returns 0.0 when the duration is not a positive number (<= 0, and also NaN: a NaN RTF would
    poison the histogram sum). Raises TypeError for non-numeric arguments.
    """
    gen = _real("compute_audio_rtf", "audio_generation_latency_s", audio_generation_latency_s)
    duration = _real("compute_audio_rtf", "audio_duration_s", audio_duration_s)
    if not duration > 0:
        return 0.0
    return gen / duration


def compute_audio_frames(
    pcm_nbytes: int,
    *,
    sample_width: int = DEFAULT_AUDIO_SAMPLE_WIDTH,
    channels: int = DEFAULT_AUDIO_CHANNELS,
) -> int:
    """Whole sample frames in ``pcm_nbytes`` of interleaved PCM: ``nbytes // (width * channels)``.

    0 when the byte count or the frame width is not positive (NaN counts as not positive).
    """
    if all(isinstance(v, int) for v in (pcm_nbytes, sample_width, channels)):
        frame_width = sample_width * channels  # exact integer path (no float rounding)
        return pcm_nbytes // frame_width if pcm_nbytes > 0 and frame_width > 0 else 0
    nbytes = _real("compute_audio_frames", "pcm_nbytes", pcm_nbytes)
    width = _real("compute_audio_frames", "sample_width", sample_width)
    chans = _real("compute_audio_frames", "channels", channels)
    frame_width = width * chans
    if not nbytes > 0 or not frame_width > 0 or math.isinf(nbytes):
        return 0
    return int(nbytes // frame_width)


def compute_denoise_step_latency(stage_gen_time: float, num_inference_steps: int) -> float:
    """Mean per-step latency ``stage_gen_time / steps``, in the unit of ``stage_gen_time``.

    0.0 when there are no steps (None, <= 0 or NaN).
    """
    if num_inference_steps is None:
        return 0.0
    steps = _real("compute_denoise_step_latency", "num_inference_steps", num_inference_steps)
    gen = _real("compute_denoise_step_latency", "stage_gen_time", stage_gen_time)
    if not steps > 0:
        return 0.0
    return gen / steps


# ---- Audio sample-rate resolution (§4.4) ----
def resolve_audio_sample_rate_or_none(
    source: Sequence[Mapping[str, object] | object | None] | Mapping[str, object] | object | None,
) -> int | None:
    """The first positive sample rate found on ``source``, or None.

    ``source`` is a Mapping (dict lookup), any other object (attribute lookup), or a sequence of
    those (list/tuple, not str/bytes) walked in order, the first item that yields a rate winning.
    Keys: output_sample_rate, audio_sample_rate, sample_rate, sampling_rate, sr; values coerce via
    ``utils.coerce_positive_int_scalar`` (tensor ``.item()``, list wrappers, numeric strings).
    """
    if isinstance(source, Sequence) and not isinstance(source, (str, bytes, bytearray)):
        for item in source:
            rate = _utils.resolve_int_by_sequential_keys(item, _SAMPLE_RATE_KEYS)
            if rate is not None:
                return rate
        return None
    return _utils.resolve_int_by_sequential_keys(source, _SAMPLE_RATE_KEYS)


def resolve_audio_sample_rate(
    source: Sequence[Mapping[str, object] | object | None] | Mapping[str, object] | object | None,
    default: int = DEFAULT_AUDIO_SAMPLE_RATE,
) -> int:
    """``resolve_audio_sample_rate_or_none(source)``, or ``default`` when nothing usable is found."""
    rate = resolve_audio_sample_rate_or_none(source)
    return rate if rate is not None else default


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        logger.warning("Invalid %s=%r; using default %d", name, raw, default)
        return default


def stream_pcm_format_from_env(
    *,
    default_sample_rate: int = DEFAULT_AUDIO_SAMPLE_RATE,
    default_channels: int = DEFAULT_AUDIO_CHANNELS,
) -> tuple[int, int]:
    """``(sample_rate, channels)`` of streamed raw PCM for the bench.

    Read from VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE / VLLM_OMNI_BENCH_AUDIO_CHANNELS; unset or empty
    means the default, an invalid integer logs a warning and uses the default. Each value is
    clamped to >= 1.
    """
    if not isinstance(default_sample_rate, int) or not isinstance(default_channels, int):
        raise TypeError("stream_pcm_format_from_env: defaults must be ints")
    sample_rate = _env_int(AUDIO_SAMPLE_RATE_ENV, default_sample_rate)
    channels = _env_int(AUDIO_CHANNELS_ENV, default_channels)
    return max(sample_rate, 1), max(channels, 1)
