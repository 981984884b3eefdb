"""modelmetrics: the C++ metrics core of modelmetrics, for Python processes.

The instruments, registry, catalog and exposition writer are C++ (``modelmetrics._native``).
This package adds:

* ``modelmetrics.vllm_omni.metrics`` -- a drop-in for vLLM-Omni's ``vllm_omni.metrics``
  (same modules, classes, methods, families and ``/metrics`` text), and
  ``modelmetrics.vllm_omni.install()``, which makes ``import vllm_omni.metrics...`` resolve to it;
* ``render()`` and ``make_asgi_app()`` -- the exposition straight from C++, without
  prometheus_client;
* ``modelmetrics.prometheus_bridge`` -- one collector that serves every family from
  prometheus_client's default ``REGISTRY`` (registered automatically when prometheus_client is
  installed), so ``generate_latest()``, ``make_asgi_app()`` and ``start_http_server()`` show them.

``import modelmetrics`` needs nothing but the standard library.
"""

from ._exposition import (
    CONTENT_TYPE_LATEST,
    CONTENT_TYPE_OPENMETRICS,
    created_series_enabled,
    make_asgi_app,
    render,
)

__version__ = "0.1.0"

__all__ = [
    "CONTENT_TYPE_LATEST",
    "CONTENT_TYPE_OPENMETRICS",
    "created_series_enabled",
    "make_asgi_app",
    "render",
]
