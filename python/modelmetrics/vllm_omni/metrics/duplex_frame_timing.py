"""Drop-in for ``vllm_omni.metrics.duplex_frame_timing``: opt-in per-frame timing lines for the
full-duplex audio path (append ticks, audio emits, connector hand-offs, stage-1 decodes).

Off by default. ``VLLM_OMNI_DUPLEX_FRAME_TIMING=1`` (or true/yes/on) turns it on and
``VLLM_OMNI_DUPLEX_FRAME_TIMING_LOG_EVERY=N`` logs one line in N of each event; both are read
once, at import (workers inherit the environment). A line is::

    DUPLEX_FRAME_TIMING event=append t_ns=<monotonic ns> session=s1 epoch=2 bytes=7680 ...

with ``na`` for a missing value, ``true``/``false`` for booleans and three decimals for floats.
Off, every hook returns at once and reads no clock; on or off, no hook changes a payload, the
control flow or the order of anything. The producer stamps each chunk (:func:`stamp_chunk_put`
sets ``meta.put_t_ns``), so the consumer logs the chunk's age even across processes.

Behaviour follows upstream's newest module (pipeline-behaviour.md §6.2);
``record_chunk_put``/``pop_chunk_put_age_ms`` and the 4,096-entry stamp table are gone upstream
and here.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import OrderedDict
from typing import Any

__all__ = [
    "DEFAULT_TICK_PERIOD_MS",
    "DuplexTickPacer",
    "duplex_frame_timing_enabled",
    "frame_timing_clock",
    "frame_timing_synchronize",
    "get_tick_pacer",
    "log_append_event",
    "log_audio_emit_event",
    "log_connector_get_event",
    "log_connector_put_event",
    "log_frame_timing",
    "log_stage1_decode_event",
    "stamp_chunk_put",
]

logger = logging.getLogger("vllm_omni.metrics.duplex_frame_timing")

_TRUTHY_FLAGS = ("1", "true", "yes", "on")
DEFAULT_TICK_PERIOD_MS = 80.0
_MAX_TRACKED_STREAMS = 1024  # pacers kept, least recently used dropped first


def _parse_flag(raw: str | None) -> bool:
    return (raw or "").lower() in _TRUTHY_FLAGS


def _parse_log_every(raw: str | None) -> int:
    try:
        return max(1, int(raw or 1))
    except ValueError:
        return 1


_DUPLEX_FRAME_TIMING_ENABLED = _parse_flag(os.environ.get("VLLM_OMNI_DUPLEX_FRAME_TIMING"))
_LOG_EVERY = _parse_log_every(os.environ.get("VLLM_OMNI_DUPLEX_FRAME_TIMING_LOG_EVERY"))
# Calls per event name, for the one-in-N throttle (unlocked: a race skews one sample at most).
_event_counts: dict[str, int] = {}


def duplex_frame_timing_enabled() -> bool:
    return _DUPLEX_FRAME_TIMING_ENABLED


def _format_field(value: Any) -> str:
    if value is None:
        return "na"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def log_frame_timing(event: str, /, **fields: Any) -> None:
    """One line for calls 1, 1+N, 1+2N, ... of `event` (fields in the order given)."""
    if not _DUPLEX_FRAME_TIMING_ENABLED:
        return
    count = _event_counts.get(event, 0)
    _event_counts[event] = count + 1
    if count % _LOG_EVERY != 0:
        return
    body = " ".join(f"{key}={_format_field(value)}" for key, value in fields.items())
    logger.info("DUPLEX_FRAME_TIMING event=%s t_ns=%d %s", event, time.monotonic_ns(), body)


def frame_timing_clock() -> float:
    """perf_counter() when timing is on; 0.0 (no clock read) when off."""
    return time.perf_counter() if _DUPLEX_FRAME_TIMING_ENABLED else 0.0


def frame_timing_synchronize() -> None:
    """Waits for the device when timing is on, so a decode span includes GPU execution."""
    if not _DUPLEX_FRAME_TIMING_ENABLED:
        return
    from vllm_omni.platforms import current_omni_platform

    current_omni_platform.synchronize()


class DuplexTickPacer:
    """Jitter and drift of a stream that should tick every `period_s` seconds.

    observe() returns (jitter_s, drift_s): jitter is the gap since the last call minus the
    expected ticks' duration (None on the first call); drift is the time since the anchor minus
    every tick's duration, re-anchored (and reported as 0.0) after a pause beyond `reanchor_s`.
    """

    def __init__(self, period_s: float, *, reanchor_s: float = 2.0) -> None:
        self.period_s = float(period_s)
        self.reanchor_s = float(reanchor_s)
        self._last_ns: int | None = None
        self._anchor_ns: int | None = None
        self._ticks = 0

    def observe(self, now_ns: int | None = None, *, ticks: int = 1) -> tuple[float | None, float]:
        now = time.monotonic_ns() if now_ns is None else now_ns
        ticks = max(1, ticks)
        jitter = None
        if self._last_ns is not None:
            jitter = (now - self._last_ns) / 1e9 - self.period_s * ticks
        if self._anchor_ns is None:
            self._anchor_ns, self._ticks, drift = now, 0, 0.0
        else:
            drift = (now - self._anchor_ns) / 1e9 - (self._ticks + ticks) * self.period_s
            if abs(drift) > self.reanchor_s:
                self._anchor_ns, self._ticks, drift = now, 0, 0.0
            else:
                self._ticks += ticks
        self._last_ns = now
        return jitter, drift


_tick_pacers: OrderedDict[tuple[str, str], DuplexTickPacer] = OrderedDict()


def get_tick_pacer(scope: str, stream_id: str, period_s: float) -> DuplexTickPacer:
    """The pacer of (scope, stream); a new one when the period changed. Keeps the most recent
    _MAX_TRACKED_STREAMS streams."""
    key = (scope, str(stream_id))
    pacer = _tick_pacers.get(key)
    if pacer is None or pacer.period_s != float(period_s):
        pacer = DuplexTickPacer(period_s)
        _tick_pacers[key] = pacer
    _tick_pacers.move_to_end(key)
    while len(_tick_pacers) > _MAX_TRACKED_STREAMS:
        _tick_pacers.popitem(last=False)
    return pacer


def stamp_chunk_put(meta: Any) -> None:
    """Stamps a chunk's metadata with its put time (monotonic ns) when timing is on."""
    if _DUPLEX_FRAME_TIMING_ENABLED:
        meta.put_t_ns = time.monotonic_ns()


def _tick_period_ms(value: float | None) -> float:
    period = float(value) if value else DEFAULT_TICK_PERIOD_MS
    return period if math.isfinite(period) and period > 0 else DEFAULT_TICK_PERIOD_MS


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def log_append_event(session_id: str, epoch: int | None, byte_count: int,
                     tick_period_ms: float | None) -> None:
    """An appended input-audio chunk (none for an empty one)."""
    if not _DUPLEX_FRAME_TIMING_ENABLED or byte_count <= 0:
        return
    period_ms = _tick_period_ms(tick_period_ms)
    jitter, drift = get_tick_pacer("append", session_id, period_ms / 1e3).observe()
    log_frame_timing("append", session=session_id, epoch=epoch, bytes=byte_count,
                     tick_period_ms=period_ms, jitter_ms=_ms(jitter), drift_ms=_ms(drift))


def log_audio_emit_event(session_id: str, epoch: int | None, request_id: str | None,
                         audio_result: Any, tick_period_ms: float | None,
                         sent_ms: int | None = None) -> None:
    """An emitted audio result with a positive ``audio_duration_ms`` (others are not audio)."""
    if not _DUPLEX_FRAME_TIMING_ENABLED or not isinstance(audio_result, dict):
        return
    duration_ms = audio_result.get("audio_duration_ms")
    if isinstance(duration_ms, bool) or not isinstance(duration_ms, (int, float)) or \
            not math.isfinite(duration_ms) or duration_ms <= 0:
        return
    period_ms = _tick_period_ms(tick_period_ms)
    frames = max(1, round(duration_ms / period_ms))
    jitter, drift = get_tick_pacer("emit", session_id, period_ms / 1e3).observe(ticks=frames)
    log_frame_timing("audio_emit", session=session_id, epoch=epoch, request_id=request_id,
                     frames=frames, audio_duration_ms=float(duration_ms), sent_ms=sent_ms,
                     jitter_ms=_ms(jitter), drift_ms=_ms(drift))


def log_connector_put_event(key: str, stage_id: int, ok: object, size: object,
                            started_at: float) -> None:
    """A chunk handed to the connector (`started_at` from frame_timing_clock())."""
    if not _DUPLEX_FRAME_TIMING_ENABLED:
        return
    nbytes = int(size) if isinstance(size, (int, float)) else 0
    log_frame_timing("connector_put", key=key, stage=stage_id, ok=bool(ok), bytes=nbytes,
                     wrap_ms=(time.perf_counter() - started_at) * 1e3)


def log_connector_get_event(key: str, stage_id: int, size: int, started_at: float,
                            put_t_ns: int | None = None) -> None:
    """A chunk taken from the connector; its age from the producer's put stamp, if any."""
    if not _DUPLEX_FRAME_TIMING_ENABLED:
        return
    age_ms = None if put_t_ns is None else (time.monotonic_ns() - put_t_ns) / 1e6
    log_frame_timing("connector_get", key=key, stage=stage_id, bytes=int(size),
                     wrap_ms=(time.perf_counter() - started_at) * 1e3, chunk_age_ms=age_ms)


def log_stage1_decode_event(request_id: str | None, frames: int, started_at: float,
                            num_req: int) -> None:
    """A stage-1 decode of `frames` new frames for one of `num_req` batched requests."""
    if not _DUPLEX_FRAME_TIMING_ENABLED:
        return
    log_frame_timing("stage1_decode", request_id=request_id if request_id is not None else "unknown",
                     frames=int(frames), num_req=int(num_req),
                     decode_ms=(time.perf_counter() - started_at) * 1e3)
