"""The log-oriented metrics path of vLLM-Omni: per-request stage/transfer/E2E records, the
``OrchestratorAggregator`` and its summary tables, and the cross-stage transfer emit hook.

Drop-in for upstream ``vllm_omni.metrics.stats`` (vllm-project/vllm-omni, N @ 226b43d9).
Behaviour follows docs/pipeline-behaviour.md §4.13 (transfer TX/RX and
emit), §4.17 (diffusion accumulation), §5 (records, finalize, ``build_and_log_summary``, snapshot
merge) and docs/python.md (``stats.py``).

As upstream, the accumulators (stage events, transfer edges, diffusion buckets) fill whether or not
``log_stats`` is on; ``log_stats`` only gates ``build_and_log_summary`` (``{}`` and no logging when
off). The transfer emitter is duck-typed (``OmniTransferMetrics`` or a stand-in) and receives one
observation per physical hop, ms converted to seconds.

Thread-safety: upstream drives an aggregator from one orchestrator thread. The mutating methods
and the summary still take one re-entrant lock, so concurrent use from a second thread cannot
corrupt the records; callers that touch the public dict/list attributes directly do so unlocked.

Section numbers (§n) cite docs/pipeline-behaviour.md.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from .utils import _build_field_defs, _build_row, _format_table, count_audio_chunk_frames

logger = logging.getLogger(__name__)


# ---- Records (§5.1) ----
@dataclass
class StageStats:
    total_token: int = 0
    total_gen_time_ms: float = 0.0

    @property
    def avg_tokens_per_s(self) -> float:
        return (self.total_token * 1000.0 / self.total_gen_time_ms) if self.total_gen_time_ms > 0 else 0.0


@dataclass
class StageRequestStats:
    batch_id: int
    batch_size: int
    num_tokens_in: int
    num_tokens_out: int
    stage_gen_time_ms: float
    rx_transfer_bytes: int
    rx_decode_time_ms: float
    rx_in_flight_time_ms: float
    stage_stats: StageStats
    stage_id: int | None = None
    replica_id: int | None = None
    final_output_type: str | None = None
    finish_reason: str | None = None
    request_id: str | None = None
    postprocess_time_ms: float = 0.0
    diffusion_metrics: dict[str, float] | None = None
    audio_generated_frames: int = 0
    audio_sample_rate: int = 0
    audio_duration_s: float = 0.0
    image_pixels: int = 0
    num_inference_steps: int = 0
    denoise_step_latency_ms: float = 0.0
    pipeline_timings: dict[str, float] | None = None
    output_unit_type: str | None = None
    output_unit_count: int = 0
    serving_time_to_first_output_ms: float = 0.0
    image_time_to_first_output_ms: float = 0.0
    time_per_output_unit_ms: float = 0.0
    inter_output_latency_ms: float = 0.0
    inter_output_latencies_ms: list[float] | None = None
    vllm_ttft_ms: float = 0.0
    vllm_tpot_ms: float = 0.0
    vllm_itl_ms: float = 0.0
    vllm_itls_ms: list[float] | None = None

    @property
    def rx_mbps(self) -> float:
        if not self.rx_transfer_bytes or self.rx_transfer_bytes <= 0:
            return 0.0
        return (float(self.rx_transfer_bytes) * 8.0) / (max(float(self.rx_decode_time_ms), 1e-6) * 1000.0)

    @property
    def tokens_per_s(self) -> float:
        return (self.num_tokens_out * 1000.0 / self.stage_gen_time_ms) if self.stage_gen_time_ms > 0 else 0.0


@dataclass
class TransferEdgeStats:
    from_stage: int
    to_stage: int
    request_id: str
    size_bytes: int
    tx_time_ms: float
    used_shm: bool = False
    rx_decode_time_ms: float = 0.0
    in_flight_time_ms: float = 0.0

    @property
    def total_time_ms(self) -> float:
        return float(self.tx_time_ms) + float(self.rx_decode_time_ms) + float(self.in_flight_time_ms)


@dataclass
class RequestE2EStats:
    request_id: str
    e2e_total_ms: float
    e2e_total_tokens: int
    transfers_total_time_ms: float
    transfers_total_bytes: int

    @property
    def e2e_tpt(self) -> float:
        return (self.e2e_total_ms / self.e2e_total_tokens) if self.e2e_total_tokens > 0 else 0.0


# ---- Table configuration (§5.1) ----
# Fields shown under another name and unit: original -> (display name, transform).
FIELD_TRANSFORMS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "rx_transfer_bytes": ("rx_transfer_kbytes", lambda v: v / 1024.0),
    "size_bytes": ("size_kbytes", lambda v: v / 1024.0),
    "transfers_total_bytes": ("transfers_total_kbytes", lambda v: v / 1024.0),
}
STAGE_EXCLUDE = {
    "stage_stats",
    "stage_id",
    "request_id",
    "rx_transfer_bytes",
    "rx_decode_time_ms",
    "rx_in_flight_time_ms",
    "final_output_type",
    "finish_reason",
    "pipeline_timings",
}
TRANSFER_EXCLUDE = {"from_stage", "to_stage", "request_id", "used_shm"}
E2E_EXCLUDE = {"request_id"}
OVERALL_FIELDS: list[str] | None = None  # None: the summary's insertion order
STAGE_FIELDS = _build_field_defs(StageRequestStats, STAGE_EXCLUDE, FIELD_TRANSFORMS)
TRANSFER_FIELDS = _build_field_defs(TransferEdgeStats, TRANSFER_EXCLUDE, FIELD_TRANSFORMS)
E2E_FIELDS = _build_field_defs(RequestE2EStats, E2E_EXCLUDE, FIELD_TRANSFORMS)

_STAGE_FIELD_NAMES = frozenset(f.name for f in fields(StageRequestStats))
# Engine-reported diffusion timings in ms and the seconds keys they accumulate into (§4.17).
_DIFFUSION_MS_TO_S = {
    "preprocess_time_ms": "preprocess_time_s",
    "diffusion_engine_exec_time_ms": "diffusion_engine_exec_time_s",
    "postprocess_time_ms": "postprocess_time_s",
    "vae_decode_time_ms": "vae_decode_time_s",
    "forward_time_ms": "forward_time_s",
    "scheduler_queue_wait_ms": "scheduler_queue_wait_s",
    "kv_recv_time_ms": "kv_recv_time_s",
}
_ZERO_VALUES = (0, 0.0, None, "")  # upstream's "not reported" test for table rows


def _is_zero(value: Any) -> bool:
    try:
        return value in _ZERO_VALUES
    except Exception:  # values with odd __eq__ (arrays): treat as reported
        return False


def _num(value: Any, default: float = 0.0) -> float:
    """A finite float, or ``default`` for None / non-numbers / NaN (the records are best effort)."""
    if value is None or isinstance(value, (str, bytes)):
        return default
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return out if math.isfinite(out) else default


def _add(a: Any, b: Any) -> Any:
    """``a + b`` keeping ints exact; None and non-numbers count as 0."""
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
        return a + b
    if a is None and isinstance(b, int) and not isinstance(b, bool):
        return b
    return _num(a) + _num(b)


def _nonzero_sorted_fields(rows: list[dict[str, Any]], skip: set[str]) -> list[str]:
    names: set[str] = set()
    for row in rows:
        names.update(k for k in row if k not in skip)
    return [name for name in sorted(names) if any(not _is_zero(row.get(name)) for row in rows)]


class OrchestratorAggregator:
    """Per-run aggregator of stage, transfer and E2E records for the orchestrator (§5)."""

    def __init__(
        self,
        num_stages: int,
        log_stats: bool,
        wall_start_ts: float,
        final_stage_id_for_e2e: dict[str, int] | int,
        *,
        transfer_emitter: Any | None = None,
        replica_resolver: Callable[[int, str], int | None] | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self.num_stages = max(int(num_stages), 0)
        self.log_stats = bool(log_stats)
        self.final_stage_id_for_e2e = final_stage_id_for_e2e
        self.transfer_emitter = transfer_emitter
        self.replica_resolver = replica_resolver
        # Duplex turns set {"req", "response", "turn", "reason"}: the [OmniTiming] identity.
        self.timing_identity: dict[str, Any] | None = None
        # Drops serving_time_to_first_output_ms from the stage table.
        self.omit_serving_time_to_first_output = False
        self.stage_events: dict[str, list[StageRequestStats]] = {}
        # Key (from_stage, to_stage, request_id); insertion order is the [OmniTiming] order.
        self.transfer_events: dict[tuple[int, int, str], TransferEdgeStats] = {}
        self.e2e_events: list[RequestE2EStats] = []
        # (stage_id, request_id) -> replica id seen on that stage's output (§4.13).
        self._replica_cache: dict[tuple[int, str], int] = {}
        self.init_run_state(wall_start_ts)

    # ---- Run state ----
    def init_run_state(self, wall_start_ts: float) -> None:
        """Reset the per-run aggregates and timing state (the records themselves are kept)."""
        with self._lock:
            n = self.num_stages
            self.stage_total_tokens = [0] * n
            self.e2e_total_ms = 0.0
            self.e2e_total_tokens = 0
            self.e2e_count = 0
            self.e2e_done: set[str] = set()
            self.wall_start_ts = _num(wall_start_ts)
            self.last_finish_ts = self.wall_start_ts
            self.stage_first_ts: list[float | None] = [None] * n
            self.stage_last_ts: list[float | None] = [None] * n
            # {request_id: {stage_id: accumulated gen ms}}
            self.accumulated_gen_time_ms: defaultdict[str, defaultdict[int, float]] = defaultdict(
                lambda: defaultdict(float)
            )
            # {request_id: {key: accumulated value}}, seconds keys for the engine's *_ms timings
            self.diffusion_metrics: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))

    def _stage_in_range(self, stage_id: Any) -> bool:
        return isinstance(stage_id, int) and 0 <= stage_id < self.num_stages

    # ---- Transfers (§4.13) ----
    def _get_or_create_transfer_event(self, from_stage: int, to_stage: int, request_id: str) -> TransferEdgeStats:
        key = (from_stage, to_stage, request_id)
        evt = self.transfer_events.get(key)
        if evt is None:
            evt = TransferEdgeStats(from_stage=from_stage, to_stage=to_stage, request_id=request_id,
                                    size_bytes=0, tx_time_ms=0.0)  # fmt: skip
            self.transfer_events[key] = evt
        return evt

    def _resolve_edge_replicas(self, from_stage: int, to_stage: int, request_id: str) -> tuple[int, int] | None:
        """(from_replica, to_replica) from the per-request cache, else the resolver; None if
        either side stays unknown (the emit is then skipped)."""

        def resolve(stage: int) -> int | None:
            cached = self._replica_cache.get((stage, request_id))
            if cached is not None:
                return cached
            if self.replica_resolver is None:
                return None
            try:
                replica = self.replica_resolver(stage, request_id)
            except Exception:
                logger.debug("replica resolver failed for stage %s req %s", stage, request_id, exc_info=True)
                return None
            return replica if isinstance(replica, int) and not isinstance(replica, bool) else None

        from_replica = resolve(from_stage)
        if from_replica is None:
            return None
        to_replica = resolve(to_stage)
        if to_replica is None:
            return None
        return from_replica, to_replica

    def _emit_transfer_tx(
        self, from_stage: int, to_stage: int, request_id: str, size_bytes: int, tx_time_ms: float
    ) -> None:
        """One TX hop: ``observe_size(bytes)`` and ``observe_tx_time(ms / 1000)``."""
        self._emit_hop(from_stage, to_stage, request_id, "TX",
                       (("observe_size", size_bytes), ("observe_tx_time", tx_time_ms / 1000.0)))

    def _emit_transfer_rx(
        self, from_stage: int, to_stage: int, request_id: str, rx_decode_time_ms: float, in_flight_time_ms: float
    ) -> None:
        """One RX hop: ``observe_rx_time(ms / 1000)`` and ``observe_in_flight_time(ms / 1000)``."""
        self._emit_hop(from_stage, to_stage, request_id, "RX",
                       (("observe_rx_time", rx_decode_time_ms / 1000.0),
                        ("observe_in_flight_time", in_flight_time_ms / 1000.0)))

    def _emit_hop(self, from_stage: int, to_stage: int, request_id: str, side: str, observations) -> None:
        """Calls each ``emitter.<method>(from_stage, from_replica, to_stage, to_replica, value)``;
        nothing without an emitter or when either replica is unresolved (§4.13)."""
        emitter = self.transfer_emitter
        if emitter is None:
            return
        replicas = self._resolve_edge_replicas(from_stage, to_stage, request_id)
        if replicas is None:
            return
        from_replica, to_replica = replicas
        try:
            for method, value in observations:
                getattr(emitter, method)(from_stage, from_replica, to_stage, to_replica, value)
        except Exception:  # metrics must never break the transfer path
            logger.debug("transfer %s emit failed for req %s", side, request_id, exc_info=True)

    def record_transfer_tx(
        self,
        from_stage: int,
        to_stage: int,
        request_id: Any,
        size_bytes: int,
        tx_time_ms: float,
        used_shm: bool,
    ) -> TransferEdgeStats | None:
        """Accumulate one sender-side hop into the edge and emit it; None on unusable input."""
        try:
            from_stage = int(from_stage)
            to_stage = int(to_stage)
            rid = str(request_id)
            size = int(size_bytes)
            tx_ms = float(tx_time_ms)
        except (TypeError, ValueError, OverflowError):
            return None
        with self._lock:
            evt = self._get_or_create_transfer_event(from_stage, to_stage, rid)
            evt.size_bytes += size
            evt.tx_time_ms += tx_ms
            evt.used_shm = evt.used_shm or bool(used_shm)
            self._emit_transfer_tx(from_stage, to_stage, rid, size, tx_ms)
            return evt

    def record_transfer_rx(self, stats: StageRequestStats) -> TransferEdgeStats | None:
        """Accumulate the receiver side of the edge into ``stats.stage_id`` and emit it.

        None when the stage has no upstream edge (stage_id None or <= 0) or the input is unusable.
        """
        try:
            stage_id = getattr(stats, "stage_id", None)
            if stage_id is None or int(stage_id) <= 0:
                return None
            to_stage = int(stage_id)
            from_stage = to_stage - 1
            rid = str(stats.request_id)
            rx_ms = float(stats.rx_decode_time_ms or 0.0)
            in_flight_ms = float(stats.rx_in_flight_time_ms or 0.0)
            rx_bytes = int(stats.rx_transfer_bytes or 0)
        except (TypeError, ValueError, OverflowError, AttributeError):
            return None
        with self._lock:
            replica = getattr(stats, "replica_id", None)
            if isinstance(replica, int) and not isinstance(replica, bool):
                self._replica_cache[(to_stage, rid)] = replica
            evt = self._get_or_create_transfer_event(from_stage, to_stage, rid)
            if evt.size_bytes == 0:  # the TX side did not know the size
                evt.size_bytes = rx_bytes
            evt.rx_decode_time_ms += rx_ms
            evt.in_flight_time_ms += in_flight_ms
            self._emit_transfer_rx(from_stage, to_stage, rid, rx_ms, in_flight_ms)
            return evt

    def on_forward(
        self,
        from_stage: int,
        to_stage: int,
        req_id: Any,
        size_bytes: int,
        tx_ms: float,
        used_shm: bool,
    ) -> None:
        """A forward to the next stage: its first-input time if unset, then the TX record."""
        with self._lock:
            if self._stage_in_range(to_stage) and self.stage_first_ts[to_stage] is None:
                self.stage_first_ts[to_stage] = time.time()
            self.record_transfer_tx(from_stage, to_stage, req_id, size_bytes, tx_ms, used_shm)

    # ---- Stage events ----
    def record_audio_generated_frames(self, output_to_yield: Any, stage_id: int, request_id: str) -> None:
        """Add the frames of a finished audio output to that stage's first event (as upstream)."""
        try:
            if getattr(output_to_yield, "final_output_type", None) != "audio":
                return
            mm = getattr(output_to_yield, "multimodal_output", None)
            audio = mm.get("audio") if isinstance(mm, Mapping) else None
            if audio is None:
                return
            chunks = audio if isinstance(audio, list) else [audio]
            if not chunks:
                return
            n_frames = sum(count_audio_chunk_frames(chunk) for chunk in chunks)
            with self._lock:
                for event in self.stage_events.get(str(request_id), []):
                    if event.stage_id == stage_id:
                        event.audio_generated_frames = int(event.audio_generated_frames or 0) + n_frames
                        return
            logger.warning(
                "Failed to record audio generated frames for request %s at stage %s: no stage event found",
                request_id,
                stage_id,
            )
        except Exception:
            logger.debug("Failed to record audio frames for request %s", request_id, exc_info=True)

    def process_stage_metrics(
        self,
        *,
        result: dict[str, Any],
        stage_type: str,
        stage_id: int,
        req_id: str,
        engine_outputs: Any,
        finished: bool,
        final_output_type: str | None,
        output_to_yield: Any | None,
        event_cursor: int = 0,
    ) -> None:
        """Record one stage result and attach client-facing metrics to ``output_to_yield``.

        Accumulates the stage's gen time and diffusion metrics; a finished result is recorded as
        a stage event. A finished output gets ``metrics`` = text token counts (text outputs) plus
        ``"stage_metrics"``: the per-stage snapshot of the events from ``event_cursor`` on (§5.4).
        An unfinished output gets ``{}``. Errors are logged, never raised.
        """
        try:
            with self._lock:
                metrics = result.get("metrics") if isinstance(result, Mapping) else getattr(result, "metrics", None)
                if metrics is not None:
                    gen_ms = _num(getattr(metrics, "stage_gen_time_ms", None) if not isinstance(metrics, Mapping)
                                  else metrics.get("stage_gen_time_ms"))  # fmt: skip
                    self.accumulated_gen_time_ms[str(req_id)][stage_id] += gen_ms
                    self.accumulate_diffusion_metrics(stage_type, req_id, engine_outputs)
                    if finished:
                        self.on_stage_metrics(stage_id, req_id, metrics, final_output_type)
                if output_to_yield is None:
                    return
                if not finished:
                    output_to_yield.metrics = {}
                    return
                self.record_audio_generated_frames(output_to_yield, stage_id, req_id)
                out: dict[str, Any] = {}
                latest = next(
                    (e for e in reversed(self.stage_events.get(str(req_id), [])) if e.stage_id == stage_id), None
                )
                if latest is not None and latest.final_output_type == "text":
                    out.update(
                        num_tokens_in=latest.num_tokens_in,
                        num_tokens_out=latest.num_tokens_out,
                        stage_id=latest.stage_id,
                        final_output_type=latest.final_output_type,
                    )
                snapshot = self._build_stage_metrics_snapshot(req_id, event_cursor=event_cursor)
                if snapshot:
                    out["stage_metrics"] = snapshot
                output_to_yield.metrics = out
        except Exception:
            logger.exception("Failed to process metrics for stage %s, req %s", stage_id, req_id)

    def stage_event_cursor(self, req_id: Any) -> int:
        """How many stage events the request has; a later snapshot from here covers only new ones."""
        with self._lock:
            return len(self.stage_events.get(str(req_id), []))

    def _as_stage_request_stats(
        self,
        stage_id: int,
        req_id: str,
        metrics: StageRequestStats | Mapping[str, Any],
        final_output_type: str | None = None,
    ) -> StageRequestStats:
        """The stage record for ``metrics`` (a StageRequestStats, or a mapping of its fields),
        stamped with stage, request and output type, with the request's diffusion bucket popped
        into ``diffusion_metrics`` and, for image outputs with steps, the denoise step latency."""
        if isinstance(metrics, Mapping):
            values = {k: v for k, v in metrics.items() if k in _STAGE_FIELD_NAMES}
            for name, default in (("batch_id", 0), ("batch_size", 0), ("num_tokens_in", 0), ("num_tokens_out", 0),
                                  ("stage_gen_time_ms", 0.0), ("rx_transfer_bytes", 0), ("rx_decode_time_ms", 0.0),
                                  ("rx_in_flight_time_ms", 0.0)):  # fmt: skip
                values.setdefault(name, default)
            values.setdefault("stage_stats", StageStats())
            stats = StageRequestStats(**values)
        elif isinstance(metrics, StageRequestStats) or hasattr(metrics, "stage_gen_time_ms"):
            stats = metrics  # type: ignore[assignment]
        else:
            raise TypeError(f"stage metrics must be StageRequestStats or a mapping, got {type(metrics).__name__}")
        stats.stage_id = stage_id
        stats.request_id = req_id
        if final_output_type is not None:
            stats.final_output_type = final_output_type
        rid = str(req_id)
        # An aggregator made with object.__new__ (upstream's tests build one so) has no buckets.
        buckets = getattr(self, "diffusion_metrics", None)
        if buckets is not None and rid in buckets:
            stats.diffusion_metrics = dict(buckets.pop(rid))
        dm = stats.diffusion_metrics if isinstance(stats.diffusion_metrics, Mapping) else {}
        steps = int(_num(getattr(stats, "num_inference_steps", 0))) or int(_num(dm.get("num_inference_steps")))
        is_image = getattr(stats, "output_unit_type", None) == "image" or (
            getattr(stats, "output_unit_type", None) is None and getattr(stats, "final_output_type", None) == "image"
        )
        if is_image and steps > 0:
            forward_s = dm.get("forward_time_s")
            total_ms = _num(forward_s) * 1000.0 if forward_s is not None else _num(stats.stage_gen_time_ms)
            if total_ms > 0:
                stats.denoise_step_latency_ms = total_ms / steps
        return stats

    def on_stage_metrics(
        self,
        stage_id: int,
        req_id: Any,
        metrics: StageRequestStats,
        final_output_type: str | None = None,
    ) -> None:
        """Record a finished stage output of a request, and the RX side of its incoming edge."""
        with self._lock:
            stats = self._as_stage_request_stats(stage_id, req_id, metrics, final_output_type)
            if self._stage_in_range(stats.stage_id):
                self.stage_total_tokens[stats.stage_id] += int(_num(stats.num_tokens_out))
                if stats.stage_id == 0:
                    self.stage_total_tokens[0] += int(_num(stats.num_tokens_in))
            self.stage_events.setdefault(str(req_id), []).append(stats)
            self.record_transfer_rx(stats)

    def record_stage_postprocess_time(self, stage_id: int, req_id: Any, postproc_time_ms: float) -> None:
        """Set the postprocess time on the request's first event of that stage (as upstream)."""
        with self._lock:
            for stats in self.stage_events.get(str(req_id), []):
                if stats.stage_id == stage_id:
                    stats.postprocess_time_ms = _num(postproc_time_ms)
                    return
        logger.warning(
            "Failed to record postprocess time for request %s at stage %s: no stage event found", req_id, stage_id
        )

    @contextmanager
    def stage_postprocess_timer(self, stage_id: int, req_id: Any):
        """Time the enclosed block and record it as the stage's postprocess time (ms)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record_stage_postprocess_time(stage_id, req_id, (time.perf_counter() - start) * 1000.0)

    def accumulate_diffusion_metrics(self, stage_type: str, req_id: Any, engine_outputs: Any) -> None:
        """Sum a diffusion output's engine metrics into the request's bucket (§4.17).

        ``engine_outputs[0].metrics`` (a dict, or the first element of a list); the ``*_ms``
        timings become ``*_s`` (÷1000), other numeric keys sum as given; None and non-numeric
        values are skipped. No-op unless ``stage_type == "diffusion"``.
        """
        if stage_type != "diffusion":
            return
        output = engine_outputs[0] if isinstance(engine_outputs, list) and engine_outputs else engine_outputs
        metrics = getattr(output, "metrics", None)
        if isinstance(metrics, list):
            metrics = metrics[0] if metrics else None
        if not isinstance(metrics, Mapping) or not metrics:
            return
        with self._lock:
            bucket = self.diffusion_metrics[str(req_id)]
            for key, raw in metrics.items():
                if raw is None or isinstance(raw, (str, bytes)):
                    continue
                try:
                    value = float(raw)
                except (TypeError, ValueError, OverflowError):
                    continue
                seconds_key = _DIFFUSION_MS_TO_S.get(key)
                if seconds_key is not None:
                    bucket[seconds_key] += value / 1000.0
                else:
                    bucket[key] += value

    # ---- Finalize (§5.2) ----
    def on_finalize_request(self, stage_id: int, req_id: Any, req_start_ts: float) -> None:
        """Once per request: its E2E record, stage/last-finish timestamps, replica cache cleared."""
        rid = str(req_id)
        with self._lock:
            if rid in self.e2e_done:
                return
            start = _num(req_start_ts, self.wall_start_ts)
            now = time.time()
            if self._stage_in_range(stage_id):
                prev = self.stage_last_ts[stage_id]
                self.stage_last_ts[stage_id] = now if prev is None else max(prev, now)
            self.last_finish_ts = max(self.last_finish_ts, now)
            e2e_ms = (now - start) * 1000.0
            tokens = 0
            for evt in self.stage_events.get(rid, []):
                if evt.stage_id == 0:
                    tokens += int(_num(evt.num_tokens_in))
                tokens += int(_num(evt.num_tokens_out))
            edges = [evt for evt in self.transfer_events.values() if evt.request_id == rid]
            self.e2e_total_ms += e2e_ms
            self.e2e_total_tokens += tokens
            self.e2e_count += 1
            self.e2e_done.add(rid)
            self.e2e_events.append(
                RequestE2EStats(
                    request_id=rid,
                    e2e_total_ms=e2e_ms,
                    e2e_total_tokens=tokens,
                    transfers_total_time_ms=float(sum(evt.total_time_ms for evt in edges)),
                    transfers_total_bytes=int(sum(evt.size_bytes for evt in edges)),
                )
            )
            for key in [key for key in self._replica_cache if key[1] == rid]:
                del self._replica_cache[key]

    # ---- Per-stage snapshot (§5.4) ----
    @staticmethod
    def _merge_stage_metric_event(current: dict[str, Any] | None, evt: StageRequestStats) -> dict[str, Any]:
        """Fold one stage event into a per-stage snapshot dict (a new dict when ``current`` is None).

        Summed: tokens, gen/postprocess ms, audio frames ("audio_frames") and duration, image
        pixels, output unit count. First positive kept: sample rate, serving/image time to first
        output, vLLM TTFT. Last kept: non-None finish reason, non-empty output/final type,
        positive denoise step latency. ITL lists concatenate with their means recomputed; TPOT is
        token-weighted (weight max(tokens_out - 1, 1) when tpot > 0). Keys starting with "_" are
        merge state, not snapshot values.
        """

        def get(name: str, default: Any = 0) -> Any:
            value = getattr(evt, name, default)
            return default if value is None else value

        tpot = _num(get("vllm_tpot_ms"))
        weight = float(max(int(_num(get("num_tokens_out"))) - 1, 1)) if tpot > 0 else 0.0
        if current is None:
            return {
                "stage_id": getattr(evt, "stage_id", None),
                "final_output_type": getattr(evt, "final_output_type", None),
                "output_unit_type": getattr(evt, "output_unit_type", None),
                "finish_reason": getattr(evt, "finish_reason", None),
                "num_tokens_in": get("num_tokens_in"),
                "num_tokens_out": get("num_tokens_out"),
                "stage_gen_time_ms": get("stage_gen_time_ms", 0.0),
                "postprocess_time_ms": get("postprocess_time_ms", 0.0),
                "audio_frames": get("audio_generated_frames"),
                "audio_sample_rate": get("audio_sample_rate"),
                "audio_duration_s": get("audio_duration_s", 0.0),
                "image_pixels": get("image_pixels"),
                "output_unit_count": get("output_unit_count"),
                "denoise_step_latency_ms": get("denoise_step_latency_ms", 0.0),
                "serving_time_to_first_output_ms": get("serving_time_to_first_output_ms", 0.0),
                "image_time_to_first_output_ms": get("image_time_to_first_output_ms", 0.0),
                "time_per_output_unit_ms": get("time_per_output_unit_ms", 0.0),
                "inter_output_latency_ms": get("inter_output_latency_ms", 0.0),
                "inter_output_latencies_ms": list(get("inter_output_latencies_ms", [])),
                "vllm_ttft_ms": get("vllm_ttft_ms", 0.0),
                "vllm_tpot_ms": tpot,
                "vllm_itl_ms": get("vllm_itl_ms", 0.0),
                "vllm_itls_ms": list(get("vllm_itls_ms", [])),
                "_tpot_weight": weight,
                "_tpot_weighted_sum": tpot * weight,
            }
        merged = current
        for key, attr in (
            ("num_tokens_in", "num_tokens_in"),
            ("num_tokens_out", "num_tokens_out"),
            ("stage_gen_time_ms", "stage_gen_time_ms"),
            ("postprocess_time_ms", "postprocess_time_ms"),
            ("audio_frames", "audio_generated_frames"),
            ("audio_duration_s", "audio_duration_s"),
            ("image_pixels", "image_pixels"),
            ("output_unit_count", "output_unit_count"),
        ):
            merged[key] = _add(merged.get(key), get(attr))
        for key in ("audio_sample_rate", "serving_time_to_first_output_ms", "image_time_to_first_output_ms",
                    "vllm_ttft_ms"):  # fmt: skip
            if not _num(merged.get(key)) > 0 and _num(get(key)) > 0:
                merged[key] = get(key)
        if getattr(evt, "finish_reason", None) is not None:
            merged["finish_reason"] = evt.finish_reason
        for key in ("output_unit_type", "final_output_type"):
            if getattr(evt, key, None):
                merged[key] = getattr(evt, key)
        if _num(get("denoise_step_latency_ms")) > 0:
            merged["denoise_step_latency_ms"] = get("denoise_step_latency_ms")
        for list_key, mean_key in (("inter_output_latencies_ms", "inter_output_latency_ms"),
                                   ("vllm_itls_ms", "vllm_itl_ms")):  # fmt: skip
            values = list(merged.get(list_key) or []) + list(get(list_key, []))
            merged[list_key] = values
            if values:
                merged[mean_key] = sum(float(v) for v in values) / len(values)
            elif not _num(merged.get(mean_key)) > 0:
                merged[mean_key] = get(mean_key, 0.0)
        merged["_tpot_weight"] = merged.get("_tpot_weight", 0.0) + weight
        merged["_tpot_weighted_sum"] = merged.get("_tpot_weighted_sum", 0.0) + tpot * weight
        total_weight = merged["_tpot_weight"]
        merged["vllm_tpot_ms"] = merged["_tpot_weighted_sum"] / total_weight if total_weight > 0 else 0.0
        count = int(_num(merged.get("output_unit_count")))
        gen = _num(merged.get("stage_gen_time_ms"))
        ttfo = _num(merged.get("serving_time_to_first_output_ms"))
        merged["time_per_output_unit_ms"] = max(gen - ttfo, 0.0) / (count - 1) if count > 1 else 0.0
        return merged

    def _build_stage_metrics_snapshot(self, req_id: Any, *, event_cursor: int = 0) -> dict[str, dict[str, Any]]:
        """``{str(stage_id): merged snapshot}`` over the request's events from ``event_cursor`` on."""
        try:
            start = max(int(event_cursor), 0)
        except (TypeError, ValueError):
            start = 0
        with self._lock:
            events = list(self.stage_events.get(str(req_id), [])[start:])
        merged: dict[Any, dict[str, Any]] = {}
        for evt in events:
            sid = evt.stage_id
            merged[sid] = self._merge_stage_metric_event(merged.get(sid), evt)
        ordered = sorted(merged, key=lambda sid: (sid is None, sid if isinstance(sid, int) else 0, str(sid)))
        return {str(sid): {k: v for k, v in merged[sid].items() if not k.startswith("_")} for sid in ordered}

    # ---- Summary (§5.3) ----
    def _identity(self) -> Mapping[str, Any] | None:
        return self.timing_identity if isinstance(self.timing_identity, Mapping) else None

    def _format_request_table_title(self, kind: str, rid: str) -> str:
        """``Kind [request_id=...]``, with a duplex turn's response, turn and reason when set."""
        identity = self._identity()
        if not identity:
            return f"{kind} [request_id={rid}]"
        parts = [f"request_id={identity.get('req') or rid}"]
        parts.extend(f"{key}={identity[key]}" for key in ("response", "turn", "reason")
                     if identity.get(key) is not None)  # fmt: skip
        return f"{kind} [{' '.join(parts)}]"

    def _timing_line(self, rid: str, e2e_evt: RequestE2EStats) -> str:
        """The one-line ``[OmniTiming]`` summary of a request (without the prefix)."""
        events = self.stage_events.get(rid, [])
        timings = events[-1].pipeline_timings if events else None
        timings = timings if isinstance(timings, Mapping) else {}
        preprocess_ms = timings.get("preprocess_ms")
        preprocess_ms = None if preprocess_ms is None else _num(preprocess_ms)
        identity = self._identity()
        parts = [f"req={(identity.get('req') if identity else None) or rid}"]
        if identity:
            parts.extend(f"{key}={identity[key]}" for key in ("response", "turn", "reason")
                         if identity.get(key) is not None)  # fmt: skip
        total_s = _num(e2e_evt.e2e_total_ms) / 1000.0
        # A duplex identity has no meaningful per-turn total unless preprocessing was measured.
        if not identity or preprocess_ms is not None:
            parts.append(f"total={total_s:.2f}s")
            if preprocess_ms is not None:
                parts.append(f"preprocess={preprocess_ms / 1000.0:.2f}s")
            parts.append(f"engine={total_s - (preprocess_ms or 0.0) / 1000.0:.2f}s")
        gen_by_stage: dict[Any, float] = {}
        for evt in events:
            gen_by_stage[evt.stage_id] = gen_by_stage.get(evt.stage_id, 0.0) + _num(evt.stage_gen_time_ms)
        stage_order = sorted(gen_by_stage, key=lambda s: (s is None, s if isinstance(s, int) else 0))
        parts.append("stages=[" + ",".join(f"{sid}:{gen_by_stage[sid] / 1000.0:.2f}s" for sid in stage_order) + "]")
        edges = [evt for evt in self.transfer_events.values() if evt.request_id == rid]
        parts.append("transfers=[" + ",".join(f"{e.from_stage}->{e.to_stage}={_num(e.tx_time_ms):.2f}ms"
                                              for e in edges) + "]")  # fmt: skip
        ar2diffusion_ms = timings.get("ar2diffusion_ms")
        if ar2diffusion_ms is not None:
            parts.append(f"ar2diffusion={_num(ar2diffusion_ms):.2f}ms")
        return " ".join(parts)

    def build_and_log_summary(self) -> dict[str, Any]:
        """Log the overall summary and per-request tables (§5.3) and return them as data.

        Returns ``{}`` and logs nothing when ``log_stats`` is off.
        """
        if not self.log_stats:
            return {}
        with self._lock:
            return self._build_and_log_summary_locked()

    def _build_and_log_summary_locked(self) -> dict[str, Any]:
        wall_ms = max(0.0, (self.last_finish_ts - self.wall_start_ts) * 1000.0)
        count = self.e2e_count
        if isinstance(self.final_stage_id_for_e2e, int):
            final_stage_id_map: Any = {"*": int(self.final_stage_id_for_e2e)}
        else:
            final_stage_id_map = self.final_stage_id_for_e2e

        overall: dict[str, Any] = {
            "e2e_requests": int(count),
            "e2e_wall_time_ms": float(wall_ms),
            "e2e_total_tokens": int(self.e2e_total_tokens),
            "e2e_avg_time_per_request_ms": float(wall_ms / count) if count > 0 else 0.0,
            "e2e_avg_tokens_per_s": float(self.e2e_total_tokens * 1000.0 / wall_ms) if wall_ms > 0 else 0.0,
        }
        preprocess = []
        for events in self.stage_events.values():
            for evt in events:  # the first event of each request that carries a preprocess time
                timings = evt.pipeline_timings
                if isinstance(timings, Mapping) and timings.get("preprocess_ms") is not None:
                    preprocess.append(_num(timings["preprocess_ms"]))
                    break
        if preprocess:
            overall["input_preprocess_time_ms"] = sum(preprocess) / len(preprocess)
        for i in range(self.num_stages):
            first, last = self.stage_first_ts[i], self.stage_last_ts[i]
            overall[f"e2e_stage_{i}_wall_time_ms"] = (last - first) * 1000.0 if first is not None and last is not None else 0.0
        overall_fields = [k for k in (OVERALL_FIELDS or list(overall)) if not _is_zero(overall.get(k))]
        if overall_fields:
            logger.info("\n%s", _format_table("Overall Summary", overall, overall_fields))

        stage_table: list[dict[str, Any]] = []
        trans_table: list[dict[str, Any]] = []
        e2e_table: list[dict[str, Any]] = []
        request_ids = sorted(set(self.stage_events) | {e.request_id for e in self.e2e_events})
        for rid in request_ids:
            # RequestE2EStats (single column) and the [OmniTiming] line.
            e2e_evt = next((e for e in self.e2e_events if e.request_id == rid), None)
            if e2e_evt is not None:
                e2e_data = _build_row(e2e_evt, E2E_FIELDS)
                e2e_table.append({"request_id": rid, **e2e_data})
                e2e_fields = sorted(k for k, v in e2e_data.items() if not _is_zero(v))
                if e2e_fields:
                    logger.info(
                        "\n%s", _format_table(self._format_request_table_title("RequestE2EStats", rid), e2e_data,
                                           value_fields=e2e_fields)
                    )
                logger.info("[OmniTiming] %s", self._timing_line(rid, e2e_evt))

            # StageRequestStats (columns = stage ids).
            stage_evts = sorted(self.stage_events.get(rid, []),
                                key=lambda e: e.stage_id if isinstance(e.stage_id, int) else -1)  # fmt: skip
            exclude = set(STAGE_EXCLUDE)
            if any(evt.diffusion_metrics for evt in stage_evts):
                exclude.add("postprocess_time_ms")  # already part of the diffusion breakdown
            if self.omit_serving_time_to_first_output:
                exclude.add("serving_time_to_first_output_ms")
            stage_fields = _build_field_defs(StageRequestStats, exclude, FIELD_TRANSFORMS)
            stage_rows = []
            for evt in stage_evts:
                row = {"stage_id": evt.stage_id, **_build_row(evt, stage_fields)}
                row.pop("diffusion_metrics", None)
                if isinstance(evt.diffusion_metrics, Mapping):
                    row.update(evt.diffusion_metrics)
                stage_rows.append(row)
            stage_table.append({"request_id": rid, "stages": stage_rows})
            if stage_rows:
                value_fields = _nonzero_sorted_fields(stage_rows, {"stage_id"})
                if value_fields:
                    logger.info(
                        "\n%s",
                        _format_table(self._format_request_table_title("StageRequestStats", rid), stage_rows,
                                      column_key="stage_id", value_fields=value_fields),  # fmt: skip
                    )

            # TransferEdgeStats (columns = edges).
            edges = sorted((e for e in self.transfer_events.values() if e.request_id == rid),
                           key=lambda e: (e.from_stage, e.to_stage))  # fmt: skip
            transfer_rows = [{"edge": f"{e.from_stage}->{e.to_stage}", **_build_row(e, TRANSFER_FIELDS)} for e in edges]
            trans_table.append({"request_id": rid, "transfers": transfer_rows})
            if transfer_rows:
                value_fields = _nonzero_sorted_fields(transfer_rows, {"edge"})
                if value_fields:
                    logger.info(
                        "\n%s",
                        _format_table(self._format_request_table_title("TransferEdgeStats", rid), transfer_rows,
                                      column_key="edge", value_fields=value_fields),  # fmt: skip
                    )

        return {
            "final_stage_id": final_stage_id_map,
            "overall_summary": overall,
            "stage_table": stage_table,
            "trans_table": trans_table,
            "e2e_table": e2e_table,
        }
