"""``generate_latest`` that writes modelmetrics instruments natively.

A registry's collectors are written in registration order, as prometheus_client's
``generate_latest`` writes them: runs of modelmetrics instruments through the C++ writer (with
the GIL released), anything else (process, platform and GC collectors, custom collectors,
prometheus_client's own metrics) through prometheus_client's writer, a MultiProcessCollector through the C++ merge of the shared segment.
The bytes equal what prometheus_client prints for the same registry
(tests/python/test_client_conformance.py).
"""

from prometheus_client import exposition as _pc_exposition
from prometheus_client.registry import REGISTRY, CollectorRegistry

from .. import _native
from .._exposition import created_series_enabled
from .metrics import MetricWrapperBase, _refresh_function_gauges
from .multiprocess import MultiProcessCollector

CONTENT_TYPE_LATEST = _pc_exposition.CONTENT_TYPE_LATEST


class _One:
    """One collector as a registry, for prometheus_client's writer."""

    __slots__ = ("_collector",)

    def __init__(self, collector):
        self._collector = collector

    def collect(self):
        return self._collector.collect()


def _collectors(registry):
    """The registry's collectors in registration order, or None when it is not a plain
    CollectorRegistry (a restricted view, a custom class) or carries target info."""
    if not isinstance(registry, CollectorRegistry):
        return None
    names = getattr(registry, "_collector_to_names", None)
    lock = getattr(registry, "_lock", None)
    if names is None or lock is None or getattr(registry, "_target_info", None):
        return None
    with lock:
        return list(names)


def _multiprocess_part(collector):
    return isinstance(collector, MultiProcessCollector)


def _native_part(collector):
    return isinstance(collector, MetricWrapperBase) and collector._native_renderable


def generate_latest(registry=REGISTRY):
    """The registry in the Prometheus text format 0.0.4, as bytes."""
    collectors = _collectors(registry)
    if collectors is None:
        return _pc_exposition.generate_latest(registry)
    created = created_series_enabled()
    out, run = [], []
    for collector in collectors:
        if _native_part(collector):
            run.append(collector)
            continue
        if run:
            out.append(_render(run, False, created))
            run = []
        if _multiprocess_part(collector):
            out.append(collector._render())  # the whole service, natively
            continue
        out.append(_pc_exposition.generate_latest(_One(collector)))
    if run:
        out.append(_render(run, False, created))
    return b"".join(out)


def _render(run, openmetrics, created):
    _refresh_function_gauges(run)
    return _native.render_instruments(run, openmetrics, created)


def render_registered(registry=REGISTRY, openmetrics=False):
    """Only the modelmetrics instruments of `registry` that the native writer prints, for
    ``modelmetrics.render()``."""
    run = [c for c in _collectors(registry) or [] if _native_part(c)]
    return _render(run, openmetrics, created_series_enabled()) if run else b""
