"""The stats objects a scheduler and the output processor hand to stat loggers."""

from dataclasses import dataclass, field

from vllm.v1.engine import FinishReason


@dataclass
class PrefixCacheStats:
    reset: bool = False
    requests: int = 0
    queries: int = 0
    hits: int = 0


@dataclass
class KVCacheEvictionEvent:
    lifetime_seconds: float
    idle_seconds: float
    reuse_gaps_seconds: tuple = ()


@dataclass
class SchedulerStats:
    num_running_reqs: int = 0
    num_waiting_reqs: int = 0
    num_skipped_waiting_reqs: int = 0
    kv_cache_usage: float = 0.0
    prefix_cache_stats: PrefixCacheStats = field(default_factory=PrefixCacheStats)
    connector_prefix_cache_stats: PrefixCacheStats | None = None
    kv_cache_eviction_events: list = field(default_factory=list)
    spec_decoding_stats: object | None = None
    kv_connector_stats: dict | None = None
    perf_stats: object | None = None
    waiting_lora_adapters: dict = field(default_factory=dict)
    running_lora_adapters: dict = field(default_factory=dict)


@dataclass
class MultiModalCacheStats:
    requests: int = 0
    queries: int = 0
    hits: int = 0


@dataclass
class PromptTokenStats:
    """Where an iteration's prompt tokens came from; `computed` excludes cache hits."""

    ALL_SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")

    computed: int = 0
    local_cache_hit: int = 0
    external_kv_transfer: int = 0

    @property
    def cached_tokens(self) -> int:
        return self.local_cache_hit + self.external_kv_transfer

    def get_by_source(self, source: str) -> int:
        return {"local_compute": self.computed, "local_cache_hit": self.local_cache_hit,
                "external_kv_transfer": self.external_kv_transfer}[source]


@dataclass
class FinishedRequestStats:
    finish_reason: FinishReason = FinishReason.STOP
    e2e_latency: float = 0.0
    num_prompt_tokens: int = 0
    num_preemptions: int = 0  # vLLM #49984
    num_generation_tokens: int = 0
    max_tokens_param: int | None = None
    queued_time: float = 0.0
    prefill_time: float = 0.0
    inference_time: float = 0.0
    decode_time: float = 0.0
    mean_time_per_output_token: float = 0.0
    num_cached_tokens: int = 0


@dataclass
class IterationStats:
    num_generation_tokens: int = 0
    num_prompt_tokens: int = 0
    num_preempted_reqs: int = 0
    num_corrupted_reqs: int = 0
    prompt_token_stats: PromptTokenStats = field(default_factory=PromptTokenStats)
    finished_requests: list = field(default_factory=list)
    max_num_generation_tokens_iter: list = field(default_factory=list)
    n_params_iter: list = field(default_factory=list)
    time_to_first_tokens_iter: list = field(default_factory=list)
    inter_token_latencies_iter: list = field(default_factory=list)
