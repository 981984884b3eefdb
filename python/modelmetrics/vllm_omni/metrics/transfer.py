"""Drop-in for ``vllm_omni.metrics.transfer``: per-edge cross-stage transfer families.

``OmniTransferMetrics(model_name, log_stats=True)`` takes the gate upstream added in PR #3576.
Label values are ``str(...)`` of the stage and replica ids; every method runs in C++.
"""

from modelmetrics import _native

_native.register_classes("transfer")


OmniTransferMetrics = _native.OmniTransferMetrics
