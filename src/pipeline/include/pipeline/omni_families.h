// The vllm_omni:* families, each defined once, in one row:
//   X(id, name, instrument, HELP, labels, buckets, bind, group[, guard])
// its id (OmniFamily::id), its name (counters without `_total`), its instrument, and the rest of
// its catalog row (FamilySpec in catalog.h: label set and bucket list constants, eager or lazy
// binding, group, the guard on recorded values). catalog.h derives the enum, names and typed
// handles from it, catalog.cc the table; code names a family by its id, so a misspelt or missing
// family fails to compile. Adding a family is one row here and the observe method that records
// it (docs/architecture.md, tests/pipeline/toy_family_test.cc).
//
// Only a macro: the constants a row names are resolved where the list is expanded.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_OMNI_FAMILIES_H_
#define MODELMETRICS_PIPELINE_OMNI_FAMILIES_H_

#define MM_VLLM_OMNI_FAMILIES(X)                                                                   \
  /* Pipeline (§3.1; design "Pipeline" plus the two token counters). */                           \
  X(kNumRequestsRunning, "vllm_omni:num_requests_running", Gauge,                                  \
    "Number of requests currently running across all pipeline stages.", kPipelineLabels,           \
    kNoBuckets, Bind::kEager, Group::kPipeline)                                                    \
  X(kNumRequestsWaiting, "vllm_omni:num_requests_waiting", Gauge,                                  \
    "Number of requests waiting to be scheduled.", kPipelineLabels, kNoBuckets, Bind::kEager,      \
    Group::kPipeline)                                                                              \
  X(kRequestsSuccess, "vllm_omni:requests_success", Counter,                                       \
    "Total requests by completion reason (stop / length / abort / ...). Aborts cover "             \
    "client-disconnect / cancellation paths in addition to upstream FinishReason.ABORT.",          \
    kSuccessLabels, kNoBuckets, Bind::kLazy, Group::kPipeline)                                     \
  X(kE2eRequestLatencyS, "vllm_omni:e2e_request_latency_s", Histogram,                             \
    "Pipeline-global end-to-end request latency in seconds (user arrival to complete response).",  \
    kPipelineLabels, kSecondsBuckets, Bind::kEager, Group::kPipeline)                              \
  X(kPromptTokens, "vllm_omni:prompt_tokens", Counter,                                             \
    "Total prompt (input) tokens processed across all pipeline stages.", kPipelineLabels,          \
    kNoBuckets, Bind::kEager, Group::kPipeline, Guard::kSkipNonPositive)                           \
  X(kGenerationTokens, "vllm_omni:generation_tokens", Counter,                                     \
    "Total generation (output) tokens produced across all pipeline stages.", kPipelineLabels,      \
    kNoBuckets, Bind::kEager, Group::kPipeline, Guard::kSkipNonPositive)                           \
  /* Image and diffusion service-level families (§3.1). */                                        \
  X(kStageGenTimeS, "vllm_omni:stage_gen_time_s", Histogram,                                       \
    "Per-stage generation time in seconds for diffusion / image stages.", kStageGenTimeLabels,     \
    kSecondsBuckets, Bind::kLazy, Group::kImage, Guard::kClampNegative)                            \
  X(kRequestQueueWaitS, "vllm_omni:request_queue_wait_s", Histogram,                               \
    "Per-request queue wait between submit arrival and stage submit, in seconds.",                 \
    kPipelineLabels, kSecondsBuckets, Bind::kEager, Group::kImage, Guard::kClampNegative)          \
  X(kStageWaitingRequests, "vllm_omni:stage_waiting_requests", Gauge,                              \
    "Sum of the latest scheduler waiting snapshots across a stage's replicas; diffusion "          \
    "snapshots "                                                                                   \
    "update when outputs arrive.",                                                                 \
    kDiffusionLabels, kNoBuckets, Bind::kLazy, Group::kImage, Guard::kClampNegative)               \
  X(kStageInQueueS, "vllm_omni:stage_in_queue_s", Histogram,                                       \
    "Time in seconds from diffusion scheduler enqueue to initial execution admission. Zero is "    \
    "the "                                                                                         \
    "healthy low-load baseline and is counted.",                                                   \
    kDiffusionLabels, kSecondsFastBuckets, Bind::kLazy, Group::kImage, Guard::kClampNegative)      \
  X(kNumInferenceSteps, "vllm_omni:num_inference_steps", Histogram,                                \
    "Diffusion step count distribution per request.", kPipelineLabels, kPrometheusDefaultBuckets,  \
    Bind::kEager, Group::kImage, Guard::kSkipNonPositive)                                          \
  X(kImageCount, "vllm_omni:image_count", Counter,                                                 \
    "Cumulative image count; per-model rate. Throughput recovered via rate().", kPipelineLabels,   \
    kNoBuckets, Bind::kEager, Group::kImage, Guard::kSkipNonPositive)                              \
  X(kImagePixels, "vllm_omni:image_pixels", Histogram,                                             \
    "Image pixel count distribution per request.", kPipelineLabels, kPrometheusDefaultBuckets,     \
    Bind::kEager, Group::kImage, Guard::kSkipNonPositive)                                          \
  X(kPeakMemoryMb, "vllm_omni:peak_memory_mb", Gauge,                                              \
    "Peak GPU memory in MB observed during a stage's generation.", kDiffusionLabels, kNoBuckets,   \
    Bind::kLazy, Group::kImage, Guard::kClampNegative)                                             \
  X(kRequestsFailed, "vllm_omni:requests_failed", Counter,                                         \
    "Total requests by failure reason. Pairs with requests_success_total (abort bucket) to give "  \
    "the full failure surface. Reasons are bounded to client_abort, client_disconnect, "           \
    "stage_error, and unknown.",                                                                   \
    kFailedLabels, kNoBuckets, Bind::kLazy, Group::kImage)                                         \
  X(kKvWaitS, "vllm_omni:kv_wait_s", Histogram,                                                    \
    "KV cache transfer wait time per request, sliced by connector backend.", kKvWaitLabels,        \
    kSecondsBuckets, Bind::kLazy, Group::kImage, Guard::kSkipNegative)                             \
  /* Diffusion execution breakdown (§3.3), per replica. */                                        \
  X(kDiffusionExecS, "vllm_omni:diffusion_exec_s", Histogram,                                      \
    "DiT forward pass execution time per request in seconds.", kStageLabels, kSecondsBuckets,      \
    Bind::kLazy, Group::kDiffusion)                                                                \
  X(kDiffusionExecPerStepS, "vllm_omni:diffusion_exec_per_step_s", Histogram,                      \
    "DiT forward pass execution time per denoising step in seconds.", kStageLabels,                \
    kSecondsFastBuckets, Bind::kLazy, Group::kDiffusion)                                           \
  X(kDiffusionPreprocessS, "vllm_omni:diffusion_preprocess_s", Histogram,                          \
    "Diffusion input preprocessing time per request in seconds.", kStageLabels,                    \
    kSecondsFastBuckets, Bind::kLazy, Group::kDiffusion)                                           \
  X(kDiffusionPostprocessS, "vllm_omni:diffusion_postprocess_s", Histogram,                        \
    "Diffusion output postprocessing (VAE decode) time per request in seconds.", kStageLabels,     \
    kSecondsFastBuckets, Bind::kLazy, Group::kDiffusion)                                           \
  X(kVaeDecodeS, "vllm_omni:vae_decode_s", Histogram,                                              \
    "VAE decode latency in seconds (latents -> pixels/audio/video).", kStageLabels,                \
    kSecondsBuckets, Bind::kLazy, Group::kDiffusion, Guard::kSkipNegative)                         \
  X(kDiffusionForwardS, "vllm_omni:diffusion_forward_s", Histogram,                                \
    "Diffusion forward-only latency in seconds (denoise loop; excludes preprocess / postprocess "  \
    "/ "                                                                                           \
    "VAE decode / KV load). Absent when the pipeline profiler is off.",                            \
    kStageLabels, kSecondsBuckets, Bind::kLazy, Group::kDiffusion, Guard::kSkipNegative)           \
  X(kDiffusionKvLoadS, "vllm_omni:diffusion_kv_load_s", Histogram,                                 \
    "Diffusion KV-recv latency in seconds (AR→diffusion KV fetch; absent when the stage has no " \
    "upstream KV to receive).",                                                                    \
    kStageLabels, kSecondsFastBuckets, Bind::kLazy, Group::kDiffusion, Guard::kSkipNegative)       \
  X(kImageTtfpS, "vllm_omni:image_ttfp_s", Histogram,                                              \
    "Image time-to-first-output in seconds (stage submit → first image materialized; "           \
    "non-streaming single-image). Stage-level, not e2e — excludes API queue and inter-stage "    \
    "transfer before the image stage.",                                                            \
    kStageLabels, kSecondsBuckets, Bind::kLazy, Group::kDiffusion, Guard::kSkipNegative)           \
  X(kDenoiseStepLatencyS, "vllm_omni:denoise_step_latency_s", Histogram,                           \
    "Mean per-step denoise forward latency in seconds (forward_time / num_inference_steps).",      \
    kStageLabels, kSecondsFastBuckets, Bind::kLazy, Group::kDiffusion, Guard::kSkipNonPositive)    \
  /* Audio (§3.2), per replica. */                                                                \
  X(kAudioTtfpS, "vllm_omni:audio_ttfp_s", Histogram,                                              \
    "Time from request arrival to first audio packet/frame, in seconds.", kStageLabels,            \
    kSecondsBuckets, Bind::kLazy, Group::kAudio)                                                   \
  X(kAudioDurationS, "vllm_omni:audio_duration_s", Histogram,                                      \
    "Generated audio content duration in seconds (audio_frames / sample_rate).", kStageLabels,     \
    kSecondsBuckets, Bind::kLazy, Group::kAudio)                                                   \
  X(kAudioRtf, "vllm_omni:audio_rtf", Histogram,                                                   \
    "Audio real-time factor (stage_gen_time_s / audio_duration_s); streaming TTS requires < 1.",   \
    kStageLabels, kRtfBuckets, Bind::kLazy, Group::kAudio)                                         \
  X(kAudioFrames, "vllm_omni:audio_frames", Counter,                                               \
    "Cumulative audio frame count; per-model rate (not summable across models). Throughput "       \
    "recovered via rate().",                                                                       \
    kStageLabels, kNoBuckets, Bind::kLazy, Group::kAudio, Guard::kSkipNonPositive)                 \
  X(kAudioUnderrunS, "vllm_omni:audio_underrun_s", Histogram,                                      \
    "Per-request worst-case player-deficit in seconds (max time the player ran out of buffered "   \
    "audio). > 0 indicates listener experienced silent gaps.",                                     \
    kStageLabels, kSecondsFastBuckets, Bind::kLazy, Group::kAudio, Guard::kClampNegative)          \
  X(kAudioContinuityOk, "vllm_omni:audio_continuity_ok", Counter,                                  \
    "Incremented when the request's worst underrun stayed below threshold_ms. Pair with "          \
    "requests_success_total to compute streaming-continuity health rate.",                         \
    kAudioContinuityLabels, kNoBuckets, Bind::kLazy, Group::kAudio)                                \
  X(kAudioSkippedRequests, "vllm_omni:audio_skipped_requests", Counter,                            \
    "Silent-loss counter — code2wav rejected malformed codec input and returned 200 OK with "    \
    "empty "                                                                                       \
    "audio.",                                                                                      \
    kAudioSkippedLabels, kNoBuckets, Bind::kLazy, Group::kAudio)                                   \
  /* Speech streaming (§3.7). */                                                                  \
  X(kSpeechStreamAborted, "vllm_omni:speech_stream_aborted", Counter,                              \
    "Interrupted Speech audio generators, including before the first PCM payload, by reason "      \
    "(cancelled, closed, engine_dead, error).",                                                    \
    kSpeechAbortedLabels, kNoBuckets, Bind::kLazy, Group::kSpeech)                                 \
  X(kSpeechStreamCompleted, "vllm_omni:speech_stream_completed", Counter,                          \
    "Normally completed Speech audio generators; does not confirm client receipt.",                \
    kPipelineLabels, kNoBuckets, Bind::kLazy, Group::kSpeech)                                      \
  /* Cross-stage transfer (§3.4), per replica edge; one observation per physical hop. */          \
  X(kTransferSizeBytes, "vllm_omni:transfer_size_bytes", Histogram,                                \
    "Per-transfer payload size in bytes (one observation per physical hop).", kTransferLabels,     \
    kBytesBuckets, Bind::kLazy, Group::kTransfer)                                                  \
  X(kTransferTxS, "vllm_omni:transfer_tx_s", Histogram,                                            \
    "Sender-side time in seconds (serialize + submit to connector).", kTransferLabels,             \
    kSecondsFastBuckets, Bind::kLazy, Group::kTransfer)                                            \
  X(kTransferRxS, "vllm_omni:transfer_rx_s", Histogram,                                            \
    "Receiver-side time in seconds (recv + deserialize).", kTransferLabels, kSecondsFastBuckets,   \
    Bind::kLazy, Group::kTransfer)                                                                 \
  X(kTransferInFlightS, "vllm_omni:transfer_in_flight_s", Histogram,                               \
    "Network in-flight time in seconds (TX done -> RX recv start).", kTransferLabels,              \
    kSecondsFastBuckets, Bind::kLazy, Group::kTransfer)                                            \
  /* Realtime server-side VAD (§3.5, RealtimeVADMetrics): values arrive in ms, recorded in s. */  \
  X(kRealtimeVadActiveSessions, "vllm_omni:realtime_vad_active_sessions", Gauge,                   \
    "Number of active Realtime sessions using server-side VAD.", kPipelineLabels, kNoBuckets,      \
    Bind::kEager, Group::kRealtime)                                                                \
  X(kRealtimeVadInferenceLatencyS, "vllm_omni:realtime_vad_inference_latency_s", Histogram,        \
    "Server VAD inference time for one appended audio batch, in seconds.", kPipelineLabels,        \
    kSecondsFastBuckets, Bind::kEager, Group::kRealtime)                                           \
  X(kRealtimeVadEndpointDelayS, "vllm_omni:realtime_vad_endpoint_delay_s", Histogram,              \
    "Detected silence between the last speech frame and the committed endpoint, in seconds.",      \
    kPipelineLabels, kSecondsFastBuckets, Bind::kEager, Group::kRealtime)                          \
  X(kRealtimeVadErrors, "vllm_omni:realtime_vad_errors", Counter,                                  \
    "Server VAD errors and input-overflow rejections by reason.", kRealtimeVadErrorLabels,         \
    kNoBuckets, Bind::kLazy, Group::kRealtime)                                                     \
  /* Scheduler-native full-duplex sessions (pipeline-behaviour.md §3.9). */                       \
  X(kDuplexSessions, "vllm_omni:duplex_sessions", Gauge,                                           \
    "Current scheduler-native duplex sessions by bounded lifecycle state.", kDuplexSessionLabels,  \
    kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative, kDuplexSessionStates)         \
  X(kDuplexAppendRequests, "vllm_omni:duplex_append_requests", Counter,                            \
    "Scheduler-native duplex append attempts by bounded outcome.", kDuplexAppendLabels,            \
    kNoBuckets, Bind::kLazy, Group::kDuplex)                                                       \
  X(kDuplexAppendLatencyS, "vllm_omni:duplex_append_latency_s", Histogram,                         \
    "Scheduler-native duplex append latency in seconds, excluding control-tail queue wait.",       \
    kDuplexAppendLabels, kSecondsFastBuckets, Bind::kLazy, Group::kDuplex, Guard::kClampNegative)  \
  X(kDuplexControlQueueWaitS, "vllm_omni:duplex_control_queue_wait_s", Histogram,                  \
    "Duplex command wait in its per-session ordered control tail, in seconds.",                    \
    kDuplexControlLabels, kSecondsFastBuckets, Bind::kLazy, Group::kDuplex, Guard::kClampNegative) \
  X(kDuplexContextTokens, "vllm_omni:duplex_context_tokens", Gauge,                                \
    "Largest current retained Stage-0 context among active native duplex sessions.",               \
    kPipelineLabels, kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative)              \
  X(kDuplexContextLimitTokens, "vllm_omni:duplex_context_limit_tokens", Gauge,                     \
    "Largest configured Stage-0 context limit among active native duplex sessions.",               \
    kPipelineLabels, kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative)              \
  X(kDuplexContextUtilization, "vllm_omni:duplex_context_utilization", Gauge,                      \
    "Largest current Stage-0 context-limit utilization among active native duplex sessions.",      \
    kPipelineLabels, kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative)              \
  X(kDuplexAppendReceipts, "vllm_omni:duplex_append_receipts", Gauge,                              \
    "Largest current bounded append-receipt cache among active native duplex sessions.",           \
    kPipelineLabels, kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative)              \
  X(kDuplexReplicaAffinityLoss, "vllm_omni:duplex_replica_affinity_loss", Counter,                 \
    "Native duplex sessions whose resident-KV replica affinity was lost.", kPipelineLabels,        \
    kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kSkipNonPositive)                             \
  X(kDuplexReplayJournalTokens, "vllm_omni:duplex_replay_journal_tokens", Gauge,                   \
    "Largest bounded committed replay journal among active native duplex sessions, in tokens.",    \
    kPipelineLabels, kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative)              \
  X(kDuplexReplayJournalBytes, "vllm_omni:duplex_replay_journal_bytes", Gauge,                     \
    "Largest bounded committed replay journal among active native duplex sessions, in bytes.",     \
    kPipelineLabels, kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative)              \
  X(kDuplexResourceGeneration, "vllm_omni:duplex_resource_generation", Gauge,                      \
    "Largest physical scheduler-request generation among active native duplex sessions.",          \
    kPipelineLabels, kNoBuckets, Bind::kEager, Group::kDuplex, Guard::kClampNegative)              \
  X(kDuplexKvRebuilds, "vllm_omni:duplex_kv_rebuilds", Counter,                                    \
    "Scheduler-native duplex KV rebuild attempts by bounded reason and outcome.",                  \
    kDuplexKvRebuildLabels, kNoBuckets, Bind::kLazy, Group::kDuplex, Guard::kSkipNonPositive)

#endif  // MODELMETRICS_PIPELINE_OMNI_FAMILIES_H_
