"""vLLM's environment switches that the metrics path reads."""

import os

VLLM_COMPUTE_NANS_IN_LOGITS = os.environ.get("VLLM_COMPUTE_NANS_IN_LOGITS", "0") == "1"
