"""concurrency_trace (upstream-changes-2026-09 §1.2): opt-in JSON-lines records, nothing written
when off, write failures dropped, and the summary's arithmetic."""

import json
import os

import pytest

from modelmetrics.vllm_omni.metrics import concurrency_trace as ct


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(ct.TRACE_PATH_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    ct.emit_concurrency_trace("request_completed", e2e_total_ms=5)
    assert os.listdir(tmp_path) == []


def test_records_are_appended_with_base_fields_and_caller_fields_last(tmp_path, monkeypatch):
    path = tmp_path / "nested" / "trace.jsonl"
    monkeypatch.setenv(ct.TRACE_PATH_ENV, str(path))
    monkeypatch.setenv(ct.TRACE_RUN_ID_ENV, "run-7")
    ct.emit_concurrency_trace("stage_completed", stage_id=1, obj=object(), pid=-1)
    ct.emit_stage_config_snapshot({"stages": [{"stage_id": 0, "devices": "0,1"}, "junk"]}, "cfg.yaml")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["event"] for r in lines] == ["stage_completed", "stage_config"]
    assert lines[0]["run_id"] == "run-7" and lines[0]["pid"] == -1  # the caller's field wins
    assert lines[0]["obj"].startswith("<object object")
    assert lines[1]["tensor_parallel_size"] == 1 and lines[1]["source"] == "cfg.yaml"
    with pytest.raises(ValueError, match="list-valued"):
        ct.emit_stage_config_snapshot({"stages": "0"}, "x")


def test_a_failed_write_is_dropped(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(ct.TRACE_PATH_ENV, str(blocker / "under-a-file.jsonl"))
    ct.emit_concurrency_trace("x")  # no exception


def test_summary_arithmetic():
    records = [
        {"event": "request_completed", "ts_unix_s": 100.0, "e2e_total_ms": 1000.0},
        {"event": "request_completed", "ts_unix_s": 101.0, "e2e_total_ms": 500.0},
        {"event": "stage_completed", "stage_id": 0, "ts_unix_s": 100.0, "stage_gen_time_ms": 400.0,
         "batch_size": 2},
        {"event": "stage_completed", "stage_id": 1, "ts_unix_s": 100.2, "stage_gen_time_ms": 300.0},
        {"event": "stage_config", "stage_id": 1, "devices": "1", "max_num_seqs": 4, "extra": 1},
        {"event": "gpu_sample", "gpu_index": 1, "memory_used_bytes": 7, "gpu_utilization_pct": 40},
        {"event": "gpu_sample", "gpu_index": 1, "memory_used_bytes": 9, "gpu_utilization_pct": 60},
        {"event": "prometheus_sample", "metric": "vllm:num_requests_waiting", "labels": {}, "value": 3},
        {"event": "prometheus_sample", "metric": "vllm:num_requests_waiting", "labels": {}, "value": 1},
        {"event": "prometheus_sample", "metric": "vllm:kv_cache_usage_perc", "value": 1},
        {"event": "stage1_input_ready", "request_id": "r", "ts_unix_s": 10.0},
        {"event": "tts_slot_started", "request_id": "r", "ts_unix_s": 10.25},
        {"event": "tts_slot_completed", "outcome": None},
    ]
    s = ct.build_summary(iter(records))
    assert s["completed_requests"] == 2
    assert s["completed_requests_per_s"] == pytest.approx(2 / 2.0)  # 99.0 .. 101.0
    assert s["e2e_latency_ms"] == {"p50": 750.0, "p95": pytest.approx(975.0), "mean": 750.0}
    assert s["stage1_queue_delay_ms"]["p50"] == pytest.approx(250.0)
    assert s["tts_output_outcomes"] == {"unknown": 1}
    assert s["stage_configurations"] == {"1": {"devices": "1", "max_num_seqs": 4}}
    assert s["gpus"] == {"1": {"peak_memory_used_bytes": 9, "mean_utilization_pct": 50.0}}
    assert s["stages"]["1"]["devices"] == [1]
    assert s["stages"]["1"]["gpus"] == {"1": s["gpus"]["1"]}
    assert s["stages"]["0"]["batch_sizes"] == [2]
    assert s["queue"] == {"vllm:num_requests_waiting|stage=pipeline": {"max": 3.0, "mean": 2.0}}
    assert s["cross_stage_overlap_ms"] == pytest.approx(100.0)  # [99.6,100.0] and [99.9,100.2]
    assert ct.build_summary([])["completed_requests_per_s"] == 0.0


def test_summary_command_writes_json(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"event": "request_completed", "ts_unix_s": 1.0, "e2e_total_ms": 50}\n\n')
    out = tmp_path / "s.json"
    assert ct.main(["summary", "--trace-path", str(trace), "--output", str(out)]) == 0
    assert json.loads(out.read_text())["completed_requests_per_s"] == pytest.approx(20.0)
