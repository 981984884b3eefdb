"""The configuration objects PrometheusStatLogger reads."""

from dataclasses import dataclass, field
from typing import Any, Protocol


class SupportsMetricsInfo(Protocol):
    def metrics_info(self) -> dict[str, str]: ...


@dataclass
class ModelConfig:
    served_model_name: str = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
    max_model_len: int = 4096


@dataclass
class CacheConfig:
    """Field set of a current CacheConfig: metrics_info() returns every field as a string, so
    the `vllm:cache_config_info` labels are whatever the installed vLLM has."""

    block_size: int = 16
    gpu_memory_utilization: float = 0.9
    cache_dtype: str = "auto"
    enable_prefix_caching: bool = True
    prefix_caching_hash_algo: str = "sha256"
    num_gpu_blocks: int | None = 27435
    num_cpu_blocks: int | None = None
    kv_cache_size_tokens: int | None = 438960
    kv_cache_max_concurrency: float | None = 107.17
    prefix_match_unit: int = 16
    user_specified_mamba_block_size: int | None = None
    sliding_window: int | None = None

    def metrics_info(self) -> dict[str, str]:
        return {key: str(value) for key, value in self.__dict__.items()}


@dataclass
class ObservabilityConfig:
    show_hidden_metrics: bool = False
    kv_cache_metrics: bool = False


@dataclass
class SpeculativeConfig:
    num_speculative_tokens: int = 3
    method: str = "eagle"


@dataclass
class LoRAConfig:
    max_loras: int = 4


@dataclass
class KVTransferConfig:
    kv_connector: str = "NixlConnector"


@dataclass
class VllmConfig:
    model_config: ModelConfig = field(default_factory=ModelConfig)
    cache_config: CacheConfig = field(default_factory=CacheConfig)
    observability_config: ObservabilityConfig = field(default_factory=ObservabilityConfig)
    speculative_config: SpeculativeConfig | None = None
    lora_config: LoRAConfig | None = None
    kv_transfer_config: KVTransferConfig | None = None
    extra: dict[str, Any] = field(default_factory=dict)
