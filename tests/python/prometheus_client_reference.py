"""A prometheus_client implementation of upstream's four observe classes, written the way
upstream's modules are: module-level Counter/Gauge/Histogram families (here in a registry of
their own), eager children bound in ``__init__``, lazy ones looked up with ``.labels(...)`` on
every call, the same guards. It is the oracle the tests compare the drop-in's text against
(test_upstream_parity.py) and the baseline bench/python/observe_bench.py measures against.
Families (names, HELP, labels, buckets) come from family_table.py."""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from family_table import FAMILIES

_KINDS = {"counter": Counter, "gauge": Gauge, "histogram": Histogram}


class Families:
    """Every family of the table in one prometheus_client registry."""

    def __init__(self, registry=None):
        self.registry = registry or CollectorRegistry()
        self.f = {}
        for exposed, (typ, help_text, labels, buckets) in FAMILIES.items():
            name = exposed[: -len("_total")] if typ == "counter" else exposed
            kwargs = {"registry": self.registry}
            if typ == "histogram":
                kwargs["buckets"] = buckets
            self.f[name.split(":", 1)[1]] = _KINDS[typ](name, help_text, list(labels), **kwargs)


class OmniPrometheusMetrics:
    def __init__(self, families, model_name, log_stats=True):
        f = families.f
        self.f, self.model_name, self.log_stats = f, model_name, log_stats
        self._running = f["num_requests_running"].labels(model_name)
        self._waiting = f["num_requests_waiting"].labels(model_name)
        self._e2e = f["e2e_request_latency_s"].labels(model_name)
        self._prompt = f["prompt_tokens"].labels(model_name)
        self._generation = f["generation_tokens"].labels(model_name)
        self._queue_wait = f["request_queue_wait_s"].labels(model_name)
        self._steps = f["num_inference_steps"].labels(model_name)
        self._image_count = f["image_count"].labels(model_name)
        self._image_pixels = f["image_pixels"].labels(model_name)
        self._active = f["duplex_sessions"].labels(model_name, "active")
        self._closing = f["duplex_sessions"].labels(model_name, "closing")
        self._gauges = {
            k: f[k].labels(model_name)
            for k in (
                "duplex_context_tokens", "duplex_context_limit_tokens", "duplex_context_utilization",
                "duplex_append_receipts", "duplex_replay_journal_tokens", "duplex_replay_journal_bytes",
                "duplex_resource_generation")
        }
        self._affinity_loss = f["duplex_replica_affinity_loss"].labels(model_name)

    def set_running(self, n):
        if not self.log_stats:
            return
        self._running.set(n)

    def set_waiting(self, n):
        if not self.log_stats:
            return
        self._waiting.set(n)

    def observe_tokens(self, prompt_tokens, generation_tokens):
        if not self.log_stats:
            return
        if prompt_tokens > 0:
            self._prompt.inc(prompt_tokens)
        if generation_tokens > 0:
            self._generation.inc(generation_tokens)

    def request_succeeded(self, e2e_seconds, finished_reason="stop"):
        if not self.log_stats:
            return
        self.f["requests_success"].labels(self.model_name, finished_reason).inc()
        self._e2e.observe(e2e_seconds)

    def request_failed(self):
        if not self.log_stats:
            return
        self.f["requests_success"].labels(self.model_name, "abort").inc()

    def observe_stage_gen_time(self, stage, stage_type, gen_time_s):
        if not self.log_stats:
            return
        self.f["stage_gen_time_s"].labels(self.model_name, str(stage), stage_type).observe(
            max(gen_time_s, 0.0))

    def observe_stage_in_queue(self, stage, in_queue_s):
        if not self.log_stats:
            return
        self.f["stage_in_queue_s"].labels(self.model_name, str(stage)).observe(max(in_queue_s, 0.0))

    def observe_queue_wait(self, queue_wait_s):
        if not self.log_stats:
            return
        self._queue_wait.observe(max(queue_wait_s, 0.0))

    def set_stage_waiting_requests(self, stage, n_waiting):
        if not self.log_stats:
            return
        self.f["stage_waiting_requests"].labels(self.model_name, str(stage)).set(max(n_waiting, 0))

    def observe_num_inference_steps(self, n_steps):
        if not self.log_stats or n_steps <= 0:
            return
        self._steps.observe(n_steps)

    def inc_image_count(self, n_images=1):
        if not self.log_stats or n_images <= 0:
            return
        self._image_count.inc(n_images)

    def observe_image_pixels(self, n_pixels):
        if not self.log_stats or n_pixels <= 0:
            return
        self._image_pixels.observe(n_pixels)

    def set_peak_memory(self, stage, peak_memory_mb):
        if not self.log_stats:
            return
        self.f["peak_memory_mb"].labels(self.model_name, str(stage)).set(max(peak_memory_mb, 0.0))

    def inc_requests_failed(self, reason):
        if not self.log_stats:
            return
        self.f["requests_failed"].labels(self.model_name, reason or "unknown").inc()

    def observe_kv_wait(self, connector_type, kv_wait_s):
        if not self.log_stats or kv_wait_s < 0:
            return
        self.f["kv_wait_s"].labels(self.model_name, connector_type or "unknown").observe(kv_wait_s)

    # Duplex (upstream-changes-2026-09 §1.1): bounded label values, clamps and count guards.
    _OUTCOMES = {"success", "deduplicated", "timeout", "resource_exhausted", "admission_rejected",
                 "cancelled", "replica_lost", "kv_recovery_failed", "error"}
    _OPERATIONS = {"open", "append", "signal", "close", "touch", "resume"}

    def set_duplex_sessions(self, active, closing):
        if not self.log_stats:
            return
        self._active.set(max(active, 0))
        self._closing.set(max(closing, 0))

    def observe_duplex_append(self, outcome, latency_s):
        if not self.log_stats:
            return
        bounded = outcome if outcome in self._OUTCOMES else "error"
        self.f["duplex_append_requests"].labels(self.model_name, bounded).inc()
        self.f["duplex_append_latency_s"].labels(self.model_name, bounded).observe(max(latency_s, 0.0))

    def observe_duplex_control_queue_wait(self, operation, queue_wait_s):
        if not self.log_stats:
            return
        bounded = operation if operation in self._OPERATIONS else "unknown"
        self.f["duplex_control_queue_wait_s"].labels(self.model_name, bounded).observe(max(queue_wait_s, 0.0))

    def set_duplex_context(self, max_tokens, max_limit_tokens, max_utilization, max_receipts):
        if not self.log_stats:
            return
        g = self._gauges
        g["duplex_context_tokens"].set(max(max_tokens, 0))
        g["duplex_context_limit_tokens"].set(max(max_limit_tokens, 0))
        g["duplex_context_utilization"].set(max(max_utilization, 0.0))
        g["duplex_append_receipts"].set(max(max_receipts, 0))

    def inc_duplex_replica_affinity_loss(self, count=1):
        if not self.log_stats or count <= 0:
            return
        self._affinity_loss.inc(count)

    def set_duplex_recovery_state(self, max_journal_tokens, max_journal_bytes, max_resource_generation):
        if not self.log_stats:
            return
        g = self._gauges
        g["duplex_replay_journal_tokens"].set(max(max_journal_tokens, 0))
        g["duplex_replay_journal_bytes"].set(max(max_journal_bytes, 0))
        g["duplex_resource_generation"].set(max(max_resource_generation, 0))

    def inc_duplex_kv_recovery(self, reason, outcome, count=1):
        if not self.log_stats or count <= 0:
            return
        reason = reason if reason in {"replica_loss", "context_rollover"} else "other"
        outcome = outcome if outcome in {"success", "failure"} else "failure"
        self.f["duplex_kv_rebuilds"].labels(self.model_name, reason, outcome).inc(count)


class OmniModalityMetrics:
    def __init__(self, families, model_name, log_stats=True):
        self.f, self.model_name, self.log_stats = families.f, model_name, log_stats

    def _observe(self, family, stage, replica, value):
        if not self.log_stats:
            return
        self.f[family].labels(self.model_name, stage, replica).observe(value)

    def observe_audio_ttfp(self, stage, replica, ttfp_seconds):
        self._observe("audio_ttfp_s", stage, replica, ttfp_seconds)

    def observe_audio_duration(self, stage, replica, duration_seconds):
        self._observe("audio_duration_s", stage, replica, duration_seconds)

    def observe_audio_rtf(self, stage, replica, rtf):
        self._observe("audio_rtf", stage, replica, rtf)

    def inc_audio_frames(self, stage, replica, n_frames):
        if not self.log_stats or n_frames <= 0:
            return
        self.f["audio_frames"].labels(self.model_name, stage, replica).inc(n_frames)

    def observe_audio_underrun(self, stage, replica, underrun_s):
        self._observe("audio_underrun_s", stage, replica, max(underrun_s, 0.0))

    def inc_audio_continuity_ok(self, stage, replica, threshold_ms):
        if not self.log_stats:
            return
        self.f["audio_continuity_ok"].labels(self.model_name, stage, replica,
                                             str(int(threshold_ms))).inc()

    def inc_audio_skipped(self, stage, replica, reason):
        if not self.log_stats:
            return
        self.f["audio_skipped_requests"].labels(self.model_name, stage, replica,
                                                reason or "unknown").inc()

    def observe_diffusion_exec(self, stage, replica, seconds):
        self._observe("diffusion_exec_s", stage, replica, seconds)

    def observe_diffusion_exec_per_step(self, stage, replica, seconds):
        self._observe("diffusion_exec_per_step_s", stage, replica, seconds)

    def observe_diffusion_preprocess(self, stage, replica, seconds):
        self._observe("diffusion_preprocess_s", stage, replica, seconds)

    def observe_diffusion_postprocess(self, stage, replica, seconds):
        self._observe("diffusion_postprocess_s", stage, replica, seconds)

    def observe_vae_decode(self, stage, replica, seconds):
        if seconds >= 0:
            self._observe("vae_decode_s", stage, replica, seconds)

    def observe_diffusion_forward(self, stage, replica, seconds):
        if seconds >= 0:
            self._observe("diffusion_forward_s", stage, replica, seconds)

    def observe_diffusion_kv_load(self, stage, replica, seconds):
        if seconds >= 0:
            self._observe("diffusion_kv_load_s", stage, replica, seconds)

    def observe_image_ttfp(self, stage, replica, seconds):
        if seconds >= 0:
            self._observe("image_ttfp_s", stage, replica, seconds)

    def observe_denoise_step_latency(self, stage, replica, seconds):
        if seconds > 0:
            self._observe("denoise_step_latency_s", stage, replica, seconds)

    def inc_speech_stream_completed(self):
        if not self.log_stats:
            return
        self.f["speech_stream_completed"].labels(self.model_name).inc()

    def inc_speech_stream_aborted(self, reason):
        if not self.log_stats:
            return
        if reason not in ("cancelled", "closed", "engine_dead", "error"):
            reason = "error"
        self.f["speech_stream_aborted"].labels(self.model_name, reason).inc()


class OmniTransferMetrics:
    def __init__(self, families, model_name, log_stats=True):
        self.f, self.model_name, self.log_stats = families.f, model_name, log_stats

    def _observe(self, family, from_stage, from_replica, to_stage, to_replica, value):
        if not self.log_stats:
            return
        self.f[family].labels(self.model_name, str(from_stage), str(from_replica), str(to_stage),
                              str(to_replica)).observe(value)

    def observe_size(self, from_stage, from_replica, to_stage, to_replica, size_bytes):
        self._observe("transfer_size_bytes", from_stage, from_replica, to_stage, to_replica, size_bytes)

    def observe_tx_time(self, from_stage, from_replica, to_stage, to_replica, tx_time_s):
        self._observe("transfer_tx_s", from_stage, from_replica, to_stage, to_replica, tx_time_s)

    def observe_rx_time(self, from_stage, from_replica, to_stage, to_replica, rx_time_s):
        self._observe("transfer_rx_s", from_stage, from_replica, to_stage, to_replica, rx_time_s)

    def observe_in_flight_time(self, from_stage, from_replica, to_stage, to_replica, in_flight_time_s):
        self._observe("transfer_in_flight_s", from_stage, from_replica, to_stage, to_replica,
                      in_flight_time_s)


class RealtimeVADMetrics:
    def __init__(self, families, model_name, log_stats=True):
        f = families.f
        self.f, self.model_name, self.log_stats = f, model_name, log_stats
        self._active = f["realtime_vad_active_sessions"].labels(model_name)
        self._inference = f["realtime_vad_inference_latency_s"].labels(model_name)
        self._delay = f["realtime_vad_endpoint_delay_s"].labels(model_name)

    def session_started(self):
        if self.log_stats:
            self._active.inc()

    def session_finished(self):
        if self.log_stats:
            self._active.dec()

    def observe_inference(self, latency_ms):
        if self.log_stats:
            self._inference.observe(latency_ms / 1000.0)

    def observe_endpoint_delay(self, delay_ms):
        if self.log_stats:
            self._delay.observe(delay_ms / 1000.0)

    def error(self, reason):
        if self.log_stats:
            self.f["realtime_vad_errors"].labels(self.model_name, reason).inc()


def speech_request(p, m, t, i):
    """One simulated speech request, thinker -> talker -> code2wav, as an entrypoint records it
    (about 30 calls): the gauges, success, e2e, tokens, stage generation times, TTFP, finalize
    frames/duration/RTF, streaming underrun/continuity, Speech completed, four transfer hops.
    Works on either implementation (the same method names)."""
    r = str(i % 2)
    p.set_running(3)
    p.set_waiting(1)
    t.observe_size(0, i % 2, 1, 0, 65536)
    t.observe_tx_time(0, i % 2, 1, 0, 0.0021)
    t.observe_rx_time(0, i % 2, 1, 0, 0.0015)
    t.observe_in_flight_time(0, i % 2, 1, 0, 0.0007)
    t.observe_size(1, 0, 2, i % 2, 16384)
    t.observe_tx_time(1, 0, 2, i % 2, 0.0011)
    t.observe_rx_time(1, 0, 2, i % 2, 0.0009)
    t.observe_in_flight_time(1, 0, 2, i % 2, 0.0004)
    p.observe_stage_gen_time(0, "llm", 0.42)
    p.observe_stage_gen_time(1, "llm", 0.91)
    p.observe_stage_gen_time(2, "llm", 1.37)
    m.observe_audio_ttfp("2", r, 0.35)
    m.inc_audio_frames("2", r, 96000)
    m.observe_audio_duration("2", r, 4.0)
    m.observe_audio_rtf("2", r, 0.34)
    m.observe_audio_underrun("2", r, 0.0)
    m.inc_audio_continuity_ok("2", r, 100)
    m.inc_speech_stream_completed()
    p.observe_queue_wait(0.012)
    p.observe_tokens(120, 380)
    p.request_succeeded(2.7, "stop")
    p.set_running(2)
    p.set_waiting(0)
    p.set_stage_waiting_requests(0, 1)
    p.set_stage_waiting_requests(1, 0)
    p.set_stage_waiting_requests(2, 0)
    p.observe_kv_wait("SharedMemoryConnector", 0.004)
    p.set_peak_memory(0, 20480.0)
