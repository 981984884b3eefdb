"""PrometheusStatLogger as vLLM main builds it: every family through the class slots, one child
per engine made by create_metric_per_engine over `self.per_engine_labelvalues`."""

from abc import ABC, abstractmethod

import prometheus_client

from vllm import envs
from vllm.distributed.kv_transfer.kv_connector.v1.metrics import KVConnectorProm
from vllm.v1.engine import FinishReason
from vllm.v1.metrics.perf import PerfMetricsProm
from vllm.v1.metrics.prometheus import unregister_vllm_metrics
from vllm.v1.metrics.stats import PromptTokenStats
from vllm.v1.metrics.utils import create_metric_per_engine
from vllm.v1.spec_decode.metrics import SpecDecodingProm

WAITING_REASON_CAPACITY = "capacity"
WAITING_REASON_DEFERRED = "deferred"

_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
_TOKEN_LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                          5.0, 7.5, 10.0, 20.0, 40.0, 80.0]
_REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
                            50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
_KV_RESIDENCY_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30,
                         60, 120, 300, 600, 1200, 1800]


def build_buckets(mantissa_lst, max_value):
    """mantissa x 10^k for k = 0, 1, ... while <= max_value."""
    exponent, buckets = 0, []
    while True:
        for m in mantissa_lst:
            value = m * 10 ** exponent
            if value > max_value:
                return buckets
            buckets.append(value)
        exponent += 1


def build_1_2_5_buckets(max_value):
    return build_buckets([1, 2, 5], max_value)


class AggregateStatLoggerBase(ABC):
    @abstractmethod
    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0): ...

    @abstractmethod
    def log_engine_initialized(self): ...

    def log(self):
        pass


class PrometheusStatLogger(AggregateStatLoggerBase):
    _gauge_cls = prometheus_client.Gauge
    _counter_cls = prometheus_client.Counter
    _histogram_cls = prometheus_client.Histogram
    _spec_decoding_cls = SpecDecodingProm
    _kv_connector_cls = KVConnectorProm
    _perf_metrics_cls = PerfMetricsProm

    def __init__(self, vllm_config, engine_indexes=None):
        if engine_indexes is None:
            engine_indexes = [0]
        self.engine_indexes = engine_indexes
        unregister_vllm_metrics()
        self.vllm_config = vllm_config
        self.show_hidden_metrics = vllm_config.observability_config.show_hidden_metrics
        self.kv_cache_metrics_enabled = vllm_config.observability_config.kv_cache_metrics

        labelnames = ["model_name", "engine"]
        model_name = vllm_config.model_config.served_model_name
        max_model_len = vllm_config.model_config.max_model_len
        self.per_engine_labelvalues = {idx: [model_name, str(idx)] for idx in engine_indexes}
        per_engine = self.per_engine_labelvalues

        self.spec_decoding_prom = self._spec_decoding_cls(
            vllm_config.speculative_config, labelnames, per_engine)
        self.kv_connector_prom = self._kv_connector_cls(vllm_config, labelnames, per_engine)
        self.perf_metrics_prom = self._perf_metrics_cls(vllm_config, labelnames, per_engine)

        def gauge(name, documentation, names=labelnames, mode="mostrecent"):
            return self._gauge_cls(name=name, documentation=documentation,
                                   multiprocess_mode=mode, labelnames=names)

        def counter(name, documentation, names=labelnames):
            return self._counter_cls(name=name, documentation=documentation, labelnames=names)

        def histogram(name, documentation, buckets):
            return self._histogram_cls(name=name, documentation=documentation, buckets=buckets,
                                       labelnames=labelnames)

        def each(metric):
            return create_metric_per_engine(metric, per_engine)

        self.gauge_scheduler_running = each(gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches."))
        self.gauge_scheduler_waiting = each(gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed."))
        by_reason = gauge(
            "vllm:num_requests_waiting_by_reason",
            "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for "
            "scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV "
            "transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
            labelnames + ["reason"])
        self.gauge_waiting_by_reason = {
            reason: create_metric_per_engine(
                by_reason, {idx: values + [reason] for idx, values in per_engine.items()})
            for reason in (WAITING_REASON_CAPACITY, WAITING_REASON_DEFERRED)}
        sleep = gauge(
            "vllm:engine_sleep_state",
            "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
            "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level "
            "2.", labelnames + ["sleep_state"])
        self.gauge_engine_sleep_state = {
            state: {idx: sleep.labels(engine=idx, model_name=model_name, sleep_state=state)
                    for idx in engine_indexes}
            for state in ("awake", "weights_offloaded", "discard_all")}
        self.record_sleep_state()
        self.gauge_kv_cache_usage = each(gauge(
            "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."))
        if envs.VLLM_COMPUTE_NANS_IN_LOGITS:
            self.counter_corrupted_requests = each(counter(
                "vllm:corrupted_requests",
                "Corrupted requests, in terms of total number of requests with NaNs in logits."))
        self.counter_prefix_cache_queries = each(counter(
            "vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried "
            "tokens."))
        self.counter_prefix_cache_hits = each(counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."))
        self.counter_connector_prefix_cache_queries = each(counter(
            "vllm:external_prefix_cache_queries",
            "External prefix cache queries from KV connector cross-instance cache sharing, in "
            "terms of number of queried tokens."))
        self.counter_connector_prefix_cache_hits = each(counter(
            "vllm:external_prefix_cache_hits",
            "External prefix cache hits from KV connector cross-instance cache sharing, in terms "
            "of number of cached tokens."))
        self.counter_mm_cache_queries = each(counter(
            "vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried "
            "items."))
        self.counter_mm_cache_hits = each(counter(
            "vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items."))
        self.counter_num_preempted_reqs = each(counter(
            "vllm:num_preemptions", "Cumulative number of preemption from the engine."))
        self.counter_prompt_tokens = each(counter(
            "vllm:prompt_tokens", "Number of prefill tokens processed."))
        by_source = counter("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.",
                            labelnames + ["source"])
        self.counter_prompt_tokens_by_source = {
            source: {idx: by_source.labels(model_name, str(idx), source) for idx in engine_indexes}
            for source in PromptTokenStats.ALL_SOURCES}
        self.counter_prompt_tokens_cached = each(counter(
            "vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external)."))
        self.counter_generation_tokens = each(counter(
            "vllm:generation_tokens", "Number of generation tokens processed."))
        success = counter("vllm:request_success", "Count of successfully processed requests.",
                          labelnames + ["finished_reason"])
        self.counter_request_success = {
            reason: {idx: success.labels(model_name, str(idx), str(reason))
                     for idx in engine_indexes}
            for reason in FinishReason}

        tokens = build_1_2_5_buckets(max_model_len)
        self.histogram_num_prompt_tokens_request = each(histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokens))
        self.histogram_num_generation_tokens_request = each(histogram(
            "vllm:request_generation_tokens", "Number of generation tokens processed.", tokens))
        self.histogram_iteration_tokens = each(histogram(
            "vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
            [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]))
        self.histogram_max_num_generation_tokens_request = each(histogram(
            "vllm:request_max_num_generation_tokens",
            "Histogram of maximum number of requested generation tokens.", tokens))
        self.histogram_n_request = each(histogram(
            "vllm:request_params_n", "Histogram of the n request parameter.", [1, 2, 5, 10, 20]))
        self.histogram_max_tokens_request = each(histogram(
            "vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
            tokens))
        self.histogram_time_to_first_token = each(histogram(
            "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            _TTFT_BUCKETS))
        self.histogram_inter_token_latency = each(histogram(
            "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
            _TOKEN_LATENCY_BUCKETS))
        self.histogram_request_time_per_output_token = each(histogram(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.", _TOKEN_LATENCY_BUCKETS))
        phase = [("e2e", "vllm:e2e_request_latency_seconds",
                  "Histogram of e2e request latency in seconds."),
                 ("queue", "vllm:request_queue_time_seconds",
                  "Histogram of time spent in WAITING phase for request."),
                 ("inference", "vllm:request_inference_time_seconds",
                  "Histogram of time spent in RUNNING phase for request."),
                 ("prefill", "vllm:request_prefill_time_seconds",
                  "Histogram of time spent in PREFILL phase for request."),
                 ("decode", "vllm:request_decode_time_seconds",
                  "Histogram of time spent in DECODE phase for request.")]
        made = {key: each(histogram(name, doc, _REQUEST_LATENCY_BUCKETS)) for key, name, doc in phase}
        self.histogram_e2e_time_request = made["e2e"]
        self.histogram_queue_time_request = made["queue"]
        self.histogram_inference_time_request = made["inference"]
        self.histogram_prefill_time_request = made["prefill"]
        self.histogram_decode_time_request = made["decode"]
        self.histogram_request_num_preemptions = each(histogram(
            "vllm:request_num_preemptions",
            "Histogram of the number of times a request was preempted.", [1, 2, 3, 4, 5, 10, 20]))
        self.histogram_prefill_kv_computed_request = each(histogram(
            "vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            tokens))
        self.histogram_kv_block_lifetime = {}
        self.histogram_kv_block_idle_before_evict = {}
        self.histogram_kv_block_reuse_gap = {}
        if self.kv_cache_metrics_enabled:
            sampled = " Sampled metrics (controlled by --kv-cache-metrics-sample)."
            self.histogram_kv_block_lifetime = each(histogram(
                "vllm:kv_block_lifetime_seconds",
                "Histogram of KV cache block lifetime from allocation to eviction." + sampled,
                _KV_RESIDENCY_BUCKETS))
            self.histogram_kv_block_idle_before_evict = each(histogram(
                "vllm:kv_block_idle_before_evict_seconds",
                "Histogram of idle time before KV cache block eviction." + sampled,
                _KV_RESIDENCY_BUCKETS))
            self.histogram_kv_block_reuse_gap = each(histogram(
                "vllm:kv_block_reuse_gap_seconds",
                "Histogram of time gaps between consecutive KV cache block accesses. Only the "
                "most recent accesses are recorded (ring buffer)." + sampled,
                _KV_RESIDENCY_BUCKETS))
        self.gauge_lora_info = None
        if vllm_config.lora_config is not None:
            self.labelname_max_lora = "max_lora"
            self.labelname_waiting_lora_adapters = "waiting_lora_adapters"
            self.labelname_running_lora_adapters = "running_lora_adapters"
            self.max_lora = vllm_config.lora_config.max_loras
            self.gauge_lora_info = gauge(
                "vllm:lora_requests_info", "Running stats on lora requests.",
                [self.labelname_max_lora, self.labelname_waiting_lora_adapters,
                 self.labelname_running_lora_adapters], mode="sum")

    def log_metrics_info(self, type, config_obj):
        metrics_info = config_obj.metrics_info()
        metrics_info["engine"] = ""
        assert type == "cache_config", f"Unknown metrics info type {type}"
        # Info as a gauge set to 1 (prometheus_client's multiprocess mode has no Info); the
        # label names are the dict's keys view, as upstream passes them.
        info_gauge = self._gauge_cls(name="vllm:cache_config_info",
                                     documentation="Information of the LLMEngine CacheConfig",
                                     multiprocess_mode="mostrecent",
                                     labelnames=metrics_info.keys())
        for engine_index in self.engine_indexes:
            metrics_info = config_obj.metrics_info()
            metrics_info["engine"] = str(engine_index)
            info_gauge.labels(**metrics_info).set(1)

    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0):
        if scheduler_stats is not None:
            self._record_scheduler(scheduler_stats, engine_idx)
        if mm_cache_stats is not None:
            self.counter_mm_cache_queries[engine_idx].inc(mm_cache_stats.queries)
            self.counter_mm_cache_hits[engine_idx].inc(mm_cache_stats.hits)
        if iteration_stats is not None:
            self._record_iteration(iteration_stats, engine_idx)

    def _record_scheduler(self, s, engine_idx):
        self.gauge_scheduler_running[engine_idx].set(s.num_running_reqs)
        self.gauge_scheduler_waiting[engine_idx].set(s.num_waiting_reqs +
                                                     s.num_skipped_waiting_reqs)
        self.gauge_waiting_by_reason[WAITING_REASON_CAPACITY][engine_idx].set(s.num_waiting_reqs)
        self.gauge_waiting_by_reason[WAITING_REASON_DEFERRED][engine_idx].set(
            s.num_skipped_waiting_reqs)
        self.gauge_kv_cache_usage[engine_idx].set(s.kv_cache_usage)
        self.counter_prefix_cache_queries[engine_idx].inc(s.prefix_cache_stats.queries)
        self.counter_prefix_cache_hits[engine_idx].inc(s.prefix_cache_stats.hits)
        if s.connector_prefix_cache_stats is not None:
            self.counter_connector_prefix_cache_queries[engine_idx].inc(
                s.connector_prefix_cache_stats.queries)
            self.counter_connector_prefix_cache_hits[engine_idx].inc(
                s.connector_prefix_cache_stats.hits)
        if s.spec_decoding_stats is not None:
            self.spec_decoding_prom.observe(s.spec_decoding_stats, engine_idx)
        if s.kv_connector_stats is not None:
            self.kv_connector_prom.observe(s.kv_connector_stats, engine_idx)
        if s.perf_stats is not None:
            self.perf_metrics_prom.observe(s.perf_stats, engine_idx)
        if self.kv_cache_metrics_enabled and s.kv_cache_eviction_events:
            for event in s.kv_cache_eviction_events:
                self.histogram_kv_block_lifetime[engine_idx].observe(event.lifetime_seconds)
                self.histogram_kv_block_idle_before_evict[engine_idx].observe(event.idle_seconds)
                for gap in event.reuse_gaps_seconds:
                    self.histogram_kv_block_reuse_gap[engine_idx].observe(gap)
        if self.gauge_lora_info is not None:
            labels = {self.labelname_running_lora_adapters: ",".join(s.running_lora_adapters),
                      self.labelname_waiting_lora_adapters: ",".join(s.waiting_lora_adapters),
                      self.labelname_max_lora: self.max_lora}
            self.gauge_lora_info.labels(**labels).set_to_current_time()

    def _record_iteration(self, it, engine_idx):
        if envs.VLLM_COMPUTE_NANS_IN_LOGITS:
            self.counter_corrupted_requests[engine_idx].inc(it.num_corrupted_reqs)
        self.counter_num_preempted_reqs[engine_idx].inc(it.num_preempted_reqs)
        self.counter_prompt_tokens[engine_idx].inc(it.num_prompt_tokens)
        pts = it.prompt_token_stats
        for source in PromptTokenStats.ALL_SOURCES:
            self.counter_prompt_tokens_by_source[source][engine_idx].inc(pts.get_by_source(source))
        self.counter_prompt_tokens_cached[engine_idx].inc(pts.cached_tokens)
        self.counter_generation_tokens[engine_idx].inc(it.num_generation_tokens)
        self.histogram_iteration_tokens[engine_idx].observe(pts.computed +
                                                            it.num_generation_tokens)
        for value in it.max_num_generation_tokens_iter:
            self.histogram_max_num_generation_tokens_request[engine_idx].observe(value)
        for value in it.n_params_iter:
            self.histogram_n_request[engine_idx].observe(value)
        for ttft in it.time_to_first_tokens_iter:
            self.histogram_time_to_first_token[engine_idx].observe(ttft)
        for itl in it.inter_token_latencies_iter:
            self.histogram_inter_token_latency[engine_idx].observe(itl)
        for r in it.finished_requests:
            self.counter_request_success[r.finish_reason][engine_idx].inc()
            self.histogram_e2e_time_request[engine_idx].observe(r.e2e_latency)
            self.histogram_queue_time_request[engine_idx].observe(r.queued_time)
            self.histogram_prefill_time_request[engine_idx].observe(r.prefill_time)
            self.histogram_inference_time_request[engine_idx].observe(r.inference_time)
            self.histogram_decode_time_request[engine_idx].observe(r.decode_time)
            self.histogram_request_num_preemptions[engine_idx].observe(r.num_preemptions)
            self.histogram_prefill_kv_computed_request[engine_idx].observe(
                r.num_prompt_tokens - max(r.num_cached_tokens, 0))
            self.histogram_num_prompt_tokens_request[engine_idx].observe(r.num_prompt_tokens)
            self.histogram_num_generation_tokens_request[engine_idx].observe(
                r.num_generation_tokens)
            self.histogram_request_time_per_output_token[engine_idx].observe(
                r.mean_time_per_output_token)
            if r.max_tokens_param:
                self.histogram_max_tokens_request[engine_idx].observe(r.max_tokens_param)

    def record_sleep_state(self, sleep=0, level=0):
        awake, weights_offloaded, discard_all = 1, 0, 0
        if sleep == 1:
            awake = 0
            weights_offloaded = int(level == 1)
            discard_all = int(level == 2)
        for engine_idx in self.engine_indexes:
            self.gauge_engine_sleep_state["discard_all"][engine_idx].set(discard_all)
            self.gauge_engine_sleep_state["weights_offloaded"][engine_idx].set(weights_offloaded)
            self.gauge_engine_sleep_state["awake"][engine_idx].set(awake)

    def log_engine_initialized(self):
        self.log_metrics_info("cache_config", self.vllm_config.cache_config)
