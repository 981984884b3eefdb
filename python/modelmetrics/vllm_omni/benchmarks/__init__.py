"""Benchmark-side helpers of the vLLM-Omni metrics drop-in (``vllm_omni.benchmarks``)."""
