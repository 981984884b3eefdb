"""duplex_turn (upstream-changes-2026-09 §1.2): one aggregator per assistant turn, segments
folded per stage at finalize, tables logged once with the turn's identity, reasons mapped."""

import logging
from types import SimpleNamespace

import pytest

from modelmetrics.vllm_omni.metrics import duplex_turn as dt
from modelmetrics.vllm_omni.metrics.stats import OrchestratorAggregator, StageRequestStats, StageStats
from modelmetrics.vllm_omni.metrics.stats import logger as stats_logger


def stage_stats(**overrides):
    values = dict(batch_id=1, batch_size=1, num_tokens_in=0, num_tokens_out=0,
                  stage_gen_time_ms=0.0, rx_transfer_bytes=0, rx_decode_time_ms=0.0,
                  rx_in_flight_time_ms=0.0, stage_stats=StageStats())
    values.update(overrides)
    return StageRequestStats(**values)


def turn(log_stats=True, stages=2, **kw):
    return dt.DuplexTurnMetrics(
        request_id="duplex-s.c2lk.i.0.e.0.r.stage0", response_id="resp-1", turn_id=4,
        arrival_ts=1.0, aggregator=dt.make_turn_aggregator(num_stages=stages, log_stats=log_stats,
                                                           wall_start_ts=1.0), **kw)


def test_resource_ids_and_reasons():
    assert dt.is_duplex_resource_request_id("duplex-s.c2lk.i.0.e.3.r.stage0")
    for other in ("chatcmpl-abc", "duplex-sid-e0-stage0", None, "duplex-s.a.i.0.e.0.x.stage0"):
        assert not dt.is_duplex_resource_request_id(other)
    assert dt.finished_reason_for_cancel("stop") == "stop"
    assert dt.finished_reason_for_cancel("barge_in") == "barge_in"
    assert dt.finished_reason_for_cancel("disconnect_grace_expired") == "close"
    assert dt.finished_reason_for_cancel("response.cancel") == "cancel"
    assert dt.finished_reason_for_cancel("something-new") == "cancel"


def test_segments_fold_per_stage_and_the_tables_log_once_with_identity(caplog):
    t = turn()
    dt.accumulate_turn_stage_metrics(t, 0, stage_stats(num_tokens_in=10, num_tokens_out=4,
                                                       stage_gen_time_ms=15.0, vllm_tpot_ms=10.0,
                                                       serving_time_to_first_output_ms=1.7e9))
    dt.accumulate_turn_stage_metrics(t, 0, stage_stats(num_tokens_in=8, num_tokens_out=6,
                                                       stage_gen_time_ms=20.0, vllm_tpot_ms=20.0))
    dt.accumulate_turn_stage_metrics(t, 1, stage_stats(num_tokens_out=1, stage_gen_time_ms=5.0),
                                     final_output_type="audio", stage_submit_ts=1.5)
    caplog.set_level(logging.INFO, logger=stats_logger.name)
    assert dt.finalize_duplex_turn_metrics(t, reason="stop") is True
    assert dt.finalize_duplex_turn_metrics(t, reason="stop") is False  # once
    events = t.aggregator.stage_events["resp-1"]
    assert [e.stage_id for e in events] == [0, 1]
    assert (events[0].num_tokens_in, events[0].num_tokens_out, events[0].stage_gen_time_ms) == (18, 10, 35.0)
    assert events[0].vllm_tpot_ms == pytest.approx((10 * 3 + 20 * 5) / 8)
    assert t.aggregator.stage_first_ts[1] == 1.5
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "StageRequestStats [request_id=duplex-s.c2lk.i.0.e.0.r.stage0 response=resp-1 turn=4 reason=stop]" in text
    assert "serving_time_to_first_output_ms" not in text
    timing = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("[OmniTiming]"))
    assert timing.startswith("[OmniTiming] req=duplex-s.c2lk.i.0.e.0.r.stage0 response=resp-1 turn=4")
    assert "total=" not in timing and "engine=" not in timing
    dt.accumulate_turn_stage_metrics(t, 0, stage_stats(num_tokens_out=99))  # closed: ignored
    assert len(t.aggregator.stage_events["resp-1"]) == 2


def test_unknown_reason_is_abort_stats_off_logs_nothing_and_failures_are_contained(caplog):
    caplog.set_level(logging.INFO)
    quiet = turn(log_stats=False)
    assert dt.finalize_duplex_turn_metrics(quiet, reason="oops") is True
    assert quiet.finished_reason == "abort"
    assert not [r for r in caplog.records if "[OmniTiming]" in r.getMessage()]
    assert dt.finalize_duplex_turn_metrics(dt.DuplexTurnMetrics("r", "x"), reason="stop") is False
    broken = turn()
    broken.aggregator.build_and_log_summary = lambda: 1 / 0
    assert dt.finalize_duplex_turn_metrics(broken, reason="stop") is True
    assert any("Failed to log duplex turn summary" in r.getMessage() for r in caplog.records)


def test_pending_segments_wait_for_their_turn():
    state = SimpleNamespace(duplex_turn=None, duplex_turn_pending=[], duplex_turn_arrival_ts=None)
    dt.queue_turn_stage_metrics(state, 0, None)
    dt.queue_turn_stage_metrics(state, 0, stage_stats(num_tokens_out=2), stage_submit_ts=7.0)
    assert len(state.duplex_turn_pending) == 1 and state.duplex_turn_arrival_ts == 7.0
    state.duplex_turn = turn()
    dt.flush_pending_turn_metrics(state)
    assert state.duplex_turn_pending == []
    (evt,) = state.duplex_turn.aggregator.stage_events["resp-1"]
    assert evt.request_id == "resp-1" and evt.num_tokens_out == 2
    dt.queue_turn_stage_metrics(state, 1, stage_stats(num_tokens_out=1))  # the open turn takes it
    assert len(state.duplex_turn.aggregator.stage_events["resp-1"]) == 2


def test_session_transfers_since_the_baseline_go_to_the_turn():
    session = OrchestratorAggregator(2, False, 1.0, 1)
    rid = "duplex-s.c2lk.i.0.e.0.r.stage0"
    session.on_forward(0, 1, rid, 512, 3.0, False)
    t = turn(tx_baseline=dt.snapshot_transfer_tx(session))
    session.on_forward(0, 1, rid, 1024, 7.5, True)
    dt.copy_session_transfer_tx(t, session)
    evt = t.aggregator.transfer_events[(0, 1, "resp-1")]
    assert evt.tx_time_ms == pytest.approx(7.5) and evt.used_shm
    assert dt.snapshot_transfer_tx(None) == {}
