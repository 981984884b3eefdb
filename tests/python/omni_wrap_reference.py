"""vLLM-Omni's stat-logger wrap on plain prometheus_client, for comparison (the tests' reference
implementation of upstream's semantics, written from vLLM-Omni's ``stat_logger.py``): relabelled
Gauge/Counter/Histogram subclasses, helper subclasses and the per_engine_labelvalues rewrite.
Two changes so it runs at all here: Gauge accepts prometheus_client 0.18's ``mostrecent`` (Debian
ships 0.16), and a ``dict_keys`` of label names becomes a list (upstream raises TypeError there,
so it never exports cache_config_info)."""

import prometheus_client as pc
from vllm.distributed.kv_transfer.kv_connector.v1.metrics import KVConnectorProm
from vllm.v1.metrics.loggers import PrometheusStatLogger
from vllm.v1.metrics.perf import PerfMetricsProm
from vllm.v1.spec_decode.metrics import SpecDecodingProm

ENGINE_MAP = {}


class Gauge018(pc.Gauge):
    """prometheus_client 0.18's Gauge modes (the extra ones only matter in multiprocess mode)."""

    _MULTIPROC_MODES = pc.Gauge._MULTIPROC_MODES | {"mostrecent", "livemostrecent"}


def rewrite(names):
    names = list(names)
    out = []
    for n in names:
        out.extend(("stage", "replica") if n == "engine" else (n,))
    return out


class Relabel:
    def __init__(self, *args, **kwargs):
        names = list(kwargs.get("labelnames") or ())
        self._engine_at = names.index("engine") if "engine" in names else -1
        if self._engine_at >= 0:
            kwargs["labelnames"] = rewrite(names)
        super().__init__(*args, **kwargs)

    def labels(self, *args, **kwargs):
        if self._engine_at >= 0:
            if args and len(args) != len(self._labelnames):
                i = self._engine_at
                args = (*args[:i], *ENGINE_MAP[int(args[i])], *args[i + 1:])
            elif "engine" in kwargs:
                kwargs["stage"], kwargs["replica"] = ENGINE_MAP[int(kwargs.pop("engine"))]
        return super().labels(*args, **kwargs)


class RGauge(Relabel, Gauge018):
    pass


class RCounter(Relabel, pc.Counter):
    pass


class RHistogram(Relabel, pc.Histogram):
    pass


class Perf(PerfMetricsProm):
    _counter_cls = RCounter


class Spec(SpecDecodingProm):
    _counter_cls = RCounter


class KV(KVConnectorProm):
    _gauge_cls, _counter_cls, _histogram_cls = RGauge, RCounter, RHistogram


class OmniLogger(PrometheusStatLogger):
    _gauge_cls, _counter_cls, _histogram_cls = RGauge, RCounter, RHistogram
    _perf_metrics_cls, _spec_decoding_cls, _kv_connector_cls = Perf, Spec, KV

    def __init__(self, vllm_config, stage_replica_map):
        self._map = stage_replica_map
        ENGINE_MAP.clear()
        ENGINE_MAP.update(stage_replica_map)
        super().__init__(vllm_config=vllm_config, engine_indexes=list(stage_replica_map))

    @property
    def per_engine_labelvalues(self):
        return self._values

    @per_engine_labelvalues.setter
    def per_engine_labelvalues(self, value):
        self._values = {idx: [v[0], *self._map[idx]] for idx, v in value.items()}


class PlainPerf(PerfMetricsProm):
    _counter_cls = pc.Counter


class PlainSpec(SpecDecodingProm):
    _counter_cls = pc.Counter


class PlainKV(KVConnectorProm):
    _gauge_cls, _counter_cls, _histogram_cls = Gauge018, pc.Counter, pc.Histogram


class PlainLogger(PrometheusStatLogger):
    """vLLM's own logger on prometheus_client (0.18 gauge modes), whatever its slots hold now."""

    _gauge_cls, _counter_cls, _histogram_cls = Gauge018, pc.Counter, pc.Histogram
    _perf_metrics_cls, _spec_decoding_cls, _kv_connector_cls = PlainPerf, PlainSpec, PlainKV
