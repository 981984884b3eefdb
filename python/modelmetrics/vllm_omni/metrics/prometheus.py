"""Drop-in for ``vllm_omni.metrics.prometheus``: pipeline and image/diffusion service families.

``OmniPrometheusMetrics`` has upstream's constructor, methods, parameter names, guards and
return values (docs/python.md); every method runs in C++
(the class is ``modelmetrics._native.OmniPrometheusMetrics``). Importing this module registers its families, as
upstream's module-level prometheus_client collectors are registered at import.
"""

from modelmetrics import _native

_native.register_classes("prometheus")


OmniPrometheusMetrics = _native.OmniPrometheusMetrics  # defined in C++ (src/python/observe_types.cc)


class OmniRequestCounter:
    """An advisory int shared by the orchestrator and the entrypoint (no lock, as upstream's):
    ``increment()``, and ``decrement()`` floored at 0."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0

    def increment(self):
        self.value += 1

    def decrement(self):
        if self.value > 0:
            self.value -= 1

    def __repr__(self):
        return f"OmniRequestCounter(value={self.value})"
