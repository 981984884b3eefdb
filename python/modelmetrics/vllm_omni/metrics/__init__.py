"""Drop-in for vLLM-Omni's ``vllm_omni.metrics`` package (upstream main @ 778959797c plus the
newer module revisions docs/python.md names).

Modules: ``prometheus``, ``modality``, ``transfer``, ``realtime``, ``stats``, ``utils``,
``definitions`` and ``stat_logger``; and upstream's newer pure-Python helpers
``concurrency_trace`` (an opt-in JSON-lines trace and its summary), ``duplex_frame_timing``
(opt-in per-frame timing lines), ``duplex_turn`` (per-turn log tables of duplex sessions) and
``stream_edge`` (first-event timings per stage edge). The observe methods run in C++;
dataclasses and the aggregator's bookkeeping are Python, as upstream's.

Importing this package registers one collector in prometheus_client's default ``REGISTRY``
(when prometheus_client is installed), so every family appears on ``generate_latest(REGISTRY)``,
``make_asgi_app()``, ``start_http_server()`` and FastAPI's ``/metrics``; set
``MODELMETRICS_PROMETHEUS_BRIDGE=0`` to serve them only through ``modelmetrics.render()``.

Section numbers (§n) cite docs/pipeline-behaviour.md.
"""

import os as _os

from .prometheus import OmniPrometheusMetrics, OmniRequestCounter
from .stats import OrchestratorAggregator, StageRequestStats, StageStats
from .utils import (
    count_audio_chunk_frames,
    count_audio_frames,
    count_image_pixels,
    count_tokens_from_outputs,
)


def unregister_vllm_metrics():
    """vLLM-Omni's scoped replacement of vLLM's ``unregister_vllm_metrics()`` (§4.10): drops the
    upstream ``vllm:*`` families -- prometheus_client collectors named ``vllm:...`` and this
    package's own engine families -- and keeps every ``vllm_omni:*`` family."""
    from modelmetrics import _native

    _native.remove_prefix("vllm:")
    try:
        from prometheus_client import REGISTRY
    except ImportError:
        return
    for collector in list(REGISTRY._collector_to_names):
        name = getattr(collector, "_name", None)
        if isinstance(name, str) and name.startswith("vllm:"):
            REGISTRY.unregister(collector)


def _install_bridge():
    if _os.environ.get("MODELMETRICS_PROMETHEUS_BRIDGE", "1").lower() in ("0", "false", "no"):
        return
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return  # modelmetrics.render() still serves everything
    from modelmetrics import prometheus_bridge

    prometheus_bridge.install()


_install_bridge()

__all__ = [
    "OmniPrometheusMetrics",
    "OmniRequestCounter",
    "OrchestratorAggregator",
    "StageStats",
    "StageRequestStats",
    "count_audio_chunk_frames",
    "count_audio_frames",
    "count_image_pixels",
    "count_tokens_from_outputs",
    "unregister_vllm_metrics",
]
