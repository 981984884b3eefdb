"""vLLM's unregister: every collector whose `_name` contains "vllm" leaves the default registry
(a new PrometheusStatLogger then re-creates its families)."""

from prometheus_client import REGISTRY


def unregister_vllm_metrics():
    for collector in list(REGISTRY._collector_to_names):
        if hasattr(collector, "_name") and "vllm" in collector._name:
            REGISTRY.unregister(collector)
