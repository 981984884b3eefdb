"""vLLM's own Prometheus metrics on modelmetrics' native instruments, with one line:

    import modelmetrics.vllm; modelmetrics.vllm.install()     # before vLLM builds its loggers

vLLM's ``PrometheusStatLogger`` builds every family through the class slots ``_gauge_cls``,
``_counter_cls`` and ``_histogram_cls``, and its helpers (``PerfMetricsProm``,
``SpecDecodingProm``, ``KVConnectorProm``) through their own; ``install()`` points every slot that
still holds prometheus_client's class at ``modelmetrics.prometheus_client``'s, now for modules
already imported and at import for the others. Families, HELP text, buckets and ``record()`` stay
vLLM's, the ``/metrics`` text stays the same, and each observation costs what a native
instrument costs. A slot a subclass or plugin set to its own class is left alone.

With ``PROMETHEUS_MULTIPROC_DIR`` set (vLLM's ``--api-server-count`` > 1) the native instruments
record into the service's shared segment, and install() points ``prometheus_client.multiprocess``
at modelmetrics' collector, so the ``MultiProcessCollector`` registry vLLM serves ``/metrics``
from (``get_prometheus_registry()``) shows every API server process's values.
"""

import threading

from .._import_hooks import after_import

# module -> class -> slots, as vLLM main names them.
_SLOTS = {
    "vllm.v1.metrics.loggers": {"PrometheusStatLogger": ("_gauge_cls", "_counter_cls",
                                                         "_histogram_cls")},
    "vllm.v1.metrics.perf": {"PerfMetricsProm": ("_counter_cls",)},
    "vllm.v1.spec_decode.metrics": {"SpecDecodingProm": ("_counter_cls",)},
    "vllm.distributed.kv_transfer.kv_connector.v1.metrics": {
        "KVConnectorProm": ("_gauge_cls", "_counter_cls", "_histogram_cls")},
}
_KIND = {"_gauge_cls": "Gauge", "_counter_cls": "Counter", "_histogram_cls": "Histogram"}
_lock = threading.Lock()
_state = {"installed": False}


def _patch(module):
    import prometheus_client

    from .. import prometheus_client as fast

    for class_name, slots in _SLOTS[module.__name__].items():
        cls = getattr(module, class_name, None)
        if cls is None:
            continue
        for slot in slots:
            kind = _KIND[slot]
            if getattr(cls, slot, None) is getattr(prometheus_client, kind):
                setattr(cls, slot, getattr(fast, kind))


def install() -> bool:
    """Switches vLLM's metric slots to the native instruments (idempotent). Returns whether
    they are switched."""
    with _lock:
        if _state["installed"]:
            return True
        from ..prometheus_client.multiprocess import patch_prometheus_client

        patch_prometheus_client()  # several processes: /metrics reads the shared segment
        after_import({name: _patch for name in _SLOTS})
        _state["installed"] = True
        return True


def installed() -> bool:
    return _state["installed"]


__all__ = ["install", "installed"]
