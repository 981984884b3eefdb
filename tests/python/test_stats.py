"""Ports tests/metrics/test_stats.py (upstream vllm-omni @ 226b43d9) and the OrchestratorAggregator
cases of tests/metrics/test_transfer.py (with a recording fake emitter, seconds-based API) to
modelmetrics, plus the §4.13 / §4.17 / §5 behaviours they rely on."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from modelmetrics.vllm_omni.metrics import stats as stats_mod
from modelmetrics.vllm_omni.metrics.stats import (
    OrchestratorAggregator,
    RequestE2EStats,
    StageRequestStats,
    StageStats,
    TransferEdgeStats,
)


def _stage(**overrides) -> StageRequestStats:
    values = dict(batch_id=1, batch_size=1, num_tokens_in=0, num_tokens_out=0, stage_gen_time_ms=0.0,
                  rx_transfer_bytes=0, rx_decode_time_ms=0.0, rx_in_flight_time_ms=0.0, stage_stats=StageStats())
    values.update(overrides)  # fmt: skip
    return StageRequestStats(**values)


def _entry(table: list[dict], request_id: str) -> dict:
    for entry in table:
        if entry.get("request_id") == request_id:
            return entry
    raise AssertionError(f"request_id={request_id} not found")


class LogCapture:
    """Replaces ``stats.logger.info`` (what upstream's mocker.patch does)."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple] = []
        monkeypatch.setattr(stats_mod.logger, "info", lambda *args, **kwargs: self.calls.append(args))

    def timing(self) -> list[str]:
        return [c[1] for c in self.calls if c and c[0] == "[OmniTiming] %s"]

    def tables(self) -> str:
        return "\n".join(c[1] for c in self.calls if c and c[0] == "\n%s")


class StubTransferEmitter:
    """Records every observe_* call so the hook routing can be asserted without a registry."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def observe_size(self, fs, fr, ts, tr, n):
        self.calls.append(("observe_size", fs, fr, ts, tr, n))

    def observe_tx_time(self, fs, fr, ts, tr, t):
        self.calls.append(("observe_tx_time", fs, fr, ts, tr, t))

    def observe_rx_time(self, fs, fr, ts, tr, t):
        self.calls.append(("observe_rx_time", fs, fr, ts, tr, t))

    def observe_in_flight_time(self, fs, fr, ts, tr, t):
        self.calls.append(("observe_in_flight_time", fs, fr, ts, tr, t))


def _agg(**kwargs) -> OrchestratorAggregator:
    base = dict(num_stages=3, log_stats=False, wall_start_ts=0.0, final_stage_id_for_e2e=2)
    base.update(kwargs)
    return OrchestratorAggregator(**base)


def _approx_calls(calls: list[tuple]) -> list[tuple]:
    return [(*c[:-1], pytest.approx(c[-1])) for c in calls]


# ---- records ----
def test_record_properties() -> None:
    assert StageStats(total_token=50, total_gen_time_ms=500.0).avg_tokens_per_s == 100.0
    assert StageStats().avg_tokens_per_s == 0.0
    s = _stage(num_tokens_out=20, stage_gen_time_ms=400.0, rx_transfer_bytes=1_000_000, rx_decode_time_ms=8.0)
    assert s.tokens_per_s == 50.0
    assert s.rx_mbps == pytest.approx(1_000_000 * 8 / 8000.0)
    assert _stage().rx_mbps == 0.0 and _stage().tokens_per_s == 0.0
    assert TransferEdgeStats(0, 1, "r", 10, 1.5, rx_decode_time_ms=2.0, in_flight_time_ms=0.5).total_time_ms == 4.0
    assert RequestE2EStats("r", 100.0, 4, 0.0, 0).e2e_tpt == 25.0
    assert RequestE2EStats("r", 100.0, 0, 0.0, 0).e2e_tpt == 0.0


def test_stage_request_stats_field_order_and_defaults() -> None:
    import dataclasses

    names = [f.name for f in dataclasses.fields(StageRequestStats)]
    assert names[:9] == ["batch_id", "batch_size", "num_tokens_in", "num_tokens_out", "stage_gen_time_ms",
                         "rx_transfer_bytes", "rx_decode_time_ms", "rx_in_flight_time_ms", "stage_stats"]
    assert names[9:15] == ["stage_id", "replica_id", "final_output_type", "finish_reason", "request_id",
                           "postprocess_time_ms"]
    assert names[-4:] == ["vllm_ttft_ms", "vllm_tpot_ms", "vllm_itl_ms", "vllm_itls_ms"]
    assert len(names) == 34  # fmt: skip
    s = _stage()
    assert s.stage_id is None and s.diffusion_metrics is None and s.pipeline_timings is None
    assert s.inter_output_latencies_ms is None and s.vllm_itls_ms is None and s.output_unit_count == 0


# ---- test_stats.py (upstream) ----
def test_orchestrator_aggregator_builds_summary(monkeypatch) -> None:
    monkeypatch.setattr(stats_mod.time, "time", lambda: 0.07)  # finalize at the stage-1 last timestamp
    agg = OrchestratorAggregator(num_stages=2, log_stats=True, wall_start_ts=0.0, final_stage_id_for_e2e=1)
    agg.stage_first_ts[0] = 0.0
    agg.stage_last_ts[0] = 0.03
    agg.stage_first_ts[1] = 0.05
    agg.stage_last_ts[1] = 0.07
    agg.on_forward(0, 1, "r1", size_bytes=1024, tx_ms=5.0, used_shm=False)
    agg.on_stage_metrics(0, "r1", _stage(num_tokens_in=3, num_tokens_out=3, stage_gen_time_ms=30.0))
    agg.on_stage_metrics(1, "r1", _stage(num_tokens_out=4, stage_gen_time_ms=20.0, rx_transfer_bytes=1024,
                                         rx_decode_time_ms=5.0, rx_in_flight_time_ms=2.0))  # fmt: skip
    agg.on_finalize_request(1, "r1", req_start_ts=0.0)

    summary = agg.build_and_log_summary()
    assert summary["overall_summary"]["e2e_requests"] == 1
    assert summary["final_stage_id"] == {"*": 1}
    stage_entry = _entry(summary["stage_table"], "r1")
    assert [row["stage_id"] for row in stage_entry["stages"]] == [0, 1]
    transfer_entry = _entry(summary["trans_table"], "r1")
    assert transfer_entry["transfers"][0]["edge"] == "0->1"
    assert transfer_entry["transfers"][0]["size_kbytes"] == 1.0
    assert transfer_entry["transfers"][0]["rx_decode_time_ms"] == 5.0
    e2e_entry = _entry(summary["e2e_table"], "r1")
    assert e2e_entry["e2e_total_tokens"] == 10
    assert e2e_entry["transfers_total_kbytes"] == 1.0
    assert e2e_entry["transfers_total_time_ms"] == pytest.approx(12.0)
    assert summary["overall_summary"]["e2e_stage_0_wall_time_ms"] == pytest.approx(30.0)
    assert summary["overall_summary"]["e2e_stage_1_wall_time_ms"] == pytest.approx(20.0)


def test_build_and_log_summary_e2e_only() -> None:
    agg = OrchestratorAggregator(num_stages=1, log_stats=True, wall_start_ts=0.0, final_stage_id_for_e2e=0)
    agg.e2e_events.append(RequestE2EStats(request_id="r", e2e_total_ms=10.0, e2e_total_tokens=5,
                                          transfers_total_time_ms=0.0, transfers_total_bytes=0))  # fmt: skip
    summary = agg.build_and_log_summary()
    assert _entry(summary["e2e_table"], "r")["e2e_total_tokens"] == 5
    assert _entry(summary["stage_table"], "r")["stages"] == []
    assert _entry(summary["trans_table"], "r")["transfers"] == []


def test_build_and_log_summary_multiple_requests() -> None:
    agg = OrchestratorAggregator(num_stages=2, log_stats=True, wall_start_ts=0.0,
                                 final_stage_id_for_e2e={"r1": 1, "r2": 0})  # fmt: skip
    agg.on_stage_metrics(0, "r1", _stage(num_tokens_in=2, num_tokens_out=4, stage_gen_time_ms=10.0))
    agg.on_stage_metrics(1, "r1", _stage(num_tokens_in=4, num_tokens_out=5, stage_gen_time_ms=8.0))
    agg.on_finalize_request(1, "r1", req_start_ts=0.0)
    agg.on_stage_metrics(0, "r2", _stage(batch_id=2, num_tokens_in=1, num_tokens_out=2, stage_gen_time_ms=12.0))
    agg.on_finalize_request(0, "r2", req_start_ts=0.0)

    summary = agg.build_and_log_summary()
    assert summary["final_stage_id"] == {"r1": 1, "r2": 0}
    assert len(summary["stage_table"]) == 2
    assert {e["request_id"] for e in summary["e2e_table"]} == {"r1", "r2"}
    assert len(_entry(summary["stage_table"], "r1")["stages"]) == 2
    assert len(_entry(summary["stage_table"], "r2")["stages"]) == 1
    assert _entry(summary["e2e_table"], "r1")["e2e_total_tokens"] == 2 + 4 + 5  # stage-1 tokens_in not counted
    assert summary["overall_summary"]["e2e_total_tokens"] == 11 + 3


def test_merge_stage_metric_event_token_weights_tpot() -> None:
    first = _stage(num_tokens_in=10, num_tokens_out=4, stage_gen_time_ms=15.0, stage_id=0, vllm_tpot_ms=10.0)
    second = _stage(num_tokens_in=8, num_tokens_out=6, stage_gen_time_ms=20.0, stage_id=0, vllm_tpot_ms=20.0)
    merged = OrchestratorAggregator._merge_stage_metric_event(None, first)
    merged = OrchestratorAggregator._merge_stage_metric_event(merged, second)
    assert merged["vllm_tpot_ms"] == pytest.approx((10.0 * 3 + 20.0 * 5) / 8.0)


def test_omni_timing_keeps_total_engine_without_identity(monkeypatch) -> None:
    log = LogCapture(monkeypatch)
    agg = OrchestratorAggregator(num_stages=1, log_stats=True, wall_start_ts=0.0, final_stage_id_for_e2e=0)
    agg.on_stage_metrics(0, "r1", _stage(num_tokens_in=3, num_tokens_out=3, stage_gen_time_ms=30.0))
    agg.on_finalize_request(0, "r1", req_start_ts=0.0)
    agg.build_and_log_summary()
    timing = log.timing()
    assert timing
    assert "total=" in timing[0]
    assert "engine=" in timing[0]
    assert "StageRequestStats [request_id=r1]" in log.tables()


# ---- summary details (§5.3) ----
def test_timing_line_fields(monkeypatch) -> None:
    log = LogCapture(monkeypatch)
    monkeypatch.setattr(stats_mod.time, "time", lambda: 12.5)
    agg = OrchestratorAggregator(3, True, 10.0, 2)
    agg.on_forward(1, 2, "r", 100, 3.456, False)
    agg.on_forward(0, 1, "r", 100, 1.0, False)
    agg.on_stage_metrics(2, "r", _stage(stage_gen_time_ms=1500.0))
    agg.on_stage_metrics(0, "r", _stage(stage_gen_time_ms=250.0))
    agg.on_stage_metrics(1, "r", _stage(stage_gen_time_ms=100.0,
                                        pipeline_timings={"preprocess_ms": 500.0, "ar2diffusion_ms": 7.0}))
    agg.on_finalize_request(2, "r", req_start_ts=10.0)  # fmt: skip
    agg.build_and_log_summary()
    assert log.timing() == [
        "req=r total=2.50s preprocess=0.50s engine=2.00s stages=[0:0.25s,1:0.10s,2:1.50s] "
        "transfers=[1->2=3.46ms,0->1=1.00ms] ar2diffusion=7.00ms"
    ]


def test_timing_identity_omits_total_and_engine(monkeypatch) -> None:
    log = LogCapture(monkeypatch)
    agg = OrchestratorAggregator(2, True, 1.0, 1)
    agg.on_stage_metrics(0, "resp-turn", _stage(num_tokens_out=3, stage_gen_time_ms=11.0))
    agg.on_finalize_request(1, "resp-turn", 1.0)
    agg.timing_identity = {"req": "duplex-s.a.i.b.e.c.r.d", "response": "resp-turn", "turn": 3, "reason": "stop"}
    agg.build_and_log_summary()
    (line,) = log.timing()
    assert line.startswith("req=duplex-s.a.i.b.e.c.r.d response=resp-turn turn=3 reason=stop ")
    assert "total=" not in line and "engine=" not in line
    assert "stages=[0:0.01s]" in line


def test_overall_summary_fields_and_preprocess_mean(monkeypatch) -> None:
    log = LogCapture(monkeypatch)
    monkeypatch.setattr(stats_mod.time, "time", lambda: 2.0)
    agg = OrchestratorAggregator(2, True, 0.0, 1)
    agg.on_stage_metrics(0, "a", _stage(num_tokens_in=5, num_tokens_out=5, pipeline_timings={"preprocess_ms": 10.0}))
    agg.on_stage_metrics(1, "a", _stage(pipeline_timings={"preprocess_ms": 99.0}))
    agg.on_stage_metrics(0, "b", _stage(num_tokens_out=10, pipeline_timings={"preprocess_ms": 30.0}))
    agg.on_finalize_request(1, "a", 1.0)
    agg.on_finalize_request(0, "b", 1.5)
    summary = agg.build_and_log_summary()
    overall = summary["overall_summary"]
    assert list(overall) == ["e2e_requests", "e2e_wall_time_ms", "e2e_total_tokens", "e2e_avg_time_per_request_ms",
                             "e2e_avg_tokens_per_s", "input_preprocess_time_ms", "e2e_stage_0_wall_time_ms",
                             "e2e_stage_1_wall_time_ms"]  # fmt: skip
    assert overall["e2e_requests"] == 2
    assert overall["e2e_wall_time_ms"] == 2000.0
    assert overall["e2e_total_tokens"] == 20
    assert overall["e2e_avg_time_per_request_ms"] == 1000.0
    assert overall["e2e_avg_tokens_per_s"] == 10.0
    assert overall["input_preprocess_time_ms"] == 20.0  # mean of each request's first preprocess_ms
    assert overall["e2e_stage_0_wall_time_ms"] == 0.0  # no first timestamp
    table = log.tables().split("\n[")[0]
    assert table.startswith("[Overall Summary]\n+")
    assert "e2e_stage_0_wall_time_ms" not in table  # zero fields are not logged
    assert "| e2e_total_tokens            |        20 |" in table


def test_stage_table_excludes_and_diffusion_expansion(monkeypatch) -> None:
    log = LogCapture(monkeypatch)
    agg = OrchestratorAggregator(2, True, 0.0, 1)
    agg.diffusion_metrics["r"]["diffusion_engine_exec_time_s"] = 1.25
    agg.on_stage_metrics(1, "r", _stage(stage_gen_time_ms=2000.0, postprocess_time_ms=9.0, replica_id=1,
                                        finish_reason="stop", pipeline_timings={"queue_wait_ms": 3.0},
                                        output_unit_type="image", inter_output_latencies_ms=[1.0, 3.0]))
    agg.on_stage_metrics(0, "r", _stage(num_tokens_out=7, postprocess_time_ms=4.0))  # fmt: skip
    summary = agg.build_and_log_summary()
    rows = _entry(summary["stage_table"], "r")["stages"]
    assert [r["stage_id"] for r in rows] == [0, 1]
    assert rows[1]["diffusion_engine_exec_time_s"] == 1.25
    assert "diffusion_metrics" not in rows[1]
    assert "postprocess_time_ms" not in rows[1]  # dropped once any stage has diffusion metrics
    for excluded in ("stage_stats", "request_id", "rx_transfer_bytes", "rx_transfer_kbytes", "finish_reason",
                     "pipeline_timings", "final_output_type"):  # fmt: skip
        assert excluded not in rows[1]
    text = log.tables()
    assert "[StageRequestStats [request_id=r]]" in text
    # Columns are the stage ids; a None cell renders "None", a missing diffusion key an empty cell.
    assert "| Field                        |     0 |           1 |" in text
    assert "| diffusion_engine_exec_time_s |       |       1.250 |" in text
    assert "| inter_output_latencies_ms    |  None | 2.000 (n=2) |" in text
    assert "| replica_id                   |  None |           1 |" in text
    assert "| stage_gen_time_ms            | 0.000 |   2,000.000 |" in text
    assert "postprocess_time_ms" not in text


def test_omit_serving_time_to_first_output_flag() -> None:
    agg = OrchestratorAggregator(1, True, 0.0, 0)
    agg.on_stage_metrics(0, "r", _stage(serving_time_to_first_output_ms=5.0))
    assert "serving_time_to_first_output_ms" in _entry(agg.build_and_log_summary()["stage_table"], "r")["stages"][0]
    agg.omit_serving_time_to_first_output = True
    assert "serving_time_to_first_output_ms" not in _entry(agg.build_and_log_summary()["stage_table"], "r")["stages"][0]


def test_log_stats_off_returns_empty_and_logs_nothing(monkeypatch) -> None:
    log = LogCapture(monkeypatch)
    agg = OrchestratorAggregator(1, False, 0.0, 0)
    agg.on_stage_metrics(0, "r", _stage(num_tokens_out=3))
    agg.on_finalize_request(0, "r", 0.0)
    assert agg.build_and_log_summary() == {}
    assert log.calls == []
    # The records still fill (upstream semantics), only the summary is gated.
    assert agg.stage_events["r"][0].num_tokens_out == 3
    assert "r" in agg.e2e_done


def test_finalize_is_once_per_request(monkeypatch) -> None:
    clock = iter([5.0, 9.0])
    monkeypatch.setattr(stats_mod.time, "time", lambda: next(clock))
    agg = OrchestratorAggregator(1, True, 0.0, 0)
    agg.on_finalize_request(0, "r", 4.0)
    agg.on_finalize_request(0, "r", 4.0)
    assert len(agg.e2e_events) == 1
    assert agg.e2e_events[0].e2e_total_ms == 1000.0
    assert agg.e2e_count == 1 and agg.last_finish_ts == 5.0 and agg.stage_last_ts[0] == 5.0


def test_init_run_state_resets_run_aggregates() -> None:
    agg = OrchestratorAggregator(2, True, 0.0, 1)
    agg.on_stage_metrics(0, "r", _stage(num_tokens_out=2))
    agg.on_finalize_request(0, "r", 0.0)
    agg.init_run_state(100.0)
    assert agg.e2e_count == 0 and agg.e2e_done == set() and agg.wall_start_ts == 100.0
    assert agg.stage_first_ts == [None, None] and agg.stage_total_tokens == [0, 0]
    assert agg.stage_events["r"]  # records are kept


# ---- test_transfer.py: aggregator emit hook ----
def _make_rx_stats(stage_id, request_id, *, rx_decode=0.0, rx_in_flight=0.0, rx_bytes=0, replica_id=None):
    return _stage(rx_transfer_bytes=rx_bytes, rx_decode_time_ms=rx_decode, rx_in_flight_time_ms=rx_in_flight,
                  stage_id=stage_id, request_id=request_id, replica_id=replica_id)  # fmt: skip


def test_record_transfer_tx_emits_size_and_tx_time() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter, replica_resolver=lambda s, rid: {0: 1, 1: 0}.get(s))
    agg.record_transfer_tx(from_stage=0, to_stage=1, request_id="r-tx-1", size_bytes=2048, tx_time_ms=7.5,
                           used_shm=False)  # fmt: skip
    assert emitter.calls == _approx_calls([("observe_size", 0, 1, 1, 0, 2048), ("observe_tx_time", 0, 1, 1, 0, 0.0075)])
    assert isinstance(emitter.calls[0][-1], int)


def test_record_transfer_tx_no_emit_when_emitter_none() -> None:
    agg = _agg(transfer_emitter=None, replica_resolver=lambda s, rid: 0)
    evt = agg.record_transfer_tx(from_stage=0, to_stage=1, request_id="r-tx-2", size_bytes=128, tx_time_ms=1.0,
                                 used_shm=True)  # fmt: skip
    assert evt is not None
    assert evt.size_bytes == 128
    assert evt.tx_time_ms == 1.0
    assert evt.used_shm is True


def test_record_transfer_tx_accumulates_per_edge() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter, replica_resolver=lambda s, rid: 0)
    agg.record_transfer_tx(0, 1, "r", 100, 1.0, False)
    evt = agg.record_transfer_tx(0, 1, "r", 50, 2.0, False)
    assert (evt.size_bytes, evt.tx_time_ms, evt.used_shm) == (150, 3.0, False)
    assert list(agg.transfer_events) == [(0, 1, "r")]
    # One observation per physical hop, not the accumulated total.
    assert [c[-1] for c in emitter.calls if c[0] == "observe_size"] == [100, 50]


def test_record_transfer_tx_no_emit_when_resolver_returns_none() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter, replica_resolver=lambda s, rid: None)
    evt = agg.record_transfer_tx(0, 1, "r-tx-3", 512, 2.0, False)
    assert emitter.calls == []
    assert evt.size_bytes == 512


def test_record_transfer_tx_no_emit_when_one_side_resolves_to_none() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter, replica_resolver=lambda s, rid: 0 if s == 0 else None)
    agg.record_transfer_tx(0, 1, "r-tx-4", 64, 0.5, False)
    assert emitter.calls == []


def test_record_transfer_tx_no_emit_without_resolver() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter)
    assert agg.record_transfer_tx(0, 1, "r", 64, 0.5, False) is not None
    assert emitter.calls == []


def test_record_transfer_rx_emits_decode_and_in_flight() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter, replica_resolver=lambda s, rid: {0: 1, 1: 0}.get(s))
    agg.record_transfer_rx(_make_rx_stats(1, "r-rx-1", rx_decode=4.2, rx_in_flight=1.7))
    assert emitter.calls == _approx_calls(
        [("observe_rx_time", 0, 1, 1, 0, 0.0042), ("observe_in_flight_time", 0, 1, 1, 0, 0.0017)]
    )


def test_record_transfer_rx_skips_stage_zero() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter, replica_resolver=lambda s, rid: 0)
    assert agg.record_transfer_rx(_make_rx_stats(0, "r-rx-2", rx_decode=4.2)) is None
    assert agg.record_transfer_rx(_make_rx_stats(None, "r-rx-2", rx_decode=4.2)) is None
    assert emitter.calls == []
    assert agg.transfer_events == {}


def test_record_transfer_rx_no_emit_when_emitter_none() -> None:
    agg = _agg()
    evt = agg.record_transfer_rx(_make_rx_stats(1, "r-rx-3", rx_decode=1.0, rx_in_flight=0.5))
    assert evt is not None
    assert evt.rx_decode_time_ms == 1.0
    assert evt.in_flight_time_ms == 0.5


def test_record_transfer_rx_fills_unknown_size_only() -> None:
    agg = _agg()
    assert agg.record_transfer_rx(_make_rx_stats(1, "a", rx_bytes=4096)).size_bytes == 4096
    agg.record_transfer_tx(0, 1, "b", 100, 1.0, False)
    assert agg.record_transfer_rx(_make_rx_stats(1, "b", rx_bytes=4096)).size_bytes == 100


def test_replica_cache_from_stage_outputs_beats_resolver_and_clears_at_finalize() -> None:
    emitter = StubTransferEmitter()
    resolved: list[tuple] = []

    def resolver(stage, rid):
        resolved.append((stage, rid))
        return 9

    agg = _agg(transfer_emitter=emitter, replica_resolver=resolver)
    agg.on_stage_metrics(1, "r", _stage(replica_id=2, rx_decode_time_ms=1.0))
    assert emitter.calls[0][1:5] == (0, 9, 1, 2)  # to side from the output's replica, from side resolved
    assert resolved == [(0, "r")]
    agg.record_transfer_tx(0, 1, "r", 10, 1.0, False)
    assert emitter.calls[-1][1:5] == (0, 9, 1, 2)
    agg.on_finalize_request(1, "r", 0.0)
    agg.record_transfer_tx(0, 1, "r", 10, 1.0, False)
    assert emitter.calls[-1][1:5] == (0, 9, 1, 9)  # cache dropped: resolver for both sides


def test_emitter_and_resolver_failures_do_not_break_accumulation() -> None:
    class Broken:
        def __getattr__(self, name):
            raise RuntimeError("registry gone")

    agg = _agg(transfer_emitter=Broken(), replica_resolver=lambda s, rid: 0)
    assert agg.record_transfer_tx(0, 1, "r", 10, 1.0, False).size_bytes == 10
    agg2 = _agg(transfer_emitter=StubTransferEmitter(), replica_resolver=lambda s, rid: 1 / 0)
    assert agg2.record_transfer_rx(_make_rx_stats(1, "r", rx_decode=1.0)).rx_decode_time_ms == 1.0
    assert agg2.transfer_emitter.calls == []


@pytest.mark.parametrize("bad", [None, "x", object()])
def test_record_transfer_tx_bad_input_returns_none(bad) -> None:
    agg = _agg()
    assert agg.record_transfer_tx(bad, 1, "r", 10, 1.0, False) is None
    assert agg.record_transfer_tx(0, 1, "r", bad, 1.0, False) is None
    assert agg.transfer_events == {}


def test_on_forward_marks_destination_first_ts(monkeypatch) -> None:
    monkeypatch.setattr(stats_mod.time, "time", lambda: 42.0)
    agg = _agg()
    agg.on_forward(0, 1, "r", 10, 1.0, False)
    agg.on_forward(0, 7, "r", 10, 1.0, False)  # out of range: no index error
    assert agg.stage_first_ts == [None, 42.0, None]
    assert (0, 7, "r") in agg.transfer_events


# ---- diffusion accumulation (§4.17) ----
def test_accumulate_diffusion_metrics_renames_ms_to_s_and_sums() -> None:
    agg = _agg()
    out = SimpleNamespace(metrics={"preprocess_time_ms": 50.0, "diffusion_engine_exec_time_ms": 1200.0,
                                   "num_inference_steps": 20, "forward_time_ms": None, "label": "x"})  # fmt: skip
    agg.accumulate_diffusion_metrics("diffusion", "r", [out])
    agg.accumulate_diffusion_metrics("diffusion", "r", SimpleNamespace(metrics=[{"preprocess_time_ms": 25.0}]))
    agg.accumulate_diffusion_metrics("llm", "r", [out])
    agg.accumulate_diffusion_metrics("diffusion", "r", SimpleNamespace(metrics=None))
    assert dict(agg.diffusion_metrics["r"]) == {
        "preprocess_time_s": pytest.approx(0.075),
        "diffusion_engine_exec_time_s": pytest.approx(1.2),
        "num_inference_steps": 20.0,
    }


def test_stage_record_from_an_aggregator_made_without_init() -> None:
    # Upstream's newest test_modality builds its aggregator with object.__new__: no buckets, so
    # the denoise latency falls back to the stage time (1200 ms / 20 steps).
    agg = object.__new__(OrchestratorAggregator)
    stats = agg._as_stage_request_stats(0, "req", _stage(stage_gen_time_ms=1200.0, num_inference_steps=20,
                                                         output_unit_type="image"), "image")  # fmt: skip
    assert stats.diffusion_metrics is None
    assert stats.denoise_step_latency_ms == pytest.approx(60.0)


def test_on_stage_metrics_pops_bucket_and_computes_denoise_latency() -> None:
    agg = _agg()
    agg.accumulate_diffusion_metrics("diffusion", "r", SimpleNamespace(metrics={"forward_time_ms": 1000.0}))
    agg.on_stage_metrics(1, "r", _stage(stage_gen_time_ms=3000.0, num_inference_steps=20, output_unit_type="image"),
                         "image")  # fmt: skip
    evt = agg.stage_events["r"][0]
    assert evt.diffusion_metrics == {"forward_time_s": 1.0}
    assert evt.denoise_step_latency_ms == pytest.approx(50.0)
    assert evt.final_output_type == "image" and evt.stage_id == 1 and evt.request_id == "r"
    assert "r" not in agg.diffusion_metrics
    # Without a forward time the stage gen time is the numerator; video outputs get none.
    agg.on_stage_metrics(1, "s", _stage(stage_gen_time_ms=3000.0, num_inference_steps=20, output_unit_type="image"))
    agg.on_stage_metrics(1, "v", _stage(stage_gen_time_ms=3000.0, num_inference_steps=20, output_unit_type="video"))
    assert agg.stage_events["s"][0].denoise_step_latency_ms == 150.0
    assert agg.stage_events["v"][0].denoise_step_latency_ms == 0.0


def test_on_stage_metrics_accepts_mapping_and_out_of_range_stage() -> None:
    agg = _agg()
    agg.on_stage_metrics(9, "r", {"num_tokens_out": 4, "stage_gen_time_ms": 8.0, "unknown_key": 1})
    evt = agg.stage_events["r"][0]
    assert isinstance(evt, StageRequestStats) and evt.num_tokens_out == 4 and evt.stage_id == 9
    with pytest.raises(TypeError):
        agg.on_stage_metrics(0, "r", 5)  # type: ignore[arg-type]


# ---- snapshot and merge (§5.4) ----
def test_merge_rules() -> None:
    merge = OrchestratorAggregator._merge_stage_metric_event
    a = _stage(stage_id=1, num_tokens_out=1, stage_gen_time_ms=40.0, audio_generated_frames=8000, audio_duration_s=0.5,
               audio_sample_rate=0, serving_time_to_first_output_ms=0.0, finish_reason="length",
               output_unit_type="audio", output_unit_count=2, inter_output_latencies_ms=[10.0])
    b = _stage(stage_id=1, num_tokens_out=1, stage_gen_time_ms=10.0, audio_generated_frames=4000, audio_duration_s=0.25,
               audio_sample_rate=16000, serving_time_to_first_output_ms=5.0, finish_reason=None, output_unit_type="",
               output_unit_count=1, inter_output_latencies_ms=[20.0, 30.0], denoise_step_latency_ms=2.0)
    c = _stage(stage_id=1, audio_sample_rate=24000, serving_time_to_first_output_ms=7.0, finish_reason="stop",
               denoise_step_latency_ms=0.0)  # fmt: skip
    merged = merge(merge(merge(None, a), b), c)
    assert merged["stage_gen_time_ms"] == 50.0
    assert merged["audio_frames"] == 12000 and merged["audio_duration_s"] == 0.75
    assert merged["audio_sample_rate"] == 16000  # first positive
    assert merged["serving_time_to_first_output_ms"] == 5.0
    assert merged["finish_reason"] == "stop"  # last non-None
    assert merged["output_unit_type"] == "audio"  # last non-empty
    assert merged["denoise_step_latency_ms"] == 2.0  # latest positive
    assert merged["inter_output_latencies_ms"] == [10.0, 20.0, 30.0]
    assert merged["inter_output_latency_ms"] == 20.0
    assert merged["output_unit_count"] == 3
    assert merged["time_per_output_unit_ms"] == pytest.approx((50.0 - 5.0) / 2)
    assert merged["vllm_tpot_ms"] == 0.0


def test_snapshot_per_stage_with_cursor() -> None:
    agg = _agg()
    agg.on_stage_metrics(0, "r", _stage(num_tokens_in=10, num_tokens_out=4, stage_gen_time_ms=15.0, vllm_ttft_ms=12.0,
                                        vllm_tpot_ms=10.0))
    cursor = agg.stage_event_cursor("r")
    agg.on_stage_metrics(0, "r", _stage(num_tokens_in=8, num_tokens_out=6, stage_gen_time_ms=20.0, vllm_ttft_ms=99.0,
                                        vllm_tpot_ms=20.0, vllm_itls_ms=[8.0, 9.0]))
    agg.on_stage_metrics(1, "r", _stage(num_tokens_out=2, stage_gen_time_ms=40.0, audio_generated_frames=8000))
    snap = agg._build_stage_metrics_snapshot("r")  # fmt: skip
    assert list(snap) == ["0", "1"]
    s0 = snap["0"]
    assert (s0["num_tokens_in"], s0["num_tokens_out"], s0["stage_gen_time_ms"]) == (18, 10, 35.0)
    assert s0["vllm_ttft_ms"] == 12.0 and s0["vllm_itls_ms"] == [8.0, 9.0] and s0["vllm_itl_ms"] == 8.5
    assert s0["vllm_tpot_ms"] == pytest.approx(16.25)
    assert not any(k.startswith("_") for k in s0)
    assert snap["1"]["audio_frames"] == 8000
    later = agg._build_stage_metrics_snapshot("r", event_cursor=cursor)
    assert later["0"]["num_tokens_in"] == 8
    assert agg.stage_event_cursor("r") == 3 and agg.stage_event_cursor("nope") == 0
    assert agg._build_stage_metrics_snapshot("r", event_cursor=-5) == snap
    assert agg._build_stage_metrics_snapshot("nope") == {}


# ---- process_stage_metrics ----
def test_process_stage_metrics_records_and_attaches_metrics() -> None:
    agg = _agg()
    out = SimpleNamespace(final_output_type="text", metrics=None)
    m = _stage(num_tokens_in=3, num_tokens_out=5, stage_gen_time_ms=12.0)
    agg.process_stage_metrics(result={"metrics": m}, stage_type="llm", stage_id=0, req_id="r", engine_outputs=None,
                              finished=True, final_output_type="text", output_to_yield=out)  # fmt: skip
    assert agg.accumulated_gen_time_ms["r"][0] == 12.0
    assert out.metrics["num_tokens_in"] == 3 and out.metrics["num_tokens_out"] == 5
    assert out.metrics["final_output_type"] == "text" and out.metrics["stage_id"] == 0
    assert out.metrics["stage_metrics"]["0"]["num_tokens_out"] == 5
    unfinished = SimpleNamespace(metrics="stale")
    agg.process_stage_metrics(result={"metrics": m}, stage_type="llm", stage_id=0, req_id="r", engine_outputs=None,
                              finished=False, final_output_type="text", output_to_yield=unfinished)  # fmt: skip
    assert unfinished.metrics == {}
    assert len(agg.stage_events["r"]) == 1 and agg.accumulated_gen_time_ms["r"][0] == 24.0


def test_process_stage_metrics_records_audio_frames() -> None:
    agg = _agg()
    out = SimpleNamespace(final_output_type="audio", multimodal_output={"audio": [SimpleNamespace(shape=(1, 4000)),
                                                                                  SimpleNamespace(shape=(2000,))]})
    agg.process_stage_metrics(result={"metrics": _stage(stage_gen_time_ms=5.0)}, stage_type="llm", stage_id=1,
                              req_id="r", engine_outputs=None, finished=True, final_output_type="audio",
                              output_to_yield=out)  # fmt: skip
    assert agg.stage_events["r"][0].audio_generated_frames == 6000
    assert out.metrics["stage_metrics"]["1"]["audio_frames"] == 6000
    assert "num_tokens_in" not in out.metrics


def test_process_stage_metrics_never_raises(caplog) -> None:
    agg = _agg()
    agg.process_stage_metrics(result={"metrics": 5}, stage_type="llm", stage_id=0, req_id="r", engine_outputs=None,
                              finished=True, final_output_type=None, output_to_yield=None)  # fmt: skip
    assert "Failed to process metrics" in caplog.text


def test_postprocess_timer_and_missing_event_warning(caplog) -> None:
    agg = _agg()
    agg.on_stage_metrics(0, "r", _stage())
    with agg.stage_postprocess_timer(0, "r"):
        pass
    assert agg.stage_events["r"][0].postprocess_time_ms >= 0.0
    agg.record_stage_postprocess_time(0, "r", 12.5)
    assert agg.stage_events["r"][0].postprocess_time_ms == 12.5
    agg.record_stage_postprocess_time(3, "missing", 1.0)
    assert "no stage event found" in caplog.text


# ---- concurrency smoke test ----
def test_concurrent_records_are_all_kept() -> None:
    emitter = StubTransferEmitter()
    agg = _agg(transfer_emitter=emitter, replica_resolver=lambda s, rid: 0, log_stats=True)

    def work(k: int) -> None:
        for i in range(200):
            rid = f"r{k}-{i}"
            agg.on_forward(0, 1, rid, 10, 1.0, False)
            agg.on_stage_metrics(1, rid, _stage(num_tokens_out=1, rx_decode_time_ms=1.0))
            agg.on_finalize_request(1, rid, 0.0)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert agg.e2e_count == 800 and len(agg.transfer_events) == 800
    assert len(emitter.calls) == 800 * 4
    assert len(agg.build_and_log_summary()["e2e_table"]) == 800


def test_postprocess_time_and_audio_frames_go_to_the_stages_first_event() -> None:
    # Upstream walks the request's events in order and stops at the first one of the stage.
    agg = OrchestratorAggregator(num_stages=2, log_stats=True, wall_start_ts=0.0, final_stage_id_for_e2e=1)
    agg.on_stage_metrics(1, "r1", _stage(num_tokens_out=1))
    agg.on_stage_metrics(1, "r1", _stage(num_tokens_out=2))
    agg.record_stage_postprocess_time(1, "r1", 12.5)
    out = SimpleNamespace(final_output_type="audio", multimodal_output={"audio": [[0.0] * 240]})
    agg.record_audio_generated_frames(out, 1, "r1")
    first, second = agg.stage_events["r1"]
    assert (first.postprocess_time_ms, second.postprocess_time_ms) == (12.5, 0.0)
    assert (first.audio_generated_frames, second.audio_generated_frames) == (240, 0)
