"""Serves the modelmetrics families from prometheus_client's registry through one collector.

``install()`` (run when ``modelmetrics.vllm_omni.metrics`` is imported and prometheus_client is
installed) registers a single ``ModelmetricsCollector`` in ``prometheus_client.REGISTRY``. Each
``collect()`` reads every family's children from C++ (GIL released) and yields
``prometheus_client`` ``Metric`` objects shaped exactly as prometheus_client's own Counter,
Gauge and Histogram yield them -- sample names, label dicts, ``le`` spelled by
``floatToGoString``, ``_created`` samples when prometheus_client writes them -- so
``generate_latest`` prints the same text upstream's families print.

In a process of a multiprocess service (PROMETHEUS_MULTIPROC_DIR), ``install()`` also points
``prometheus_client.multiprocess`` at modelmetrics' shared-segment collector, so a
``MultiProcessCollector`` registry (vLLM's ``get_prometheus_registry()``) shows every process's
families.

The collector has no ``_name`` attribute, so vLLM's ``unregister_vllm_metrics()`` (which drops
collectors whose ``_name`` contains "vllm") never removes it.
"""

import threading

from . import _native
from ._exposition import created_series_enabled

_lock = threading.Lock()
_installed = None  # (collector, registry)


class ModelmetricsCollector:
    """prometheus_client collector over the process registry of ``modelmetrics._native``."""

    def __init__(self):
        from prometheus_client.metrics_core import Metric
        from prometheus_client.samples import Sample
        from prometheus_client.utils import floatToGoString

        self._metric = Metric
        self._sample = Sample
        self._float = floatToGoString
        self._le = {}  # bucket bounds -> their `le` strings, per family

    def describe(self):
        # Reserve every catalog name, registered yet or not, so prometheus_client refuses a second
        # copy of these families (for example upstream's modules imported without install()).
        Metric = self._metric
        return [Metric(row[0], row[2], row[1]) for row in _native.catalog()]

    def collect(self):
        Metric, Sample = self._metric, self._sample
        created = created_series_enabled()
        for name, typ, help_text, labelnames, buckets, children in _native.collect():
            metric = Metric(name, help_text, typ)
            samples = metric.samples
            if typ == "histogram":
                le = self._le.get(name)
                if le is None or len(le) != len(buckets) + 1:
                    le = [self._float(b) for b in buckets] + ["+Inf"]
                    self._le[name] = le
                bucket_name, count_name, sum_name = name + "_bucket", name + "_count", name + "_sum"
                for values, created_ts, cumulative, count, total in children:
                    labels = dict(zip(labelnames, values))
                    for bound, acc in zip(le, cumulative):
                        samples.append(Sample(bucket_name, {**labels, "le": bound}, acc))
                    samples.append(Sample(count_name, labels, count))
                    samples.append(Sample(sum_name, labels, total))
                    if created:
                        samples.append(Sample(name + "_created", labels, created_ts))
            elif typ == "counter":
                total_name = name + "_total"
                for values, created_ts, value in children:
                    labels = dict(zip(labelnames, values))
                    samples.append(Sample(total_name, labels, value))
                    if created:
                        samples.append(Sample(name + "_created", labels, created_ts))
            else:
                for values, _created_ts, value in children:
                    samples.append(Sample(name, dict(zip(labelnames, values)), value))
            yield metric


def install(registry=None):
    """Registers the collector once (in ``registry``, default prometheus_client's ``REGISTRY``);
    returns it. Raises ImportError when prometheus_client is not installed."""
    global _installed
    with _lock:
        if _installed is not None:
            return _installed[0]
        if registry is None:
            from prometheus_client import REGISTRY as registry

        collector = ModelmetricsCollector()
        registry.register(collector)
        _installed = (collector, registry)
        if _native.multiprocess_segment() is not None:
            # Several processes: prometheus_client.multiprocess (which vLLM's /metrics uses)
            # must read the shared segment these families record into.
            from .prometheus_client.multiprocess import patch_prometheus_client

            patch_prometheus_client()
        return collector


def uninstall():
    """Removes the collector installed by ``install()`` (for tests and embedders)."""
    global _installed
    with _lock:
        if _installed is None:
            return
        collector, registry = _installed
        registry.unregister(collector)
        _installed = None


def installed():
    """The installed collector, or None."""
    return None if _installed is None else _installed[0]
