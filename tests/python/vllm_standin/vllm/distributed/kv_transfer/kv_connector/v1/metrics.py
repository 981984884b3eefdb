"""KVConnectorProm: the configured connector's families, built through the helper's three
slots (the connector class receives them as {Gauge: ..., Counter: ..., Histogram: ...}); no
connector, no families. The stand-in knows NIXL's."""

import prometheus_client

from vllm.v1.metrics.utils import create_metric_per_engine

_NIXL_HISTOGRAMS = (
    ("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.",
     [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0], "transfer_duration"),
    ("vllm:nixl_post_time_seconds", "Histogram of transfer post time for NIXL KV Cache transfers.",
     [1e-6, 1e-5, 1e-4, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5], "post_duration"),
    ("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.",
     [2 ** k for k in range(11, 34, 2)], "bytes_transferred"),
    ("vllm:nixl_num_descriptors", "Histogram of number of descriptors per NIXL  KV Cache transfers.",
     [10, 20, 30, 50, 75, 100, 200, 400, 1000, 2000, 4000, 10000, 20000, 50000], "num_descriptors"),
)
_NIXL_COUNTERS = (
    ("vllm:nixl_num_failed_transfers", "Number of failed NIXL KV Cache transfers.",
     "num_failed_transfers"),
    ("vllm:nixl_num_failed_notifications", "Number of failed NIXL KV Cache notifications.",
     "num_failed_notifications"),
)


class NixlPromMetrics:
    def __init__(self, metric_types, labelnames, per_engine_labelvalues):
        histogram, counter = metric_types[prometheus_client.Histogram], metric_types[
            prometheus_client.Counter]
        self.histograms = {key: create_metric_per_engine(
            histogram(name=name, documentation=doc, buckets=buckets, labelnames=labelnames),
            per_engine_labelvalues) for name, doc, buckets, key in _NIXL_HISTOGRAMS}
        self.counters = {key: create_metric_per_engine(
            counter(name=name, documentation=doc, labelnames=labelnames), per_engine_labelvalues)
            for name, doc, key in _NIXL_COUNTERS}

    def observe(self, data, engine_idx):
        for key, per_engine in self.histograms.items():
            for value in data.get(key, ()):
                per_engine[engine_idx].observe(value)
        for key, per_engine in self.counters.items():
            per_engine[engine_idx].inc(data.get(key, 0))


_CONNECTORS = {"NixlConnector": NixlPromMetrics}


class KVConnectorProm:
    _gauge_cls = prometheus_client.Gauge
    _counter_cls = prometheus_client.Counter
    _histogram_cls = prometheus_client.Histogram

    def __init__(self, vllm_config, labelnames, per_engine_labelvalues):
        config = vllm_config.kv_transfer_config
        connector = None if config is None else _CONNECTORS.get(config.kv_connector)
        metric_types = {prometheus_client.Gauge: self._gauge_cls,
                        prometheus_client.Counter: self._counter_cls,
                        prometheus_client.Histogram: self._histogram_cls}
        self.prom_metrics = (None if connector is None
                             else connector(metric_types, labelnames, per_engine_labelvalues))

    def observe(self, transfer_stats_data, engine_idx=0):
        if self.prom_metrics is not None:
            self.prom_metrics.observe(transfer_stats_data, engine_idx)
