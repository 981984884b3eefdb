"""Deterministic vLLM stats for the stand-in (tests/python/vllm_standin): what an engine step
hands its stat loggers, for tests and bench/python/client_bench.py."""

import random

from vllm.v1.engine import FinishReason
from vllm.v1.metrics.perf import PerfStats
from vllm.v1.metrics.stats import (
    FinishedRequestStats,
    IterationStats,
    KVCacheEvictionEvent,
    MultiModalCacheStats,
    PrefixCacheStats,
    PromptTokenStats,
    SchedulerStats,
)
from vllm.v1.spec_decode.metrics import SpecDecodingStats


def scheduler_stats(rng, running=64, spec=False, kv_connector=False, lora=False):
    return SchedulerStats(
        num_running_reqs=running, num_waiting_reqs=rng.randint(0, 9),
        num_skipped_waiting_reqs=rng.randint(0, 3), kv_cache_usage=rng.random(),
        prefix_cache_stats=PrefixCacheStats(queries=rng.randint(100, 900), hits=rng.randint(0, 99)),
        connector_prefix_cache_stats=PrefixCacheStats(queries=40, hits=7) if kv_connector else None,
        kv_cache_eviction_events=[KVCacheEvictionEvent(rng.random() * 60, rng.random(), (0.5, 2.0))],
        spec_decoding_stats=SpecDecodingStats(3, 10, 30, 21, [9, 7, 5]) if spec else None,
        kv_connector_stats={"transfer_duration": [0.02, 0.2], "post_duration": [1e-4],
                            "bytes_transferred": [1 << 20], "num_descriptors": [64],
                            "num_failed_transfers": 1} if kv_connector else None,
        perf_stats=PerfStats(10 ** 12, 3 * 10 ** 9, 10 ** 8),
        running_lora_adapters={"sql-lora": 2} if lora else {},
        waiting_lora_adapters={"chat-lora": 1} if lora else {})


def iteration_stats(rng, running=64, finishing=8):
    reasons = list(FinishReason)
    computed = rng.randint(0, 2048)
    return IterationStats(
        num_generation_tokens=running, num_prompt_tokens=computed + 300, num_preempted_reqs=1,
        prompt_token_stats=PromptTokenStats(computed=computed, local_cache_hit=256,
                                            external_kv_transfer=44),
        finished_requests=[FinishedRequestStats(
            finish_reason=reasons[i % len(reasons)], e2e_latency=rng.random() * 30,
            num_prompt_tokens=rng.randint(1, 4000), num_generation_tokens=rng.randint(1, 900),
            max_tokens_param=None if i % 3 == 0 else 1024, queued_time=rng.random(),
            prefill_time=rng.random() * 2, inference_time=rng.random() * 20,
            decode_time=rng.random() * 18, mean_time_per_output_token=rng.random() / 10,
            num_cached_tokens=-1 if i == 0 else 128, num_preemptions=rng.choice((0, 0, 0, 1, 4, 30)))
            for i in range(finishing)],
        max_num_generation_tokens_iter=[rng.randint(1, 2048) for _ in range(finishing)],
        n_params_iter=[1] * finishing,
        time_to_first_tokens_iter=[rng.random() for _ in range(finishing)],
        inter_token_latencies_iter=[rng.random() / 20 for _ in range(running)])


def drive(logger, engines, steps=20, seed=7, **features):
    """`steps` engine steps on every engine of `logger`, as the front-end records them."""
    rng = random.Random(seed)
    for _ in range(steps):
        for engine in engines:
            logger.record(scheduler_stats(rng, **features), iteration_stats(rng),
                          MultiModalCacheStats(queries=5, hits=2), engine_idx=engine)
