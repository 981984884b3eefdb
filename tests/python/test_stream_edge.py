"""stream_edge (upstream-changes-2026-09 §1.2): first-event milestones per edge segment, first
value wins, stale segments and released requests record nothing, detached snapshots, deltas only
within one clock domain."""

import json
import math

import pytest

from modelmetrics.vllm_omni.metrics.stream_edge import (
    RequestStreamEdgeEvents,
    StreamEdgeEvent,
    StreamEdgeKey,
)

E = StreamEdgeEvent


def rec(recorder, event, ms, domain="orchestrator", meaningful=True, chunk_seq=None):
    return recorder.record(event, elapsed_ms=ms, clock_domain=domain, meaningful=meaningful,
                           chunk_seq=chunk_seq)


def test_first_meaningful_value_of_each_milestone_wins():
    events = RequestStreamEdgeEvents()
    key = StreamEdgeKey(0, 1)
    edge = events.start_segment(key)
    assert not rec(edge, E.PRODUCER_EMIT, 1.0, meaningful=False)  # a heartbeat: ignored
    assert rec(edge, E.PRODUCER_EMIT, 10.0, chunk_seq=3)
    assert not rec(edge, E.PRODUCER_EMIT, 11.0, chunk_seq=4)
    assert rec(edge, E.SEND_COMPLETE, 12.5)
    assert rec(edge, E.CONSUMER_OUTPUT, 30.0)
    snap = events.snapshot()
    assert list(snap) == ["0->1:0"]
    record = snap["0->1:0"]
    assert (record["from_stage"], record["to_stage"], record["segment_index"]) == (0, 1, 0)
    assert record["first_chunk_seq"] == 3
    assert record["producer_first_nonempty_emit_ms"] == 10.0
    assert record["edge_first_send_complete_ms"] == 12.5
    assert record["consumer_first_accept_ms"] is None
    assert record["clock_domains"] == {"producer_first_nonempty_emit": "orchestrator",
                                       "edge_first_send_complete": "orchestrator",
                                       "consumer_first_nonempty_output": "orchestrator"}
    assert events.elapsed_between(key, E.PRODUCER_EMIT, E.CONSUMER_OUTPUT) == 20.0
    assert events.elapsed_between(key, E.PRODUCER_EMIT, E.CONSUMER_ACCEPT) is None
    json.dumps(snap)  # plain data


def test_snapshots_are_detached_and_empty_edges_absent():
    events = RequestStreamEdgeEvents()
    events.start_segment(StreamEdgeKey(1, 2))  # opened, nothing recorded
    assert events.snapshot() == {}
    edge = events.start_segment(StreamEdgeKey(0, 1))
    rec(edge, E.PRODUCER_EMIT, 5.0)
    first = events.snapshot()
    first["0->1:0"]["clock_domains"]["x"] = "y"
    rec(edge, E.CONSUMER_ACCEPT, 6.0)
    second = events.snapshot()
    assert "x" not in second["0->1:0"]["clock_domains"]
    assert first["0->1:0"]["consumer_first_accept_ms"] is None
    assert second["0->1:0"]["consumer_first_accept_ms"] == 6.0


def test_a_new_segment_fences_the_old_one_and_segments_cannot_go_back():
    events = RequestStreamEdgeEvents()
    old = events.start_segment(StreamEdgeKey(0, 1, 0))
    rec(old, E.PRODUCER_EMIT, 1.0)
    new = events.start_segment(StreamEdgeKey(0, 1, 1))
    assert not rec(old, E.SEND_COMPLETE, 2.0)  # stale recorder
    assert rec(new, E.PRODUCER_EMIT, 3.0)
    assert set(events.snapshot()) == {"0->1:0", "0->1:1"}  # what the old one recorded stays
    with pytest.raises(ValueError, match="retired"):
        events.start_segment(StreamEdgeKey(0, 1, 0))
    events.start_segment(StreamEdgeKey(0, 1, 1))  # restarting the current index is allowed
    other_edge = events.start_segment(StreamEdgeKey(1, 2))
    assert rec(other_edge, E.PRODUCER_EMIT, 4.0)  # edges are independent


def test_deltas_across_clock_domains_or_backwards_are_unset_zero_is_kept():
    events = RequestStreamEdgeEvents()
    key = StreamEdgeKey(0, 1)
    edge = events.start_segment(key)
    rec(edge, E.PRODUCER_EMIT, 10.0, domain="stage-0")
    rec(edge, E.SEND_COMPLETE, 12.0, domain="stage-1")
    rec(edge, E.CONSUMER_ACCEPT, 10.0, domain="stage-0")
    rec(edge, E.CONSUMER_OUTPUT, 9.0, domain="stage-0")
    assert events.elapsed_between(key, E.PRODUCER_EMIT, E.SEND_COMPLETE) is None
    assert events.elapsed_between(key, E.PRODUCER_EMIT, E.CONSUMER_ACCEPT) == 0.0
    assert events.elapsed_between(key, E.PRODUCER_EMIT, E.CONSUMER_OUTPUT) is None
    assert events.elapsed_between(StreamEdgeKey(2, 3), E.PRODUCER_EMIT, E.CONSUMER_OUTPUT) is None


@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan])
def test_bad_values_raise_and_create_no_state(bad):
    events = RequestStreamEdgeEvents()
    edge = events.start_segment(StreamEdgeKey(0, 1))
    with pytest.raises(ValueError, match="finite"):
        rec(edge, E.PRODUCER_EMIT, bad)
    with pytest.raises(ValueError, match="clock domain"):
        rec(edge, E.PRODUCER_EMIT, 1.0, domain="  ")
    with pytest.raises(ValueError, match="Chunk sequence"):
        rec(edge, E.PRODUCER_EMIT, 1.0, chunk_seq=-1)
    with pytest.raises(ValueError, match="Unknown"):
        rec(edge, "producer_first_nonempty_emit_typo", 1.0)
    assert events.snapshot() == {}


@pytest.mark.parametrize("args", [(1, 1), (-1, 2), (0, 1, -1)])
def test_keys_are_validated(args):
    with pytest.raises(ValueError, match="distinct non-negative"):
        StreamEdgeKey(*args)


def test_close_releases_state_and_fences_every_recorder():
    events = RequestStreamEdgeEvents()
    edge = events.start_segment(StreamEdgeKey(0, 1))
    rec(edge, E.PRODUCER_EMIT, 1.0)
    before = events.snapshot()
    events.close()
    events.close()  # idempotent
    assert not rec(edge, E.SEND_COMPLETE, 2.0)
    assert events.snapshot() == {}
    assert before["0->1:0"]["producer_first_nonempty_emit_ms"] == 1.0
    with pytest.raises(RuntimeError, match="released"):
        events.start_segment(StreamEdgeKey(0, 1))
