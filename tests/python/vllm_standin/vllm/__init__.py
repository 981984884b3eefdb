"""A stand-in for vLLM's metrics path, for tests (vLLM itself needs torch, which this machine
cannot install).

Written from reading vLLM main's ``vllm/v1/metrics/loggers.py`` (August 2026) and its helpers
(``vllm/v1/metrics/perf.py``, ``vllm/v1/spec_decode/metrics.py``,
``vllm/distributed/kv_transfer/kv_connector/v1/metrics.py``, ``vllm/v1/metrics/stats.py``,
``vllm/config``), and ``shared/spec/reference/vllm-stat-logger.md``: the modules and names a stat
logger wrap imports, ``PrometheusStatLogger`` building every family through its six class slots
in the call shapes upstream uses (``labelnames`` lists, ``labelnames + [...]``,
``labels(model_name, str(idx), reason)``, ``labels(engine=idx, ...)``, ``labels(**info)`` over
``metrics_info().keys()``, ``create_metric_per_engine``, ``set_to_current_time``), and ``record()``
writing what upstream writes. Only what the metrics path touches is here.
"""
