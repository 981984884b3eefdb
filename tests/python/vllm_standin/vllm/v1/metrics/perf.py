"""PerfMetricsProm: the MFU counters, built through its own `_counter_cls` slot."""

from dataclasses import dataclass

import prometheus_client

from vllm.v1.metrics.utils import create_metric_per_engine


@dataclass
class PerfStats:
    num_flops_per_gpu: int = 0
    num_read_bytes_per_gpu: int = 0
    num_write_bytes_per_gpu: int = 0


class PerfMetricsProm:
    _counter_cls = prometheus_client.Counter

    def __init__(self, vllm_config, labelnames, per_engine_labelvalues):
        def counter(name, what):
            return create_metric_per_engine(self._counter_cls(
                name=name,
                documentation=f"Estimated number of {what} per GPU (for Model Flops Utilization "
                              "calculations).",
                labelnames=labelnames), per_engine_labelvalues)

        self.counter_flops = counter("vllm:estimated_flops_per_gpu_total",
                                     "floating point operations")
        self.counter_read_bytes = counter("vllm:estimated_read_bytes_per_gpu_total",
                                          "bytes read from memory")
        self.counter_write_bytes = counter("vllm:estimated_write_bytes_per_gpu_total",
                                           "bytes written to memory")

    def observe(self, perf_stats, engine_idx=0):
        self.counter_flops[engine_idx].inc(perf_stats.num_flops_per_gpu)
        self.counter_read_bytes[engine_idx].inc(perf_stats.num_read_bytes_per_gpu)
        self.counter_write_bytes[engine_idx].inc(perf_stats.num_write_bytes_per_gpu)
