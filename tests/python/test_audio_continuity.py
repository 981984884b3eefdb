"""Ports tests/benchmarks/test_audio_continuity.py (upstream vllm-omni, incl. the newer roll-up
cases) and the worked table of pipeline-metrics-behaviour.md §4.1 to modelmetrics."""

from __future__ import annotations

import dataclasses
import math

import pytest

from modelmetrics.vllm_omni.benchmarks.audio_continuity import (
    ContinuityStats,
    compute_continuity_stats,
    roll_up_continuity_stats,
)

SR = 24000  # s16le mono: 48000 bytes per second
CLEAN = ContinuityStats(0.0, 0, True)


def _triple(stats: ContinuityStats) -> tuple[float, int, bool]:
    return (stats.max_underrun_s, stats.underrun_event_count, stats.is_continuous)


# ---- upstream cases ----
def test_empty_timeline_is_continuous() -> None:
    assert compute_continuity_stats([], [], SR) == CLEAN


def test_single_chunk_has_no_underrun() -> None:
    assert compute_continuity_stats([5.0], [4800], SR) == CLEAN


def test_chunks_faster_than_realtime_never_underrun() -> None:
    # 100 ms of audio every 50 ms.
    arrivals = [i * 0.05 for i in range(20)]
    assert compute_continuity_stats(arrivals, [4800] * 20, SR) == CLEAN


def test_gap_is_one_event_of_its_length() -> None:
    stats = compute_continuity_stats([0.0, 0.5], [4800, 4800], SR)
    assert stats.max_underrun_s == pytest.approx(0.4)
    assert stats.underrun_event_count == 1
    assert stats.is_continuous is False


def test_max_not_sum() -> None:
    stats = compute_continuity_stats([0.0, 0.3, 0.45], [4800] * 3, SR)
    assert stats.max_underrun_s == pytest.approx(0.25)  # the sum would be 0.45
    assert stats.underrun_event_count == 2
    assert stats.is_continuous is False


def test_threshold_is_inclusive() -> None:
    stats = compute_continuity_stats([0.0, 0.2], [4800, 4800], SR, threshold_s=0.1)
    assert stats.max_underrun_s == 0.1  # exact: 4800 / 48000
    assert stats.underrun_event_count == 1
    assert stats.is_continuous is True


def test_mismatched_lengths_give_zero_stats() -> None:
    assert compute_continuity_stats([0.0, 1.0, 2.0], [4800, 4800], SR) == CLEAN
    assert compute_continuity_stats([0.0], [4800, 4800], SR) == CLEAN


def test_threshold_changes_verdict_not_max() -> None:
    strict = compute_continuity_stats([0.0, 0.3], [4800, 4800], SR, threshold_s=0.1)
    loose = compute_continuity_stats([0.0, 0.3], [4800, 4800], SR, threshold_s=0.5)
    assert strict.max_underrun_s == loose.max_underrun_s == pytest.approx(0.2)
    assert strict.is_continuous is False
    assert loose.is_continuous is True


def test_roll_up_empty_is_none() -> None:
    assert roll_up_continuity_stats([]) is None
    assert roll_up_continuity_stats(None) is None  # type: ignore[arg-type]


def test_roll_up_takes_worst_response_and_sums_events() -> None:
    results = [CLEAN] * 9 + [ContinuityStats(3.0, 2, False)]
    assert roll_up_continuity_stats(results) == ContinuityStats(3.0, 2, False)


def test_roll_up_max_and_event_sum() -> None:
    rolled = roll_up_continuity_stats([ContinuityStats(0.2, 3, False), ContinuityStats(0.5, 4, False)])
    assert rolled is not None
    assert rolled.max_underrun_s == 0.5
    assert rolled.underrun_event_count == 7
    assert rolled.is_continuous is False


def test_roll_up_all_continuous_stays_continuous() -> None:
    rolled = roll_up_continuity_stats([ContinuityStats(0.05, 1, True), ContinuityStats(0.1, 1, True)])
    assert rolled == ContinuityStats(0.1, 2, True)


# ---- §4.1 worked values ----
@pytest.mark.parametrize(
    ("arrivals", "sizes", "kwargs", "expected"),
    [
        ([0.0, 0.5], [4800, 4800], {}, (0.4, 1, False)),
        ([0, 0.3, 0.45], [4800] * 3, {}, (0.25, 2, False)),
        ([0, 0.2], [4800] * 2, {"threshold_s": 0.1}, (0.1, 1, True)),
        ([0.5, 1.0, 1.5], [24000] * 3, {}, (0.0, 0, True)),
        ([0, 2.0], [24000] * 2, {}, (1.5, 1, False)),
        ([0, 1.0], [200, 200], {"sample_rate": 100, "channels": 2}, (0.5, 1, False)),
        ([0, 0.3], [4800] * 2, {"threshold_s": 0.5}, (0.2, 1, True)),
    ],
)
def test_worked_table(arrivals, sizes, kwargs, expected) -> None:
    sample_rate = kwargs.pop("sample_rate", SR)
    stats = compute_continuity_stats(arrivals, sizes, sample_rate, **kwargs)
    max_s, events, continuous = _triple(stats)
    assert max_s == pytest.approx(expected[0])
    assert events == expected[1]
    assert continuous is expected[2]


def test_cumulative_deficit_counts_later_short_intervals() -> None:
    # Once behind, every later chunk that arrives "late" relative to the clock is an event too.
    stats = compute_continuity_stats([0.0, 1.0, 1.1, 1.2], [4800] * 4, SR)
    assert stats.underrun_event_count == 3
    assert stats.max_underrun_s == pytest.approx(0.9)


def test_positional_signature_matches_upstream() -> None:
    # (arrivals, bytes, sample_rate, sample_width, channels, threshold_s)
    stats = compute_continuity_stats([0.0, 1.0], [200, 200], 100, 2, 2, 0.6)
    assert _triple(stats) == (pytest.approx(0.5), 1, True)


def test_stats_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CLEAN.max_underrun_s = 1.0  # type: ignore[misc]


# ---- bad input ----
def test_none_timelines_are_empty() -> None:
    assert compute_continuity_stats(None, None, SR) == CLEAN  # type: ignore[arg-type]


@pytest.mark.parametrize("sample_rate", [0, -24000, float("nan")])
def test_format_without_bytes_per_second_is_zero_stats(sample_rate) -> None:
    assert compute_continuity_stats([0.0, 5.0], [10, 10], sample_rate) == CLEAN


def test_nan_arrival_never_counts_an_event() -> None:
    stats = compute_continuity_stats([0.0, math.nan], [4800, 4800], SR)
    assert stats == CLEAN


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (([0.0, 1.0], [10, 10], None), {}),
        (([0.0, 1.0], [10, 10], "24000"), {}),
        (([0.0, "1.0"], [10, 10], SR), {}),
        (("01", [10, 10], SR), {}),
        (([0.0, 1.0], [10, 10], SR), {"threshold_s": None}),
    ],
)
def test_wrong_types_raise_type_error(args, kwargs) -> None:
    with pytest.raises(TypeError, match="compute_continuity_stats"):
        compute_continuity_stats(*args, **kwargs)


def test_roll_up_rejects_foreign_items() -> None:
    with pytest.raises(TypeError, match="roll_up_continuity_stats"):
        roll_up_continuity_stats([object()])  # type: ignore[list-item]
