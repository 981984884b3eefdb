"""The exposed families a drop-in must print: name (as exposed), type, HELP (byte-exact, from
shared/spec/reference/vllm-omni-python-api.md; the two speech_stream families from the design
document), label names (declaration order) and bucket list (§2.1 of pipeline-metrics-behaviour.md).
Written out here, independently of the C++ catalog, so the tests compare against the references."""

SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
FAST = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0)
RTF = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5, 2.0, 5.0, 10.0)
BYTES = (1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0, 67108864.0, 268435456.0)
# prometheus_client's default list (upstream passes no buckets for steps and pixels)
DEFAULT = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)

FAMILIES = {
    'vllm_omni:num_requests_running': ('gauge', 'Number of requests currently running across all pipeline stages.', ('model_name',), None),
    'vllm_omni:num_requests_waiting': ('gauge', 'Number of requests waiting to be scheduled.', ('model_name',), None),
    'vllm_omni:requests_success_total': ('counter', 'Total requests by completion reason (stop / length / abort / ...). Aborts cover client-disconnect / cancellation paths in addition to upstream FinishReason.ABORT.', ('model_name', 'finished_reason'), None),
    'vllm_omni:e2e_request_latency_s': ('histogram', 'Pipeline-global end-to-end request latency in seconds (user arrival to complete response).', ('model_name',), SECONDS),
    'vllm_omni:prompt_tokens_total': ('counter', 'Total prompt (input) tokens processed across all pipeline stages.', ('model_name',), None),
    'vllm_omni:generation_tokens_total': ('counter', 'Total generation (output) tokens produced across all pipeline stages.', ('model_name',), None),
    'vllm_omni:stage_gen_time_s': ('histogram', 'Per-stage generation time in seconds for diffusion / image stages.', ('model_name', 'stage', 'stage_type'), SECONDS),
    'vllm_omni:request_queue_wait_s': ('histogram', 'Per-request queue wait between submit arrival and stage submit, in seconds.', ('model_name',), SECONDS),
    'vllm_omni:stage_waiting_requests': ('gauge', "Sum of the latest scheduler waiting snapshots across a stage's replicas; diffusion snapshots update when outputs arrive.", ('model_name', 'stage'), None),
    'vllm_omni:stage_in_queue_s': ('histogram', 'Time in seconds from diffusion scheduler enqueue to initial execution admission. Zero is the healthy low-load baseline and is counted.', ('model_name', 'stage'), FAST),
    'vllm_omni:num_inference_steps': ('histogram', 'Diffusion step count distribution per request.', ('model_name',), DEFAULT),
    'vllm_omni:image_count_total': ('counter', 'Cumulative image count; per-model rate. Throughput recovered via rate().', ('model_name',), None),
    'vllm_omni:image_pixels': ('histogram', 'Image pixel count distribution per request.', ('model_name',), DEFAULT),
    'vllm_omni:peak_memory_mb': ('gauge', "Peak GPU memory in MB observed during a stage's generation.", ('model_name', 'stage'), None),
    'vllm_omni:requests_failed_total': ('counter', 'Total requests by failure reason. Pairs with requests_success_total (abort bucket) to give the full failure surface. Reasons are bounded to client_abort, client_disconnect, stage_error, and unknown.', ('model_name', 'reason'), None),
    'vllm_omni:kv_wait_s': ('histogram', 'KV cache transfer wait time per request, sliced by connector backend.', ('model_name', 'connector_type'), SECONDS),
    'vllm_omni:diffusion_exec_s': ('histogram', 'DiT forward pass execution time per request in seconds.', ('model_name', 'stage', 'replica'), SECONDS),
    'vllm_omni:diffusion_exec_per_step_s': ('histogram', 'DiT forward pass execution time per denoising step in seconds.', ('model_name', 'stage', 'replica'), FAST),
    'vllm_omni:diffusion_preprocess_s': ('histogram', 'Diffusion input preprocessing time per request in seconds.', ('model_name', 'stage', 'replica'), FAST),
    'vllm_omni:diffusion_postprocess_s': ('histogram', 'Diffusion output postprocessing (VAE decode) time per request in seconds.', ('model_name', 'stage', 'replica'), FAST),
    'vllm_omni:vae_decode_s': ('histogram', 'VAE decode latency in seconds (latents -> pixels/audio/video).', ('model_name', 'stage', 'replica'), SECONDS),
    'vllm_omni:diffusion_forward_s': ('histogram', 'Diffusion forward-only latency in seconds (denoise loop; excludes preprocess / postprocess / VAE decode / KV load). Absent when the pipeline profiler is off.', ('model_name', 'stage', 'replica'), SECONDS),
    'vllm_omni:diffusion_kv_load_s': ('histogram', 'Diffusion KV-recv latency in seconds (AR→diffusion KV fetch; absent when the stage has no upstream KV to receive).', ('model_name', 'stage', 'replica'), FAST),
    'vllm_omni:image_ttfp_s': ('histogram', 'Image time-to-first-output in seconds (stage submit → first image materialized; non-streaming single-image). Stage-level, not e2e — excludes API queue and inter-stage transfer before the image stage.', ('model_name', 'stage', 'replica'), SECONDS),
    'vllm_omni:denoise_step_latency_s': ('histogram', 'Mean per-step denoise forward latency in seconds (forward_time / num_inference_steps).', ('model_name', 'stage', 'replica'), FAST),
    'vllm_omni:audio_ttfp_s': ('histogram', 'Time from request arrival to first audio packet/frame, in seconds.', ('model_name', 'stage', 'replica'), SECONDS),
    'vllm_omni:audio_duration_s': ('histogram', 'Generated audio content duration in seconds (audio_frames / sample_rate).', ('model_name', 'stage', 'replica'), SECONDS),
    'vllm_omni:audio_rtf': ('histogram', 'Audio real-time factor (stage_gen_time_s / audio_duration_s); streaming TTS requires < 1.', ('model_name', 'stage', 'replica'), RTF),
    'vllm_omni:audio_frames_total': ('counter', 'Cumulative audio frame count; per-model rate (not summable across models). Throughput recovered via rate().', ('model_name', 'stage', 'replica'), None),
    'vllm_omni:audio_underrun_s': ('histogram', 'Per-request worst-case player-deficit in seconds (max time the player ran out of buffered audio). > 0 indicates listener experienced silent gaps.', ('model_name', 'stage', 'replica'), FAST),
    'vllm_omni:audio_continuity_ok_total': ('counter', "Incremented when the request's worst underrun stayed below threshold_ms. Pair with requests_success_total to compute streaming-continuity health rate.", ('model_name', 'stage', 'replica', 'threshold_ms'), None),
    'vllm_omni:audio_skipped_requests_total': ('counter', 'Silent-loss counter — code2wav rejected malformed codec input and returned 200 OK with empty audio.', ('model_name', 'stage', 'replica', 'reason'), None),
    'vllm_omni:speech_stream_aborted_total': ('counter', 'Interrupted Speech audio generators, including before the first PCM payload, by reason (cancelled, closed, engine_dead, error).', ('model_name', 'reason'), None),
    'vllm_omni:speech_stream_completed_total': ('counter', 'Normally completed Speech audio generators; does not confirm client receipt.', ('model_name',), None),
    'vllm_omni:transfer_size_bytes': ('histogram', 'Per-transfer payload size in bytes (one observation per physical hop).', ('model_name', 'from_stage', 'from_replica', 'to_stage', 'to_replica'), BYTES),
    'vllm_omni:transfer_tx_s': ('histogram', 'Sender-side time in seconds (serialize + submit to connector).', ('model_name', 'from_stage', 'from_replica', 'to_stage', 'to_replica'), FAST),
    'vllm_omni:transfer_rx_s': ('histogram', 'Receiver-side time in seconds (recv + deserialize).', ('model_name', 'from_stage', 'from_replica', 'to_stage', 'to_replica'), FAST),
    'vllm_omni:transfer_in_flight_s': ('histogram', 'Network in-flight time in seconds (TX done -> RX recv start).', ('model_name', 'from_stage', 'from_replica', 'to_stage', 'to_replica'), FAST),
    'vllm_omni:realtime_vad_active_sessions': ('gauge', 'Number of active Realtime sessions using server-side VAD.', ('model_name',), None),
    'vllm_omni:realtime_vad_inference_latency_s': ('histogram', 'Server VAD inference time for one appended audio batch, in seconds.', ('model_name',), FAST),
    'vllm_omni:realtime_vad_endpoint_delay_s': ('histogram', 'Detected silence between the last speech frame and the committed endpoint, in seconds.', ('model_name',), FAST),
    'vllm_omni:realtime_vad_errors_total': ('counter', 'Server VAD errors and input-overflow rejections by reason.', ('model_name', 'reason'), None),
    # Duplex (shared/spec/reference/upstream-changes-2026-09.md §1.1).
    'vllm_omni:duplex_sessions': ('gauge', 'Current scheduler-native duplex sessions by bounded lifecycle state.', ('model_name', 'state'), None),
    'vllm_omni:duplex_append_requests_total': ('counter', 'Scheduler-native duplex append attempts by bounded outcome.', ('model_name', 'outcome'), None),
    'vllm_omni:duplex_append_latency_s': ('histogram', 'Scheduler-native duplex append latency in seconds, excluding control-tail queue wait.', ('model_name', 'outcome'), FAST),
    'vllm_omni:duplex_control_queue_wait_s': ('histogram', 'Duplex command wait in its per-session ordered control tail, in seconds.', ('model_name', 'operation'), FAST),
    'vllm_omni:duplex_context_tokens': ('gauge', 'Largest current retained Stage-0 context among active native duplex sessions.', ('model_name',), None),
    'vllm_omni:duplex_context_limit_tokens': ('gauge', 'Largest configured Stage-0 context limit among active native duplex sessions.', ('model_name',), None),
    'vllm_omni:duplex_context_utilization': ('gauge', 'Largest current Stage-0 context-limit utilization among active native duplex sessions.', ('model_name',), None),
    'vllm_omni:duplex_append_receipts': ('gauge', 'Largest current bounded append-receipt cache among active native duplex sessions.', ('model_name',), None),
    'vllm_omni:duplex_replica_affinity_loss_total': ('counter', 'Native duplex sessions whose resident-KV replica affinity was lost.', ('model_name',), None),
    'vllm_omni:duplex_replay_journal_tokens': ('gauge', 'Largest bounded committed replay journal among active native duplex sessions, in tokens.', ('model_name',), None),
    'vllm_omni:duplex_replay_journal_bytes': ('gauge', 'Largest bounded committed replay journal among active native duplex sessions, in bytes.', ('model_name',), None),
    'vllm_omni:duplex_resource_generation': ('gauge', 'Largest physical scheduler-request generation among active native duplex sessions.', ('model_name',), None),
    'vllm_omni:duplex_kv_rebuilds_total': ('counter', 'Scheduler-native duplex KV rebuild attempts by bounded reason and outcome.', ('model_name', 'reason', 'outcome'), None),
}
