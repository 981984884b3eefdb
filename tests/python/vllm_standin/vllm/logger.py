"""vLLM's ``vllm.logger``, as far as vLLM-Omni's metrics package uses it: ``init_logger(name)``
returns a standard ``logging.Logger`` (vllm/logger.py does, with vLLM's own handlers set up)."""

import logging


def init_logger(name: str) -> logging.Logger:
    return logging.getLogger(name)
