"""Drop-in for ``vllm_omni.metrics.stream_edge``: first-event timings on the streaming edges
between pipeline stages (upstream RFC #6472), kept per request.

A request owns one :class:`RequestStreamEdgeEvents`. For each edge ``from_stage -> to_stage`` it
opens segments (:meth:`RequestStreamEdgeEvents.start_segment`); a segment's recorder keeps the
*first* time each of four milestones was reached (:class:`StreamEdgeEvent`), with the clock
domain the elapsed time was measured in. Snapshots are plain dicts keyed ``"from->to:segment"``;
the entrypoint attaches them to a request's output metrics under ``"stream_edge_metrics"``.

Behaviour follows upstream's module (pipeline-behaviour.md §6.2):
a recorder of a superseded segment or of a released request records nothing; an event that is
not meaningful (a heartbeat, a retry, an empty payload) is ignored before any validation; the
first value of each milestone wins. Pure Python and standard library: the entrypoint event loop
serialises access, as upstream's does.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import TypedDict

__all__ = [
    "RequestStreamEdgeEvents",
    "StreamEdgeEvent",
    "StreamEdgeKey",
    "StreamEdgeRecorder",
    "StreamEdgeSnapshot",
]


class StreamEdgeSnapshot(TypedDict):
    from_stage: int
    to_stage: int
    segment_index: int
    first_chunk_seq: int | None
    clock_domains: dict[str, str]
    producer_first_nonempty_emit_ms: float | None
    edge_first_send_complete_ms: float | None
    consumer_first_accept_ms: float | None
    consumer_first_nonempty_output_ms: float | None


class StreamEdgeEvent(str, enum.Enum):
    """The four milestones of an edge, in the order a chunk reaches them."""

    PRODUCER_EMIT = "producer_first_nonempty_emit"
    SEND_COMPLETE = "edge_first_send_complete"
    CONSUMER_ACCEPT = "consumer_first_accept"
    CONSUMER_OUTPUT = "consumer_first_nonempty_output"


@dataclass(frozen=True)
class StreamEdgeKey:
    """One segment of one edge: hashable, validated at construction."""

    from_stage: int
    to_stage: int
    segment_index: int = 0

    def __post_init__(self) -> None:
        if min(self.from_stage, self.to_stage, self.segment_index) < 0 or \
                self.from_stage == self.to_stage:
            raise ValueError("A stream edge requires distinct non-negative stages and a "
                             "non-negative segment")

    @property
    def _edge(self) -> tuple[int, int]:
        return (self.from_stage, self.to_stage)

    @property
    def _label(self) -> str:
        return f"{self.from_stage}->{self.to_stage}:{self.segment_index}"


@dataclass(frozen=True)
class _Observation:
    elapsed_ms: float
    clock_domain: str


@dataclass
class _FirstEvents:
    observations: dict[StreamEdgeEvent, _Observation] = field(default_factory=dict)
    first_chunk_seq: int | None = None


@dataclass(frozen=True)
class StreamEdgeRecorder:
    """Records milestones of one segment; returned by ``start_segment``."""

    _owner: RequestStreamEdgeEvents
    key: StreamEdgeKey

    def record(self, event: StreamEdgeEvent, *, elapsed_ms: float, clock_domain: str,
               meaningful: bool, chunk_seq: int | None = None) -> bool:
        """True when this call set the milestone; False when it was ignored (not meaningful, a
        released request, a superseded segment) or the milestone was already set. Bad values
        raise ValueError and record nothing."""
        owner = self._owner
        if not meaningful or owner._closed or owner._segments.get(self.key._edge) != self.key:
            return False
        if not isinstance(event, StreamEdgeEvent):
            raise ValueError("Unknown stream-edge event")
        if not math.isfinite(elapsed_ms) or elapsed_ms < 0:
            raise ValueError("Event elapsed time must be finite and non-negative")
        if not clock_domain or not clock_domain.strip():
            raise ValueError("Event clock domain must be declared")
        if chunk_seq is not None and chunk_seq < 0:
            raise ValueError("Chunk sequence must be non-negative")
        state = owner._events.setdefault(self.key, _FirstEvents())
        if event in state.observations:
            return False
        state.observations[event] = _Observation(float(elapsed_ms), clock_domain)
        if event is StreamEdgeEvent.PRODUCER_EMIT:
            state.first_chunk_seq = chunk_seq
        return True


class RequestStreamEdgeEvents:
    """The stream-edge milestones of one request (never shared between requests)."""

    def __init__(self) -> None:
        self._events: dict[StreamEdgeKey, _FirstEvents] = {}
        self._segments: dict[tuple[int, int], StreamEdgeKey] = {}
        self._closed = False

    def start_segment(self, key: StreamEdgeKey) -> StreamEdgeRecorder:
        """Makes `key` the edge's current segment (recorders of earlier ones go stale; what they
        recorded stays). Restarting the current index is allowed, going back is not."""
        if self._closed:
            raise RuntimeError("Request stream-edge metrics have been released")
        current = self._segments.get(key._edge)
        if current is not None and key.segment_index < current.segment_index:
            raise ValueError("Cannot reopen a retired stream-edge segment")
        self._segments[key._edge] = key
        return StreamEdgeRecorder(self, key)

    def snapshot(self) -> dict[str, StreamEdgeSnapshot]:
        """A detached copy: one entry per segment with at least one milestone."""
        out: dict[str, StreamEdgeSnapshot] = {}
        for key, state in self._events.items():
            if not state.observations:
                continue
            def at(event: StreamEdgeEvent) -> float | None:
                seen = state.observations.get(event)
                return None if seen is None else seen.elapsed_ms
            out[key._label] = StreamEdgeSnapshot(
                from_stage=key.from_stage,
                to_stage=key.to_stage,
                segment_index=key.segment_index,
                first_chunk_seq=state.first_chunk_seq,
                clock_domains={e.value: o.clock_domain for e, o in state.observations.items()},
                producer_first_nonempty_emit_ms=at(StreamEdgeEvent.PRODUCER_EMIT),
                edge_first_send_complete_ms=at(StreamEdgeEvent.SEND_COMPLETE),
                consumer_first_accept_ms=at(StreamEdgeEvent.CONSUMER_ACCEPT),
                consumer_first_nonempty_output_ms=at(StreamEdgeEvent.CONSUMER_OUTPUT),
            )
        return out

    def elapsed_between(self, key: StreamEdgeKey, start: StreamEdgeEvent,
                        end: StreamEdgeEvent) -> float | None:
        """end - start in ms when both are recorded in one clock domain and end is not earlier;
        otherwise None (times from different clocks are never subtracted)."""
        state = self._events.get(key)
        if state is None:
            return None
        first, last = state.observations.get(start), state.observations.get(end)
        if first is None or last is None or first.clock_domain != last.clock_domain:
            return None
        delta = last.elapsed_ms - first.elapsed_ms
        return delta if delta >= 0 else None

    def close(self) -> None:
        """Releases the request's state (idempotent); recorders then record nothing."""
        self._closed = True
        self._events.clear()
        self._segments.clear()
