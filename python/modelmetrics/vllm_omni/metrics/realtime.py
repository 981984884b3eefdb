"""Drop-in for ``vllm_omni.metrics.realtime``: Realtime sessions with server-side VAD.

Active sessions and the two latency histograms are bound for ``model_name`` at construction;
latencies are given in milliseconds and recorded in seconds; ``error(reason)`` passes the reason
through as given, as upstream does. Every method runs in C++.
"""

from modelmetrics import _native

_native.register_classes("realtime")


RealtimeVADMetrics = _native.RealtimeVADMetrics
