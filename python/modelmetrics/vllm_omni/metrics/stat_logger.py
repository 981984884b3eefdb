"""The per-engine ``vllm:*`` families by stage and replica: vLLM-Omni's
``vllm_omni.metrics.stat_logger`` (§3.6, §4.8-§4.12 of pipeline-metrics-behaviour.md), built the
way upstream builds it.

**With vLLM importable**, ``OmniPrometheusStatLogger`` subclasses vLLM's own
``PrometheusStatLogger`` and fills its class slots with ``_RelabelGauge``,
``_RelabelCounter`` and ``_RelabelHistogram`` (modelmetrics.prometheus_client's native
instruments with ``engine`` rewritten to ``stage, replica``) and the ``_Omni*Prom`` helper
subclasses: every family, HELP text, bucket list and ``record()`` behaviour is the installed
vLLM's, so the catalog follows vLLM releases by construction, and each observation costs what a
native instrument costs. Upstream's bug is fixed rather than copied: its ``_rewrite_labelnames``
rebuilds the container's type, which raises ``TypeError: cannot create 'dict_keys' instances``
for ``labelnames=metrics_info.keys()``, so upstream never exports ``vllm:cache_config_info``;
here any container that is not a tuple becomes a list, and the family is exported.

**Without vLLM** (tools, tests, a pipeline process that runs no vLLM engine), the same names
exist and ``OmniPrometheusStatLogger`` is the native fallback: the C++ engine table, which
follows vLLM main's logger (docs/pipeline-behaviour.md §3.6: waiting by reason,
skipped waiting, computed-only iteration tokens, token-count buckets from ``max_model_len``,
NIXL's families only with a NIXL connector configured, ``cache_config_info`` with whatever keys
``metrics_info()`` returns, no throttle in the logger), with ``engine`` replaced by ``stage,
replica``; its ``record()`` reads vLLM's ``SchedulerStats`` / ``IterationStats`` objects
duck-typed. What the fallback does differently from vLLM's logger:

* ``record_sleep_state`` may name one engine (a stage can sleep alone);
* an engine index outside the map raises KeyError, as upstream's ``_engine_to_stage_replica``;
* no spec-decoding, LoRA, kv-block-lifetime or corrupted-request families (the engine table has
  no source for them; vLLM's own logger, used when vLLM is installed, has them).

Building a logger drops the previous logger's ``vllm:*`` families and keeps every
``vllm_omni:*`` family (the scoped unregister, §4.10). With ``log_stats=False`` the fallback
registers nothing and every method returns at once (upstream builds no logger then).

Section numbers (§n) cite docs/pipeline-behaviour.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from modelmetrics import _native

try:  # the fast instruments need prometheus_client (its registry and exposition)
    from modelmetrics.prometheus_client import Counter as _Counter
    from modelmetrics.prometheus_client import Gauge as _Gauge
    from modelmetrics.prometheus_client import Histogram as _Histogram
except ImportError:
    _Counter = _Gauge = _Histogram = None

try:
    from vllm.distributed.kv_transfer.kv_connector.v1.metrics import KVConnectorProm
    from vllm.v1.metrics.loggers import PrometheusStatLogger
    from vllm.v1.metrics.perf import PerfMetricsProm
    from vllm.v1.spec_decode.metrics import SpecDecodingProm

    VLLM_AVAILABLE = _Gauge is not None
except ImportError:
    VLLM_AVAILABLE = False

# Flat engine index -> (stage, replica) label values; refilled by each logger (§4.12). A module
# global because the instruments upstream's __init__ builds never see their logger.
_ENGINE_INDEX_MAP: dict[int, tuple[str, str]] = {}


def _rewrite_labelnames(labelnames):
    """``engine`` replaced in place by ``stage, replica``. A tuple stays a tuple and any other
    container becomes a list (upstream rebuilds the container's own type, which fails for the
    ``dict_keys`` vLLM passes for cache_config_info); None and names without ``engine`` pass
    through unchanged."""
    if labelnames is None:
        return None
    names = list(labelnames)
    if "engine" not in names:
        return labelnames
    out = []
    for name in names:
        out.extend(("stage", "replica") if name == "engine" else (name,))
    return tuple(out) if isinstance(labelnames, tuple) else out


def _engine_to_stage_replica(engine_value) -> tuple[str, str]:
    """The (stage, replica) of a flat engine index (int or decimal str); KeyError if unknown."""
    return _ENGINE_INDEX_MAP[int(engine_value)]


class _RelabelMixin:
    """Rewrites ``labelnames`` at family creation and translates ``labels()`` calls in every
    shape vLLM's loggers use: positional values already of the rewritten length (the
    ``per_engine_labelvalues`` children) pass through; positional values of the original shape
    get ``(stage, replica)`` spliced in for the engine value; an ``engine=`` keyword becomes
    ``stage=`` and ``replica=``; families without ``engine`` pass through."""

    def __init__(self, *args, **kwargs):
        if "labelnames" in kwargs:
            original = kwargs["labelnames"]
        elif len(args) > 2:
            original = args[2]
        else:
            original = None
        names = [] if original is None else list(original)  # may be a one-shot iterator
        self._engine_label_index = names.index("engine") if "engine" in names else -1
        if self._engine_label_index >= 0:
            rewritten = _rewrite_labelnames(original if isinstance(original, tuple) else names)
            if "labelnames" in kwargs:
                kwargs["labelnames"] = rewritten
            else:
                args = (*args[:2], rewritten, *args[3:])
        super().__init__(*args, **kwargs)

    def labels(self, *args, **kwargs):
        index = self._engine_label_index
        if index >= 0:
            if args:
                if len(args) != len(self._labelnames) and index < len(args):
                    stage, replica = _engine_to_stage_replica(args[index])
                    args = (*args[:index], stage, replica, *args[index + 1:])
            elif "engine" in kwargs:
                kwargs["stage"], kwargs["replica"] = _engine_to_stage_replica(kwargs.pop("engine"))
        return super().labels(*args, **kwargs)


if _Gauge is not None:

    class _RelabelGauge(_RelabelMixin, _Gauge):
        pass

    class _RelabelCounter(_RelabelMixin, _Counter):
        pass

    class _RelabelHistogram(_RelabelMixin, _Histogram):
        pass

else:  # no prometheus_client: the names exist, the native fallback needs none of them
    _RelabelGauge = _RelabelCounter = _RelabelHistogram = None


# vLLM's three helpers build their own families through their own slots, with the raw
# ["model_name", "engine"] label names and the rewritten per-engine values: their slots must
# relabel too.
class _OmniPerfMetricsProm(PerfMetricsProm if VLLM_AVAILABLE else object):
    _counter_cls = _RelabelCounter


class _OmniSpecDecodingProm(SpecDecodingProm if VLLM_AVAILABLE else object):
    _counter_cls = _RelabelCounter


class _OmniKVConnectorProm(KVConnectorProm if VLLM_AVAILABLE else object):
    _gauge_cls = _RelabelGauge
    _counter_cls = _RelabelCounter
    _histogram_cls = _RelabelHistogram


class _OmniLoggerSlots:
    """What both variants of OmniPrometheusStatLogger share: upstream's class slots and the
    stage/replica properties."""

    _gauge_cls = _RelabelGauge
    _counter_cls = _RelabelCounter
    _histogram_cls = _RelabelHistogram
    _perf_metrics_cls = _OmniPerfMetricsProm
    _spec_decoding_cls = _OmniSpecDecodingProm
    _kv_connector_cls = _OmniKVConnectorProm

    @property
    def stage_replica_map(self) -> dict[int, tuple[str, str]]:
        return self._stage_replica_map

    @property
    def per_engine_labelvalues(self) -> dict[int, list[object]]:
        return self._omni_per_engine_labelvalues

    @per_engine_labelvalues.setter
    def per_engine_labelvalues(self, value) -> None:
        # vLLM's {idx: [model_name, str(idx)]} -> {idx: [model_name, stage, replica]}, which
        # create_metric_per_engine fans into labels(*values) of the rewritten families.
        rewritten = {}
        for idx, values in dict(value).items():
            stage, replica = self._stage_replica_map[idx]
            rewritten[idx] = [values[0], stage, replica]
        self._omni_per_engine_labelvalues = rewritten


def _fill_engine_index_map(stage_replica_map):
    _ENGINE_INDEX_MAP.clear()
    _ENGINE_INDEX_MAP.update(
        {int(k): (str(v[0]), str(v[1])) for k, v in dict(stage_replica_map).items()})


if VLLM_AVAILABLE:

    class OmniPrometheusStatLogger(_OmniLoggerSlots, PrometheusStatLogger):
        """vLLM's PrometheusStatLogger with ``engine`` replaced by ``stage, replica``, on native
        instruments. ``stage_replica_map`` is {flat engine index: (stage, replica)}, the
        orchestrator's numbering (build_stage_replica_map)."""

        def __init__(self, vllm_config, stage_replica_map):
            self._stage_replica_map = stage_replica_map
            _fill_engine_index_map(stage_replica_map)
            super().__init__(vllm_config=vllm_config,
                             engine_indexes=list(stage_replica_map.keys()))

SCHEDULER_STATS_INTERVAL_S = 1.0


def build_stage_replica_map(replicas_per_stage) -> dict[int, tuple[str, str]]:
    """The orchestrator's flat numbering: stages in order, replicas within a stage, from 0; pools
    [1, 2, 1] give {0: ("0","0"), 1: ("1","0"), 2: ("1","1"), 3: ("2","0")}."""
    out, flat = {}, 0
    for stage, replicas in enumerate(replicas_per_stage):
        for replica in range(int(replicas)):
            out[flat] = (str(stage), str(replica))
            flat += 1
    return out


class SchedulerStatsThrottle:
    """One scheduler's ``make_stats()`` gate (§4.9): ``admit()`` is False while less than a
    second has passed since the last admitted call (monotonic), else it records now and is True.
    The state is per scheduler, i.e. per (stage, replica); there is no global throttle."""

    __slots__ = ("_interval", "_last", "_lock")

    def __init__(self, interval_s: float = SCHEDULER_STATS_INTERVAL_S):
        self._interval = interval_s
        self._last = 0.0
        self._lock = threading.Lock()

    def admit(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            if now - self._last < self._interval:
                return False
            self._last = now
            return True


class OmniSchedulerStatsMixin:
    """Mix into a vLLM scheduler class (before it in the bases) to throttle ``make_stats()`` to
    1 Hz per instance, as vLLM-Omni's ``omni_scheduler_mixin`` does."""

    def make_stats(self, *args, **kwargs):
        throttle = self.__dict__.get("_omni_stats_throttle")
        if throttle is None:
            throttle = self.__dict__.setdefault("_omni_stats_throttle", SchedulerStatsThrottle())
        if not throttle.admit():
            return None
        return super().make_stats(*args, **kwargs)


def _get(obj, name, default=None):
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _cache_pair(stats):
    return None if stats is None else (_get(stats, "queries", 0), _get(stats, "hits", 0))


def _kv_connector(stats):
    if stats is None:
        return None
    data = _get(stats, "data", stats)  # vLLM's NixlKVConnectorStats keeps its lists in .data

    def total(key):
        value = _get(data, key, 0)
        return sum(value) if isinstance(value, (list, tuple)) else value

    return (list(_get(data, "transfer_duration", ()) or ()), list(_get(data, "post_duration", ()) or ()),
            list(_get(data, "bytes_transferred", ()) or ()), list(_get(data, "num_descriptors", ()) or ()),
            total("num_failed_transfers"), total("num_failed_notifications"),
            total("num_kv_expired_reqs"))


def _scheduler_tuple(s):
    perf = _get(s, "perf_stats")
    return (
        _get(s, "num_running_reqs", 0), _get(s, "num_waiting_reqs", 0),
        _get(s, "num_skipped_waiting_reqs", 0), float(_get(s, "kv_cache_usage", 0.0) or 0.0),
        _get(_get(s, "prefix_cache_stats"), "queries", 0), _get(_get(s, "prefix_cache_stats"), "hits", 0),
        _cache_pair(_get(s, "connector_prefix_cache_stats")),
        _kv_connector(_get(s, "kv_connector_stats")),
        None if perf is None else (float(_get(perf, "num_flops_per_gpu", 0.0)),
                                   float(_get(perf, "num_read_bytes_per_gpu", 0.0)),
                                   float(_get(perf, "num_write_bytes_per_gpu", 0.0))),
    )


def _finished_tuple(f):
    return (
        str(_get(f, "finish_reason", "stop")), float(_get(f, "e2e_latency", 0.0)),
        _get(f, "num_prompt_tokens", 0), _get(f, "num_generation_tokens", 0),
        _get(f, "max_tokens_param"), float(_get(f, "queued_time", 0.0)),
        float(_get(f, "prefill_time", 0.0)), float(_get(f, "inference_time", 0.0)),
        float(_get(f, "decode_time", 0.0)), float(_get(f, "mean_time_per_output_token", 0.0)),
        _get(f, "num_cached_tokens", 0), _get(f, "num_preemptions", 0) or 0,
    )


def _iteration_tuple(it):
    sources = _get(it, "prompt_token_stats")
    return (
        _get(it, "num_generation_tokens", 0), _get(it, "num_prompt_tokens", 0),
        _get(it, "num_preempted_reqs", 0),
        None if sources is None else (
            _get(sources, "computed", 0), _get(sources, "local_cache_hit", 0),
            _get(sources, "external_kv_transfer", 0), _get(sources, "cached_tokens", 0)),
        [_finished_tuple(f) for f in (_get(it, "finished_requests", ()) or ())],
        list(_get(it, "max_num_generation_tokens_iter", ()) or ()),
        list(_get(it, "n_params_iter", ()) or ()),
        list(_get(it, "time_to_first_tokens_iter", ()) or ()),
        list(_get(it, "inter_token_latencies_iter", ()) or ()),
    )


def _served_model_name(vllm_config):
    model_config = _get(vllm_config, "model_config")
    name = _get(model_config, "served_model_name") or _get(model_config, "model")
    if isinstance(name, (list, tuple)):
        name = name[0] if name else None
    return name


class _NativeOmniPrometheusStatLogger(_OmniLoggerSlots):
    """The fallback without vLLM: the C++ engine table, relabelled to (stage, replica) by
    ``stage_replica_map`` ({flat engine index: (stage, replica)}, the orchestrator's
    numbering)."""

    def __init__(self, vllm_config=None, stage_replica_map=None, *, model_name: str | None = None,
                 log_stats: bool = True):
        stage_replica_map = stage_replica_map or {0: ("0", "0")}
        self._stage_replica_map = stage_replica_map
        self.vllm_config = vllm_config
        self.log_stats = bool(log_stats)
        self._model = model_name or _served_model_name(vllm_config) or "unknown"
        _fill_engine_index_map(stage_replica_map)
        self._map = dict(_ENGINE_INDEX_MAP)
        self.engine_indexes = sorted(self._map)
        self._dense = {flat: i for i, flat in enumerate(self.engine_indexes)}
        self._logger = None
        if self.log_stats:
            transfer = _get(vllm_config, "kv_transfer_config")
            self._logger = _native.EngineStatsLogger(
                self._model, [self._map[flat] for flat in self.engine_indexes],
                max_model_len=_get(_get(vllm_config, "model_config"), "max_model_len"),
                kv_connector=_get(transfer, "kv_connector"))
        self.per_engine_labelvalues = {flat: [self._model, str(flat)] for flat in self.engine_indexes}

    def _index(self, engine_idx):
        try:
            return self._dense[int(engine_idx)]
        except (KeyError, ValueError, TypeError):
            raise KeyError(f"engine {engine_idx!r} is not in the stage/replica map") from None

    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx: int = 0):
        """One engine step: SchedulerStats (already gated by the scheduler's make_stats()),
        IterationStats (tokens, finished requests, TTFT, ITL, ...), and vLLM's separate
        multimodal cache stats."""
        if self._logger is None:
            return
        index = self._index(engine_idx)
        self._logger.record(
            index,
            None if scheduler_stats is None else _scheduler_tuple(scheduler_stats),
            None if iteration_stats is None else _iteration_tuple(iteration_stats),
            _cache_pair(mm_cache_stats),
        )

    def record_sleep_state(self, sleep: int = 0, level: int = 0, engine_idx: int | None = None):
        if self._logger is None:
            return
        self._logger.record_sleep_state(int(sleep), int(level),
                                        None if engine_idx is None else self._index(engine_idx))

    def log_engine_initialized(self):
        """cache_config_info from ``vllm_config.cache_config.metrics_info()`` when present."""
        if self._logger is None:
            return
        cache_config = _get(self.vllm_config, "cache_config")
        info = getattr(cache_config, "metrics_info", None)
        if callable(info):
            self._logger.log_engine_initialized([(k, str(v)) for k, v in info().items()])


if not VLLM_AVAILABLE:
    OmniPrometheusStatLogger = _NativeOmniPrometheusStatLogger

__all__ = [
    "OmniPrometheusStatLogger",
    "OmniSchedulerStatsMixin",
    "SchedulerStatsThrottle",
    "build_stage_replica_map",
    "VLLM_AVAILABLE",
    "_ENGINE_INDEX_MAP",
    "_OmniKVConnectorProm",
    "_OmniPerfMetricsProm",
    "_OmniSpecDecodingProm",
    "_RelabelCounter",
    "_RelabelGauge",
    "_RelabelHistogram",
    "_RelabelMixin",
    "_engine_to_stage_replica",
    "_rewrite_labelnames",
]
