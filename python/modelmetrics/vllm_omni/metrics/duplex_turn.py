"""Drop-in for ``vllm_omni.metrics.duplex_turn``: the log tables of one assistant turn of a
native full-duplex session.

A duplex session keeps one long-lived stage-0 request, so a request's tables would cover the
whole conversation. Instead each turn (a ``response_id``) gets its own
:class:`~modelmetrics.vllm_omni.metrics.stats.OrchestratorAggregator`
(:func:`make_turn_aggregator`): stage outputs are added as segments
(:func:`accumulate_turn_stage_metrics`, or queued with :func:`queue_turn_stage_metrics` until the
turn exists), and :func:`finalize_duplex_turn_metrics` folds each stage's segments into one
record and logs the turn's tables once, titled with the request, response, turn and reason.

Behaviour follows upstream's module (pipeline-behaviour.md §6.2).
Only the metrics package is imported at run time; the request state it takes (upstream's
``ClientRequestState``) is duck-typed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

from .stats import OrchestratorAggregator, StageRequestStats, StageStats

__all__ = [
    "DuplexTurnMetrics",
    "PendingTurnStageMetric",
    "accumulate_turn_stage_metrics",
    "copy_session_transfer_tx",
    "finalize_duplex_turn_metrics",
    "finished_reason_for_cancel",
    "flush_pending_turn_metrics",
    "is_duplex_resource_request_id",
    "make_turn_aggregator",
    "queue_turn_stage_metrics",
    "snapshot_transfer_tx",
]

logger = logging.getLogger("vllm_omni.metrics.duplex_turn")

_DUPLEX_RESOURCE_PREFIX = "duplex-s."
_KNOWN_FINISHED_REASONS = frozenset({"stop", "barge_in", "cancel", "close", "abort", "error"})
# Why a turn was cancelled -> the finished reason its tables show.
_CANCEL_SOURCE_TO_FINISHED = {
    "barge_in": "barge_in",
    "session_close": "close",
    "disconnect": "close",
    "disconnect_grace_expired": "close",
    "timeout": "cancel",
    "new_response": "cancel",
    "output_audio_buffer_clear": "cancel",
    "input.cancel": "cancel",
    "response.cancel": "cancel",
    "client_cancelled": "cancel",
}
# Snapshot keys of OrchestratorAggregator._merge_stage_metric_event named otherwise on the record.
_MERGED_KEY_ALIASES = {"audio_frames": "audio_generated_frames"}


def is_duplex_resource_request_id(request_id: str | None) -> bool:
    """True for a scheduler resource id, ``duplex-s.<session>.i.<n>.e.<n>.r.<role>``."""
    if not request_id or not request_id.startswith(_DUPLEX_RESOURCE_PREFIX):
        return False
    parts = request_id.split(".")
    return len(parts) == 8 and parts[2] == "i" and parts[4] == "e" and parts[6] == "r"


def _normalize_finished_reason(reason: str | None) -> str:
    return reason if reason in _KNOWN_FINISHED_REASONS else "abort"


def finished_reason_for_cancel(reason: str) -> str:
    """The finished reason for a cancel source (a known finished reason is kept as is)."""
    if reason in _KNOWN_FINISHED_REASONS:
        return reason
    return _CANCEL_SOURCE_TO_FINISHED.get(reason, "cancel")


@dataclass(frozen=True)
class PendingTurnStageMetric:
    """A stage output that arrived before its turn existed."""

    stage_id: int
    metrics: StageRequestStats
    final_output_type: str | None
    stage_submit_ts: float | None


@dataclass
class DuplexTurnMetrics:
    """One assistant turn: its own aggregator, finalized once."""

    request_id: str
    response_id: str
    turn_id: int | None = None
    arrival_ts: float = 0.0
    aggregator: OrchestratorAggregator | None = None
    finalized: bool = False
    finished_reason: str | None = None
    # Session transfer totals when the turn began: (from, to, request) -> (tx ms, bytes).
    tx_baseline: dict[tuple[int, int, str], tuple[float, int]] = field(default_factory=dict)


def _copy_stage_request_stats(metrics: StageRequestStats, *, stage_id: int, request_id: str,
                              final_output_type: str | None) -> StageRequestStats:
    """A copy that shares no mutable part with the session's record."""
    stage_stats = metrics.stage_stats
    return replace(
        metrics,
        stage_id=stage_id,
        request_id=request_id,
        final_output_type=final_output_type or metrics.final_output_type,
        stage_stats=replace(stage_stats) if isinstance(stage_stats, StageStats) else StageStats(),
        inter_output_latencies_ms=list(metrics.inter_output_latencies_ms or []),
        vllm_itls_ms=list(metrics.vllm_itls_ms or []),
        pipeline_timings=dict(metrics.pipeline_timings) if metrics.pipeline_timings else None,
        diffusion_metrics=dict(metrics.diffusion_metrics or {}),
    )


def accumulate_turn_stage_metrics(turn: DuplexTurnMetrics, stage_id: int,
                                  metrics: StageRequestStats, *,
                                  final_output_type: str | None = None,
                                  stage_submit_ts: float | None = None) -> None:
    """Adds one stage segment to the turn (segments of a stage are folded at finalize)."""
    aggregator = turn.aggregator
    if aggregator is None or turn.finalized:
        return
    stats = _copy_stage_request_stats(metrics, stage_id=stage_id, request_id=turn.response_id,
                                      final_output_type=final_output_type)
    aggregator.on_stage_metrics(stage_id, turn.response_id, stats, final_output_type)
    now = time.time()
    if 0 <= stage_id < aggregator.num_stages:
        if aggregator.stage_first_ts[stage_id] is None:
            aggregator.stage_first_ts[stage_id] = stage_submit_ts if stage_submit_ts is not None \
                else now
        aggregator.stage_last_ts[stage_id] = max(aggregator.stage_last_ts[stage_id] or 0, now)


def queue_turn_stage_metrics(req_state: Any, stage_id: int, metrics: StageRequestStats | None, *,
                             final_output_type: str | None = None,
                             stage_submit_ts: float | None = None) -> None:
    """Adds a segment to the request's open turn, or keeps it until the turn exists."""
    if metrics is None:
        return
    turn = getattr(req_state, "duplex_turn", None)
    if turn is not None and not turn.finalized:
        accumulate_turn_stage_metrics(turn, stage_id, metrics, final_output_type=final_output_type,
                                      stage_submit_ts=stage_submit_ts)
        return
    copied = _copy_stage_request_stats(metrics, stage_id=stage_id, request_id="",
                                       final_output_type=final_output_type)
    pending = getattr(req_state, "duplex_turn_pending", None)
    if pending is None:
        pending = []
        req_state.duplex_turn_pending = pending
    pending.append(PendingTurnStageMetric(stage_id, copied, final_output_type, stage_submit_ts))
    if getattr(req_state, "duplex_turn_arrival_ts", None) is None:
        req_state.duplex_turn_arrival_ts = float(stage_submit_ts) if stage_submit_ts is not None \
            else time.time()


def flush_pending_turn_metrics(req_state: Any) -> None:
    """Replays the kept segments into the request's turn (dropped when there is none)."""
    pending = getattr(req_state, "duplex_turn_pending", None) or []
    req_state.duplex_turn_pending = []
    turn = getattr(req_state, "duplex_turn", None)
    if turn is None:
        return
    for item in pending:
        accumulate_turn_stage_metrics(turn, item.stage_id, item.metrics,
                                      final_output_type=item.final_output_type,
                                      stage_submit_ts=item.stage_submit_ts)


def snapshot_transfer_tx(aggregator: OrchestratorAggregator | None
                         ) -> dict[tuple[int, int, str], tuple[float, int]]:
    """The session's transfer totals now: the baseline a turn's transfers are counted from."""
    if aggregator is None:
        return {}
    return {key: (float(evt.tx_time_ms), int(evt.size_bytes))
            for key, evt in aggregator.transfer_events.items()}


def copy_session_transfer_tx(turn: DuplexTurnMetrics,
                             session_aggregator: OrchestratorAggregator | None) -> None:
    """Adds what the session sent since the turn's baseline to the turn's transfer records."""
    if session_aggregator is None or turn.aggregator is None:
        return
    for (from_stage, to_stage, rid), evt in list(session_aggregator.transfer_events.items()):
        if rid != turn.request_id:
            continue
        base_tx, base_size = turn.tx_baseline.get((from_stage, to_stage, rid), (0.0, 0))
        d_tx, d_size = float(evt.tx_time_ms) - base_tx, int(evt.size_bytes) - base_size
        if d_tx <= 0 and d_size <= 0:
            continue
        mine = turn.aggregator._get_or_create_transfer_event(from_stage, to_stage, turn.response_id)
        mine.tx_time_ms += max(d_tx, 0.0)
        mine.used_shm = mine.used_shm or evt.used_shm
        if mine.size_bytes == 0 and d_size > 0:
            mine.size_bytes = d_size


def _collapse_stage_events(aggregator: OrchestratorAggregator, request_id: str) -> None:
    """Folds each stage's segments into its first record (one record per stage, by stage id)."""
    events = aggregator.stage_events.get(request_id) or []
    if len(events) <= 1:
        return
    by_stage: dict[int, list[StageRequestStats]] = {}
    for evt in events:
        by_stage.setdefault(int(evt.stage_id) if evt.stage_id is not None else -1, []).append(evt)
    collapsed = []
    for stage, segments in sorted(by_stage.items()):
        merged = None
        for evt in segments:
            merged = OrchestratorAggregator._merge_stage_metric_event(merged, evt)
        base = segments[0]
        dropped = []
        for key, value in merged.items():
            if key.startswith("_") or key == "stage_id":
                continue
            attr = _MERGED_KEY_ALIASES.get(key, key)
            if hasattr(base, attr):
                setattr(base, attr, value)
            else:
                dropped.append(key)
        if dropped:
            logger.debug("duplex turn collapse dropped unmapped keys request_id=%s stage=%s keys=%s",
                         request_id, stage, dropped)
        collapsed.append(base)
    aggregator.stage_events[request_id] = collapsed


def _final_stage(aggregator: OrchestratorAggregator) -> int:
    if isinstance(aggregator.final_stage_id_for_e2e, int):
        return aggregator.final_stage_id_for_e2e
    return aggregator.num_stages - 1 if aggregator.num_stages > 0 else 0


def finalize_duplex_turn_metrics(turn: DuplexTurnMetrics, *, reason: str) -> bool:
    """Closes the turn once: its E2E record and, with stats on, its tables. False when it was
    already closed or has no aggregator; a failure to log is logged, not raised."""
    if turn.finalized:
        return False
    turn.finalized = True
    turn.finished_reason = _normalize_finished_reason(reason)
    aggregator = turn.aggregator
    if aggregator is None:
        return False
    try:
        _collapse_stage_events(aggregator, turn.response_id)
        if turn.response_id not in aggregator.e2e_done:
            aggregator.on_finalize_request(_final_stage(aggregator), turn.response_id,
                                           turn.arrival_ts or aggregator.wall_start_ts)
        if aggregator.log_stats:
            aggregator.timing_identity = {"req": turn.request_id, "response": turn.response_id,
                                          "turn": turn.turn_id, "reason": turn.finished_reason}
            aggregator.build_and_log_summary()
    except Exception:
        logger.exception("Failed to log duplex turn summary req=%s response=%s", turn.request_id,
                         turn.response_id)
    return True


def make_turn_aggregator(*, num_stages: int, log_stats: bool,
                         wall_start_ts: float) -> OrchestratorAggregator:
    """A turn's aggregator: E2E on the last stage. A turn's serving time to first output would
    count from the session's start, so its tables leave that column out."""
    stages = max(1, int(num_stages))
    aggregator = OrchestratorAggregator(stages, log_stats, wall_start_ts, max(0, int(num_stages) - 1))
    aggregator.omit_serving_time_to_first_output = True
    return aggregator
