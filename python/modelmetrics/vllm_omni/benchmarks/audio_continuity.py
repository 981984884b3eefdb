"""Streaming-audio continuity: the listener's player simulation behind ``audio_underrun_s`` and
``audio_continuity_ok_total``.

Drop-in for upstream ``vllm_omni.benchmarks.audio_continuity`` (vllm-project/vllm-omni, PR #3618;
``roll_up_continuity_stats`` from the newer revision). Implements the canonical main-line math of
docs/pipeline-behaviour.md §4.1: the playback clock starts at the first
chunk's arrival with no pre-roll; before chunk i (i > 0) is counted, the bytes the player wanted by
then minus the bytes received so far is the deficit; any deficit > 0 bytes is an underrun event;
the worst deficit (never the sum) in seconds is ``max_underrun_s``; ``is_continuous`` is
``max_underrun_s <= threshold_s`` (inclusive). The C++ port's one-sample-frame floor is not used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ContinuityStats", "compute_continuity_stats", "roll_up_continuity_stats"]


@dataclass(frozen=True)
class ContinuityStats:
    max_underrun_s: float
    underrun_event_count: int
    is_continuous: bool


_CONTINUOUS = ContinuityStats(max_underrun_s=0.0, underrun_event_count=0, is_continuous=True)


def _number(name: str, value: object) -> float:
    # bool is an int in Python, as upstream's arithmetic would treat it.
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"compute_continuity_stats: {name} must be a number, got {type(value).__name__}")


def _numbers(name: str, values: object) -> list[float]:
    if values is None:
        return []
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
        raise TypeError(f"compute_continuity_stats: {name} must be a sequence of numbers, got {type(values).__name__}")
    return [_number(name, v) for v in values]


def compute_continuity_stats(
    chunk_arrival_times_s: Sequence[float],
    chunk_bytes: Sequence[int],
    sample_rate: int,
    sample_width: int = 2,
    channels: int = 1,
    threshold_s: float = 0.1,
) -> ContinuityStats:
    """Simulate a player fed PCM chunks as they arrived.

    ``chunk_arrival_times_s[i]`` is when non-empty chunk i's last byte arrived (any origin, assumed
    non-decreasing) and ``chunk_bytes[i]`` its raw PCM size (headers excluded). Empty, None or
    unequal-length timelines, and a format with no positive bytes per second (including NaN), give
    ``(0.0, 0, True)``. Non-numeric inputs raise TypeError.
    """
    arrivals = _numbers("chunk_arrival_times_s", chunk_arrival_times_s)
    sizes = _numbers("chunk_bytes", chunk_bytes)
    bps = _number("sample_rate", sample_rate) * _number("sample_width", sample_width) * _number("channels", channels)
    threshold = _number("threshold_s", threshold_s)
    n = len(arrivals)
    if n == 0 or n != len(sizes) or not bps > 0:
        return _CONTINUOUS
    t0 = arrivals[0]
    received = 0.0
    worst = 0.0
    events = 0
    for i in range(n):
        if i > 0:
            deficit = (arrivals[i] - t0) * bps - received
            if deficit > 0:  # NaN never counts
                worst = max(worst, deficit / bps)
                events += 1
        received += sizes[i]  # chunk i plays only after its own arrival check
    return ContinuityStats(max_underrun_s=worst, underrun_event_count=events, is_continuous=worst <= threshold)


def roll_up_continuity_stats(stats: list[ContinuityStats]) -> ContinuityStats | None:
    """The run's worst response: max of ``max_underrun_s``, summed events, all continuous.

    None when there is nothing to roll up (no response carried audio). Items need the three
    ContinuityStats attributes (TypeError otherwise).
    """
    if stats is None:
        return None
    items = list(stats)
    if not items:
        return None
    try:
        return ContinuityStats(
            max_underrun_s=max(float(s.max_underrun_s) for s in items),
            underrun_event_count=sum(int(s.underrun_event_count) for s in items),
            is_continuous=all(bool(s.is_continuous) for s in items),
        )
    except AttributeError as exc:
        raise TypeError(f"roll_up_continuity_stats: items must be ContinuityStats ({exc})") from None
