"""Runs vLLM-Omni's own metrics tests against this package (scripts/upstream_tests.sh copies
this file beside them): `vllm_omni.metrics` and `vllm_omni.benchmarks.audio_continuity` resolve
to modelmetrics' drop-in through the same import hook a launcher uses."""

import modelmetrics.vllm_omni

modelmetrics.vllm_omni.install()


def pytest_configure(config):
    for marker in ("core_model", "cpu", "benchmark", "slow"):
        config.addinivalue_line("markers", marker)
