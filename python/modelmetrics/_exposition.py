"""The exposition straight from the C++ registry: ``render()`` and a tiny ASGI ``/metrics`` app.

The render runs in C++ with the GIL released, so other Python threads (the asyncio loop, the
orchestrator) keep running while a scrape is written.
"""

import os
import sys

from . import _native

CONTENT_TYPE_LATEST = "text/plain; version=0.0.4; charset=utf-8"
CONTENT_TYPE_OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def created_series_enabled() -> bool:
    """Whether ``<name>_created`` series are written, decided as prometheus_client decides it.

    prometheus_client reads ``PROMETHEUS_DISABLE_CREATED_SERIES`` once, when
    ``prometheus_client.metrics`` is imported; once it is imported its decision is used, so both
    exposition paths agree.
    """
    metrics = sys.modules.get("prometheus_client.metrics")
    if metrics is not None and hasattr(metrics, "_use_created"):
        return bool(metrics._use_created)
    value = os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "False")
    return value.lower() not in ("true", "1", "t")


def render(openmetrics: bool = False) -> bytes:
    """Every modelmetrics family in the Prometheus text format (or OpenMetrics), as bytes.

    The text equals what ``prometheus_client.generate_latest`` prints for the same families
    (including their ``_created`` series), without prometheus_client's own families; the
    ``modelmetrics.prometheus_client`` instruments registered in prometheus_client's default
    ``REGISTRY`` come after the package's own families.
    """
    openmetrics = bool(openmetrics)
    text = _native.render(openmetrics=openmetrics, created=created_series_enabled())
    # modelmetrics.prometheus_client instruments in prometheus_client's default REGISTRY follow
    # (only once that module is in use: importing it here would import prometheus_client).
    exposition = sys.modules.get("modelmetrics.prometheus_client.exposition")
    if exposition is None:
        return text
    instruments = exposition.render_registered(openmetrics=openmetrics)
    if not instruments:
        return text
    if openmetrics and text.endswith(b"# EOF\n"):
        return text[:-6] + instruments + b"# EOF\n"
    return text + instruments


def _wants_openmetrics(scope) -> bool:
    for key, value in scope.get("headers") or ():
        if key.lower() == b"accept":
            return b"application/openmetrics-text" in value
    return False


def make_asgi_app():
    """An ASGI application serving ``render()`` (text, or OpenMetrics when the Accept header asks
    for it) on any path; for example ``app.mount("/metrics", modelmetrics.make_asgi_app())``."""

    async def app(scope, receive, send):
        if scope.get("type") != "http":
            return
        om = _wants_openmetrics(scope)
        body = render(openmetrics=om)
        content_type = CONTENT_TYPE_OPENMETRICS if om else CONTENT_TYPE_LATEST
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", content_type.encode()),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app
