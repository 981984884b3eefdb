// The upstream per-engine vllm:* families (VllmEngineFamilies() in catalog.h), each defined once
// in one row as in omni_families.h: X(id, name, instrument, HELP, labels, buckets, bind, group).
// Generated from the V1 fixture (see catalog.h); the bucket constants are catalog.cc's.
//
// Only a macro: the constants a row names are resolved where the list is expanded.
#ifndef MODELMETRICS_PIPELINE_ENGINE_FAMILIES_H_
#define MODELMETRICS_PIPELINE_ENGINE_FAMILIES_H_

#define MM_VLLM_ENGINE_FAMILIES(X)                                                                 \
  X(kNixlXferTimeSeconds, "vllm:nixl_xfer_time_seconds", Histogram,                                \
    "Histogram of transfer duration for NIXL KV Cache transfers.", kEngineLabels,                  \
    kNixlXferTimeBuckets, Bind::kEager, Group::kEngine)                                            \
  X(kNixlPostTimeSeconds, "vllm:nixl_post_time_seconds", Histogram,                                \
    "Histogram of transfer post time for NIXL KV Cache transfers.", kEngineLabels,                 \
    kNixlPostTimeBuckets, Bind::kEager, Group::kEngine)                                            \
  X(kNixlBytesTransferred, "vllm:nixl_bytes_transferred", Histogram,                               \
    "Histogram of bytes transferred per NIXL KV Cache transfers.", kEngineLabels,                  \
    kNixlBytesBuckets, Bind::kEager, Group::kEngine)                                               \
  X(kNixlNumDescriptors, "vllm:nixl_num_descriptors", Histogram,                                   \
    "Histogram of number of descriptors per NIXL  KV Cache transfers.", kEngineLabels,             \
    kNixlDescriptorsBuckets, Bind::kEager, Group::kEngine)                                         \
  X(kNixlNumFailedTransfers, "vllm:nixl_num_failed_transfers", Counter,                            \
    "Number of failed NIXL KV Cache transfers.", kEngineLabels, kNoBuckets, Bind::kEager,          \
    Group::kEngine)                                                                                \
  X(kNixlNumFailedNotifications, "vllm:nixl_num_failed_notifications", Counter,                    \
    "Number of failed NIXL KV Cache notifications.", kEngineLabels, kNoBuckets, Bind::kEager,      \
    Group::kEngine)                                                                                \
  X(kNixlNumKvExpiredReqs, "vllm:nixl_num_kv_expired_reqs", Counter,                               \
    "Number of requests that had their KV expire. NOTE: This metric is tracked on the P "          \
    "instance.",                                                                                   \
    kEngineLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                       \
  X(kEstimatedFlopsPerGpu, "vllm:estimated_flops_per_gpu", Counter,                                \
    "Estimated number of floating point operations per GPU (for Model Flops Utilization "          \
    "calculations).",                                                                              \
    kEngineLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                       \
  X(kEstimatedReadBytesPerGpu, "vllm:estimated_read_bytes_per_gpu", Counter,                       \
    "Estimated number of bytes read from memory per GPU (for Model Flops Utilization "             \
    "calculations).",                                                                              \
    kEngineLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                       \
  X(kEstimatedWriteBytesPerGpu, "vllm:estimated_write_bytes_per_gpu", Counter,                     \
    "Estimated number of bytes written to memory per GPU (for Model Flops Utilization "            \
    "calculations).",                                                                              \
    kEngineLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                       \
  X(kNumRequestsRunning, "vllm:num_requests_running", Gauge,                                       \
    "Number of requests in model execution batches.", kEngineLabels, kNoBuckets, Bind::kEager,     \
    Group::kEngine)                                                                                \
  X(kNumRequestsWaiting, "vllm:num_requests_waiting", Gauge,                                       \
    "Number of requests waiting to be processed.", kEngineLabels, kNoBuckets, Bind::kEager,        \
    Group::kEngine)                                                                                \
  X(kNumRequestsWaitingByReason, "vllm:num_requests_waiting_by_reason", Gauge,                     \
    "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling "    \
    "capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked " \
    "status). Sum of all reasons equals vllm:num_requests_waiting.",                               \
    kEngineWaitingReasonLabels, kNoBuckets, Bind::kEager, Group::kEngine)                          \
  X(kEngineSleepState, "vllm:engine_sleep_state", Gauge,                                           \
    "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "    \
    "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",             \
    kSleepStateLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                   \
  X(kKvCacheUsagePerc, "vllm:kv_cache_usage_perc", Gauge,                                          \
    "KV-cache usage. 1 means 100 percent usage.", kEngineLabels, kNoBuckets, Bind::kEager,         \
    Group::kEngine)                                                                                \
  X(kPrefixCacheQueries, "vllm:prefix_cache_queries", Counter,                                     \
    "Prefix cache queries, in terms of number of queried tokens.", kEngineLabels, kNoBuckets,      \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kPrefixCacheHits, "vllm:prefix_cache_hits", Counter,                                           \
    "Prefix cache hits, in terms of number of cached tokens.", kEngineLabels, kNoBuckets,          \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kExternalPrefixCacheQueries, "vllm:external_prefix_cache_queries", Counter,                    \
    "External prefix cache queries from KV connector cross-instance cache sharing, in terms "      \
    "of number of queried tokens.",                                                                \
    kEngineLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                       \
  X(kExternalPrefixCacheHits, "vllm:external_prefix_cache_hits", Counter,                          \
    "External prefix cache hits from KV connector cross-instance cache sharing, in terms of "      \
    "number of cached tokens.",                                                                    \
    kEngineLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                       \
  X(kMmCacheQueries, "vllm:mm_cache_queries", Counter,                                             \
    "Multi-modal cache queries, in terms of number of queried items.", kEngineLabels, kNoBuckets,  \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kMmCacheHits, "vllm:mm_cache_hits", Counter,                                                   \
    "Multi-modal cache hits, in terms of number of cached items.", kEngineLabels, kNoBuckets,      \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kNumPreemptions, "vllm:num_preemptions", Counter,                                              \
    "Cumulative number of preemption from the engine.", kEngineLabels, kNoBuckets, Bind::kEager,   \
    Group::kEngine)                                                                                \
  X(kPromptTokens, "vllm:prompt_tokens", Counter, "Number of prefill tokens processed.",           \
    kEngineLabels, kNoBuckets, Bind::kEager, Group::kEngine)                                       \
  X(kPromptTokensBySource, "vllm:prompt_tokens_by_source", Counter,                                \
    "Number of prompt tokens by source.", kPromptSourceLabels, kNoBuckets, Bind::kEager,           \
    Group::kEngine)                                                                                \
  X(kPromptTokensCached, "vllm:prompt_tokens_cached", Counter,                                     \
    "Number of cached prompt tokens (local + external).", kEngineLabels, kNoBuckets, Bind::kEager, \
    Group::kEngine)                                                                                \
  X(kGenerationTokens, "vllm:generation_tokens", Counter,                                          \
    "Number of generation tokens processed.", kEngineLabels, kNoBuckets, Bind::kEager,             \
    Group::kEngine)                                                                                \
  X(kRequestSuccess, "vllm:request_success", Counter, "Count of successfully processed requests.", \
    kRequestSuccessLabels, kNoBuckets, Bind::kEager, Group::kEngine)                               \
  X(kRequestPromptTokens, "vllm:request_prompt_tokens", Histogram,                                 \
    "Number of prefill tokens processed.", kEngineLabels, kTokenCountBuckets, Bind::kEager,        \
    Group::kEngine)                                                                                \
  X(kRequestGenerationTokens, "vllm:request_generation_tokens", Histogram,                         \
    "Number of generation tokens processed.", kEngineLabels, kTokenCountBuckets, Bind::kEager,     \
    Group::kEngine)                                                                                \
  X(kIterationTokensTotal, "vllm:iteration_tokens_total", Histogram,                               \
    "Histogram of number of tokens per engine_step.", kEngineLabels, kIterationTokensBuckets,      \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kRequestMaxNumGenerationTokens, "vllm:request_max_num_generation_tokens", Histogram,           \
    "Histogram of maximum number of requested generation tokens.", kEngineLabels,                  \
    kTokenCountBuckets, Bind::kEager, Group::kEngine)                                              \
  X(kRequestParamsN, "vllm:request_params_n", Histogram, "Histogram of the n request parameter.",  \
    kEngineLabels, kRequestParamsNBuckets, Bind::kEager, Group::kEngine)                           \
  X(kRequestParamsMaxTokens, "vllm:request_params_max_tokens", Histogram,                          \
    "Histogram of the max_tokens request parameter.", kEngineLabels, kTokenCountBuckets,           \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kTimeToFirstTokenSeconds, "vllm:time_to_first_token_seconds", Histogram,                       \
    "Histogram of time to first token in seconds.", kEngineLabels, kTtftBuckets, Bind::kEager,     \
    Group::kEngine)                                                                                \
  X(kInterTokenLatencySeconds, "vllm:inter_token_latency_seconds", Histogram,                      \
    "Histogram of inter-token latency in seconds.", kEngineLabels, kTokenLatencyBuckets,           \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kRequestTimePerOutputTokenSeconds, "vllm:request_time_per_output_token_seconds", Histogram,    \
    "Histogram of time_per_output_token_seconds per request.", kEngineLabels,                      \
    kTokenLatencyBuckets, Bind::kEager, Group::kEngine)                                            \
  X(kE2eRequestLatencySeconds, "vllm:e2e_request_latency_seconds", Histogram,                      \
    "Histogram of e2e request latency in seconds.", kEngineLabels, kRequestPhaseBuckets,           \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kRequestQueueTimeSeconds, "vllm:request_queue_time_seconds", Histogram,                        \
    "Histogram of time spent in WAITING phase for request.", kEngineLabels, kRequestPhaseBuckets,  \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kRequestInferenceTimeSeconds, "vllm:request_inference_time_seconds", Histogram,                \
    "Histogram of time spent in RUNNING phase for request.", kEngineLabels, kRequestPhaseBuckets,  \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kRequestPrefillTimeSeconds, "vllm:request_prefill_time_seconds", Histogram,                    \
    "Histogram of time spent in PREFILL phase for request.", kEngineLabels, kRequestPhaseBuckets,  \
    Bind::kEager, Group::kEngine)                                                                  \
  X(kRequestDecodeTimeSeconds, "vllm:request_decode_time_seconds", Histogram,                      \
    "Histogram of time spent in DECODE phase for request.", kEngineLabels, kRequestPhaseBuckets,   \
    Bind::kEager, Group::kEngine)                                                                  \
  /* After the fixture (vLLM #49984; HELP as vllm/v1/metrics/loggers.py at 00ec631b). */           \
  X(kRequestNumPreemptions, "vllm:request_num_preemptions", Histogram,                             \
    "Histogram of the number of times a request was preempted.", kEngineLabels,                    \
    kRequestNumPreemptionsBuckets, Bind::kEager, Group::kEngine)                                   \
  X(kRequestPrefillKvComputedTokens, "vllm:request_prefill_kv_computed_tokens", Histogram,         \
    "Histogram of new KV tokens computed during prefill (excluding cached tokens).",               \
    kEngineLabels, kTokenCountBuckets, Bind::kEager, Group::kEngine)                               \
  X(kCacheConfigInfo, "vllm:cache_config_info", Gauge, "Information of the LLMEngine CacheConfig", \
    kCacheConfigInfoLabels, kNoBuckets, Bind::kEager, Group::kEngine)

#endif  // MODELMETRICS_PIPELINE_ENGINE_FAMILIES_H_
