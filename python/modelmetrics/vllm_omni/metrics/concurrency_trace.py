"""Drop-in for ``vllm_omni.metrics.concurrency_trace``: an opt-in JSON-lines trace for staged
concurrency experiments, and its offline summary.

Set ``VLLM_OMNI_CONCURRENCY_TRACE_PATH`` to a file and every :func:`emit_concurrency_trace` call
appends one record (event, pid, run id from ``VLLM_OMNI_CONCURRENCY_TRACE_RUN_ID``, wall and
monotonic time, then the caller's fields). Unset, nothing is written and no file or directory
is made. A failed write is dropped: tracing never breaks serving.

The command line samples GPUs and a ``/metrics`` endpoint into the trace (``sample``), records a
stage config (``snapshot-config``) and summarises a trace (``summary``):

    python -m modelmetrics.vllm_omni.metrics.concurrency_trace summary --trace-path run.jsonl

Behaviour follows upstream's module (pipeline-behaviour.md §6.2).
Standard library only at import; pynvml and omegaconf are imported by the commands that use them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.request import urlopen

TRACE_PATH_ENV = "VLLM_OMNI_CONCURRENCY_TRACE_PATH"
TRACE_RUN_ID_ENV = "VLLM_OMNI_CONCURRENCY_TRACE_RUN_ID"

_WRITE_LOCK = threading.Lock()
# A sample line without a timestamp; NaN and Inf values do not match.
_PROMETHEUS_LINE = re.compile(r"^(?P<name>[^\s{]+)(?P<labels>\{[^}]*\})?\s+(?P<value>[-+0-9.eE]+)$")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:\\.|[^\"])*)"')
_STAGE_CONFIG_KEYS = ("devices", "gpu_memory_utilization", "max_model_len",
                      "max_num_batched_tokens", "max_num_seqs", "tensor_parallel_size")


def trace_path() -> Path | None:
    """The trace file, read from the environment on every call; None when tracing is off."""
    raw = os.environ.get(TRACE_PATH_ENV)
    return Path(raw).expanduser() if raw else None


def emit_concurrency_trace(event: str, /, **fields: Any) -> None:
    """Appends one record when tracing is on (one write, under a process lock)."""
    path = trace_path()
    if path is None:
        return
    record: dict[str, Any] = {
        "event": event,
        "pid": os.getpid(),
        "run_id": os.environ.get(TRACE_RUN_ID_ENV),
        "ts_unix_s": time.time(),
        "ts_monotonic_s": time.perf_counter(),
    }
    record.update(fields)  # the caller's fields last: they may override the base keys
    try:  # a field json cannot write (keys of mixed types) drops the record, as a failed write
        line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode("utf-8")
    except (TypeError, ValueError):
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _WRITE_LOCK:
            fd = os.open(path, os.O_APPEND | os.O_CREAT | os.O_WRONLY, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
    except OSError:
        return


def emit_stage_config_snapshot(stage_config: Mapping[str, Any], source: str) -> None:
    """One ``stage_config`` record per stage mapping of ``stage_config["stages"]``."""
    stages = stage_config.get("stages", [])
    if not isinstance(stages, list):
        raise ValueError("stage config must contain a list-valued 'stages' key")
    for stage in stages:
        if not isinstance(stage, Mapping):
            continue
        emit_concurrency_trace(
            "stage_config", source=source, stage_id=stage.get("stage_id"),
            devices=stage.get("devices"), max_num_seqs=stage.get("max_num_seqs"),
            max_model_len=stage.get("max_model_len"),
            max_num_batched_tokens=stage.get("max_num_batched_tokens"),
            gpu_memory_utilization=stage.get("gpu_memory_utilization"),
            tensor_parallel_size=stage.get("tensor_parallel_size", 1))


def _sample_gpus(devices: Sequence[int]) -> None:
    try:
        import pynvml

        pynvml.nvmlInit()
        for device in devices:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(device))
            util = pynvml.nvmlDeviceGetUtilizationRates(handle)
            mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
            emit_concurrency_trace(
                "gpu_sample", gpu_index=int(device), gpu_utilization_pct=int(util.gpu),
                memory_utilization_pct=int(util.memory), memory_used_bytes=int(mem.used),
                memory_total_bytes=int(mem.total))
    except Exception as exc:  # noqa: BLE001 - a sampler records its failure and goes on
        emit_concurrency_trace("gpu_sample_error", error_type=type(exc).__name__, message=str(exc))


def sample_once(devices: Sequence[int], metrics_url: str | None, timeout_s: float) -> None:
    """GPU samples for `devices`, then the vllm:/vllm_omni: samples of `metrics_url`."""
    _sample_gpus(devices)
    if not metrics_url:
        return
    try:
        with urlopen(metrics_url, timeout=timeout_s) as response:
            payload = response.read().decode("utf-8")
        for name, labels, value in _iter_prometheus_samples(payload):
            if name.startswith(("vllm:", "vllm_omni:")):
                emit_concurrency_trace("prometheus_sample", metric=name, labels=labels,
                                       value=value)
    except Exception as exc:  # noqa: BLE001
        emit_concurrency_trace("prometheus_sample_error", error_type=type(exc).__name__,
                               message=str(exc))


def run_sampler(devices: Sequence[int], metrics_url: str | None, interval_s: float,
                timeout_s: float) -> None:
    """Samples every `interval_s` seconds, forever."""
    while True:
        sample_once(devices, metrics_url, timeout_s)
        time.sleep(interval_s)


# ---- The summary ----

def _percentile(values: Sequence[float], percentile: float) -> float:
    """Linear interpolation between the closest ranks; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = (len(ordered) - 1) * percentile / 100.0
    lower = int(index)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (index - lower)


def _p50_p95(values: Sequence[float]) -> dict[str, float]:
    return {"p50": _percentile(values, 50), "p95": _percentile(values, 95)}


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _merge_intervals(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, with overlapping or touching intervals joined."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _overlap_seconds(left: Sequence[tuple[float, float]],
                     right: Sequence[tuple[float, float]]) -> float:
    """Total overlap of two merged interval lists."""
    total, i, j = 0.0, 0, 0
    while i < len(left) and j < len(right):
        total += max(0.0, min(left[i][1], right[j][1]) - max(left[i][0], right[j][0]))
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return total


def _device_indices(devices: object) -> list[int]:
    """"0, 1" or [0, 1] as ints; items that are not ints are skipped."""
    if isinstance(devices, str):
        items: Sequence[Any] = [d for d in re.split(r"[,\s]+", devices.strip()) if d]
    elif isinstance(devices, Sequence) and not isinstance(devices, bytes):
        items = devices
    else:
        return []
    out = []
    for item in items:
        try:
            out.append(int(item))
        except (TypeError, ValueError):
            continue
    return out


def _parse_labels(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    return {m.group("key"): m.group("value") for m in _LABEL.finditer(raw)}


def _iter_prometheus_samples(payload: str):
    for line in payload.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _PROMETHEUS_LINE.match(line)
        if match is None:
            continue
        yield match.group("name"), _parse_labels(match.group("labels")), float(match.group("value"))


def _load_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


class _Collected:
    """What one pass over the records gathers, by event."""

    def __init__(self) -> None:
        self.gpu_samples: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        self.queue: dict[str, list[float]] = defaultdict(list)
        self.stage_events: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        self.stage_intervals: dict[int, list[tuple[float, float]]] = defaultdict(list)
        self.composition: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        self.stage1_batches: list[Mapping[str, Any]] = []
        self.postprocess: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        self.configs: dict[str, Mapping[str, Any]] = {}
        self.stage1_ready: dict[str, float] = {}
        self.stage1_queue_delays: list[float] = []
        self.tts_outcomes: dict[str, int] = defaultdict(int)

    def add(self, r: Mapping[str, Any]) -> None:
        event = r.get("event")
        stage_id = r.get("stage_id")
        if event == "gpu_sample" and r.get("gpu_index") is not None:
            self.gpu_samples[int(r["gpu_index"])].append(r)
        elif event == "prometheus_sample":
            self._add_queue_sample(r)
        elif event == "stage_completed" and stage_id is not None:
            self.stage_events[int(stage_id)].append(r)
            completed_at = float(r.get("ts_unix_s") or 0.0)
            gen_s = float(r.get("stage_gen_time_ms") or 0.0) / 1000.0
            if completed_at > 0 and gen_s >= 0:
                self.stage_intervals[int(stage_id)].append((completed_at - gen_s, completed_at))
        elif event == "batch_composition_changed" and stage_id is not None:
            self.composition[int(stage_id)].append(r)
        elif event == "stage1_batch_started":
            self.stage1_batches.append(r)
        elif event == "stage_postprocess_completed" and stage_id is not None:
            self.postprocess[int(stage_id)].append(r)
        elif event == "stage_config" and stage_id is not None:
            self.configs[str(stage_id)] = r
        elif event == "stage1_input_ready" and r.get("request_id") is not None:
            self.stage1_ready[str(r["request_id"])] = float(r.get("ts_unix_s") or 0.0)
        elif event == "tts_slot_started" and r.get("request_id") is not None:
            ready = self.stage1_ready.get(str(r["request_id"]))
            started = float(r.get("ts_unix_s") or 0.0)
            if ready is not None and started >= ready:
                self.stage1_queue_delays.append((started - ready) * 1000.0)
        elif event == "tts_slot_completed":
            self.tts_outcomes[str(r.get("outcome") or "unknown")] += 1

    def _add_queue_sample(self, r: Mapping[str, Any]) -> None:
        metric = str(r.get("metric") or "")
        if "num_requests_running" not in metric and "num_requests_waiting" not in metric:
            return
        labels = r.get("labels")
        stage = labels.get("stage", "pipeline") if isinstance(labels, Mapping) else "pipeline"
        self.queue[f"{metric}|stage={stage}"].append(float(r.get("value") or 0.0))


def _stage_summary(c: _Collected, stage_id: int) -> dict[str, Any]:
    completed = c.stage_events.get(stage_id, [])
    composition = c.composition.get(stage_id, [])
    observed = [int(e.get("batch_size") or 0) for e in composition]
    if stage_id == 1:
        observed += [int(e.get("batch_size") or 0) for e in c.stage1_batches]
    return {
        "completed": len(completed),
        "batch_sizes": [int(e.get("batch_size") or 0) for e in completed],
        "batch_composition_sizes": [int(e.get("batch_size") or 0) for e in composition],
        "max_observed_batch_size": max(observed, default=0),
        "batch_composition_scheduled_tokens": [int(e.get("scheduled_tokens") or 0)
                                               for e in composition],
        "generation_latency_ms": _p50_p95([float(e.get("stage_gen_time_ms") or 0.0)
                                           for e in completed]),
        "postprocess_latency_ms": _p50_p95([float(e.get("postprocess_time_ms") or 0.0)
                                            for e in c.postprocess.get(stage_id, [])]),
    }


def build_summary(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Throughput, latency percentiles, per-stage batches, GPU use and queue depths of a trace."""
    records = list(records)
    completed = [r for r in records if r.get("event") == "request_completed"]
    latencies = [float(r["e2e_total_ms"]) for r in completed if r.get("e2e_total_ms") is not None]
    completion_times = [float(r["ts_unix_s"]) for r in completed if r.get("ts_unix_s") is not None]
    starts = [float(r["ts_unix_s"]) - float(r["e2e_total_ms"]) / 1000.0 for r in completed
              if r.get("ts_unix_s") is not None and r.get("e2e_total_ms") is not None]
    collected = _Collected()
    for record in records:
        collected.add(record)
    duration_s = max(completion_times) - min(starts) if completion_times and starts else 0.0
    summary: dict[str, Any] = {
        "completed_requests": len(completed),
        "completed_requests_per_s": len(completed) / duration_s if duration_s > 0 else 0.0,
        "e2e_latency_ms": {**_p50_p95(latencies), "mean": _mean(latencies)},
        "tts_output_outcomes": dict(sorted(collected.tts_outcomes.items())),
        "stage_configurations": {
            sid: {k: v for k, v in config.items() if k in _STAGE_CONFIG_KEYS}
            for sid, config in sorted(collected.configs.items())},
        "stage1_queue_delay_ms": _p50_p95(collected.stage1_queue_delays),
        "stages": {}, "gpus": {}, "queue": {},
    }
    for index, samples in sorted(collected.gpu_samples.items()):
        summary["gpus"][str(index)] = {
            "peak_memory_used_bytes": max((int(s.get("memory_used_bytes") or 0) for s in samples),
                                          default=0),
            "mean_utilization_pct": _mean([float(s.get("gpu_utilization_pct") or 0.0)
                                           for s in samples])}
    stage_ids = set(collected.stage_events) | set(collected.composition)
    if collected.stage1_batches:
        stage_ids.add(1)
    for stage_id in sorted(stage_ids):
        stage = _stage_summary(collected, stage_id)
        devices = _device_indices(
            summary["stage_configurations"].get(str(stage_id), {}).get("devices"))
        stage["devices"] = devices
        stage["gpus"] = {str(d): summary["gpus"].get(str(d), {}) for d in devices}
        summary["stages"][str(stage_id)] = stage
    for key, values in sorted(collected.queue.items()):
        summary["queue"][key] = {"max": max(values), "mean": statistics.fmean(values)}
    if collected.stage_intervals.get(0) and collected.stage_intervals.get(1):
        overlap = _overlap_seconds(_merge_intervals(collected.stage_intervals[0]),
                                   _merge_intervals(collected.stage_intervals[1]))
        summary["cross_stage_overlap_ms"] = overlap * 1000.0
    return summary


# ---- Command line ----

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    sample = commands.add_parser("sample", help="sample GPUs and /metrics into the trace, forever")
    sample.add_argument("--devices", default="0,1")
    sample.add_argument("--metrics-url", default=None)
    sample.add_argument("--interval-s", type=float, default=0.5)
    sample.add_argument("--timeout-s", type=float, default=2.0)
    snapshot = commands.add_parser("snapshot-config", help="record a stage config's stages")
    snapshot.add_argument("--stage-config", type=Path, required=True)
    summary = commands.add_parser("summary", help="summarise a trace file as JSON")
    summary.add_argument("--trace-path", type=Path, required=True)
    summary.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "sample":
        devices = [int(d) for d in args.devices.split(",") if d.strip()]
        run_sampler(devices, args.metrics_url, args.interval_s, args.timeout_s)
    elif args.command == "snapshot-config":
        from omegaconf import OmegaConf

        config = OmegaConf.to_container(OmegaConf.load(args.stage_config), resolve=True)
        emit_stage_config_snapshot(config if isinstance(config, Mapping) else {},
                                   str(args.stage_config))
    else:
        text = json.dumps(build_summary(_load_records(args.trace_path)), indent=2,
                          sort_keys=True)
        if args.output is None:
            print(text)
        else:
            args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
