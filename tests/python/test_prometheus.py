"""Ports tests/metrics/test_prometheus.py and the OmniPrometheusMetrics cases of
tests/metrics/test_emit_calls.py (upstream vllm-omni, §7 of pipeline-metrics-behaviour.md) to the
drop-in; values are read back from generate_latest(REGISTRY)."""

import math

import pytest
from conftest import exposition, lines_with, sample

from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics, OmniRequestCounter


def test_success_failure_and_gauges(model):
    m = OmniPrometheusMetrics(model_name=model)
    m.request_succeeded(1.5, "stop")
    m.request_succeeded(2.0, "stop")
    m.request_succeeded(3.0, "length")
    m.request_failed()
    m.set_running(5)
    m.set_waiting(2)
    text = exposition()
    for family in ("num_requests_running", "num_requests_waiting", "requests_success_total",
                   "e2e_request_latency_s"):
        assert f"# HELP vllm_omni:{family} " in text
    ok = f'vllm_omni:requests_success_total{{finished_reason="%s",model_name="{model}"}}'
    assert sample(text, ok % "stop") == 2.0
    assert sample(text, ok % "length") == 1.0
    assert sample(text, ok % "abort") == 1.0
    assert sample(text, f'vllm_omni:num_requests_running{{model_name="{model}"}}') == 5.0
    assert sample(text, f'vllm_omni:num_requests_waiting{{model_name="{model}"}}') == 2.0
    # The failure does not observe e2e latency.
    assert sample(text, f'vllm_omni:e2e_request_latency_s_count{{model_name="{model}"}}') == 3.0
    assert sample(text, f'vllm_omni:e2e_request_latency_s_sum{{model_name="{model}"}}') == 6.5


def test_every_pipeline_line_has_model_name_no_engine_no_legacy_names(model):
    m = OmniPrometheusMetrics(model)
    m.request_succeeded(1.0)
    text = exposition()
    for line in lines_with(text, "vllm_omni:"):
        assert "model_name=" in line, line
    assert 'engine="' not in "\n".join(lines_with(text, "vllm_omni:"))
    # The legacy pipeline names (the per-engine vllm:* families of a stat logger keep theirs).
    assert "vllm_omni:request_queue_time_seconds" not in text
    assert "vllm_omni:e2e_request_latency_seconds" not in text
    assert "vllm:omni_" not in text
    assert "_total_total" not in text
    assert "process_" in text  # prometheus_client's own collectors, in the same registry


def test_eager_children_exist_from_construction_even_with_stats_off(model):
    OmniPrometheusMetrics(model, log_stats=False)
    text = exposition()
    for series in ("num_requests_running", "num_requests_waiting", "prompt_tokens_total",
                   "generation_tokens_total", "image_count_total",
                   "e2e_request_latency_s_count", "request_queue_wait_s_count",
                   "num_inference_steps_count", "image_pixels_count"):
        assert sample(text, f'vllm_omni:{series}{{model_name="{model}"}}') == 0.0, series
    # Lazy families never appear for it.
    assert not [l for l in lines_with(text, f'model_name="{model}"')
                if "requests_success_total{" in l or "stage_gen_time_s" in l]


def test_log_stats_off_every_method_is_a_silent_no_op(model):
    m = OmniPrometheusMetrics(model, log_stats=False)
    m.set_running(3)
    m.set_waiting(4)
    m.observe_tokens(10, 20)
    m.request_succeeded(1.0)
    m.request_failed()
    m.observe_stage_gen_time(0, "llm", 0.25)
    m.observe_stage_in_queue(1, 0.1)
    m.observe_queue_wait(0.2)
    m.set_stage_waiting_requests(1, 5)
    m.observe_num_inference_steps(20)
    m.inc_image_count(2)
    m.observe_image_pixels(512)
    m.set_peak_memory(1, 2048.0)
    m.inc_requests_failed("stage_error")
    m.observe_kv_wait("x", 0.5)
    m.set_running("not a number")  # upstream returns before converting anything
    text = "\n".join(lines_with(exposition(), f'model_name="{model}"'))
    assert sample(text, f'vllm_omni:num_requests_running{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:prompt_tokens_total{{model_name="{model}"}}') == 0.0
    for lazy in ("requests_success_total{", "stage_gen_time_s", "stage_in_queue_s",
                 "stage_waiting_requests", "peak_memory_mb", "requests_failed_total{",
                 "kv_wait_s"):
        assert lazy not in text, lazy
    assert m.log_stats is False and m.model_name == model


def test_stage_gen_time_by_stage_type(model):
    m = OmniPrometheusMetrics(model)
    m.observe_stage_gen_time(0, "llm", 0.25)
    m.observe_stage_gen_time(1, "diffusion", 1.5)
    m.observe_stage_gen_time(1, "diffusion", -3.0)  # clamped to 0
    text = exposition()
    base = "vllm_omni:stage_gen_time_s"
    assert sample(text, f'{base}_count{{model_name="{model}",stage="0",stage_type="llm"}}') == 1.0
    assert sample(text, f'{base}_count{{model_name="{model}",stage="1",stage_type="diffusion"}}') == 2.0
    assert sample(text, f'{base}_sum{{model_name="{model}",stage="1",stage_type="diffusion"}}') == 1.5


def test_image_count_failed_reasons_and_no_double_total(model):
    m = OmniPrometheusMetrics(model)
    m.inc_image_count(2)
    m.inc_requests_failed("stage_error")
    m.inc_requests_failed("")  # `reason or "unknown"`
    m.inc_requests_failed(None)
    text = exposition()
    assert sample(text, f'vllm_omni:image_count_total{{model_name="{model}"}}') == 2.0
    failed = f'vllm_omni:requests_failed_total{{model_name="{model}",reason="%s"}}'
    assert sample(text, failed % "stage_error") == 1.0
    assert sample(text, failed % "unknown") == 2.0
    assert "_total_total" not in text


def test_stage_in_queue_zero_is_counted(model):
    m = OmniPrometheusMetrics(model)
    m.observe_stage_in_queue(1, 0.0)
    text = exposition()
    assert sample(text, f'vllm_omni:stage_in_queue_s_count{{model_name="{model}",stage="1"}}') == 1.0


def test_zero_guards_keep_eager_counts_at_zero(model):
    m = OmniPrometheusMetrics(model)
    m.observe_image_pixels(0)
    m.observe_num_inference_steps(0)
    m.inc_image_count(0)
    m.inc_image_count(-1)
    m.observe_tokens(0, -1)
    text = exposition()
    assert sample(text, f'vllm_omni:image_pixels_count{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:num_inference_steps_count{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:image_count_total{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:generation_tokens_total{{model_name="{model}"}}') == 0.0
    m.observe_image_pixels(512)
    m.observe_num_inference_steps(20)
    text = exposition()
    assert sample(text, f'vllm_omni:image_pixels_count{{model_name="{model}"}}') == 1.0
    # Upstream's default buckets: 512 pixels and 20 steps both land in +Inf only.
    assert sample(text, f'vllm_omni:image_pixels_bucket{{le="10.0",model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:image_pixels_bucket{{le="+Inf",model_name="{model}"}}') == 1.0
    assert sample(text, f'vllm_omni:num_inference_steps_sum{{model_name="{model}"}}') == 20.0


def test_tokens_peak_memory_waiting_kv_wait(model):
    m = OmniPrometheusMetrics(model)
    m.observe_tokens(prompt_tokens=10, generation_tokens=20)
    m.observe_tokens(5, 0)
    m.set_peak_memory(1, 2048.0)
    m.set_stage_waiting_requests(1, 8)
    m.set_stage_waiting_requests(2, -4)  # clamped to 0
    m.observe_kv_wait("", 0.25)
    m.observe_kv_wait("SharedMemoryConnector", 0.0)
    m.observe_kv_wait("SharedMemoryConnector", -1.0)  # skipped
    m.observe_queue_wait(-0.5)  # clamped, a zero is a sample
    text = exposition()
    assert sample(text, f'vllm_omni:prompt_tokens_total{{model_name="{model}"}}') == 15.0
    assert sample(text, f'vllm_omni:generation_tokens_total{{model_name="{model}"}}') == 20.0
    assert sample(text, f'vllm_omni:peak_memory_mb{{model_name="{model}",stage="1"}}') == 2048.0
    assert sample(text, f'vllm_omni:stage_waiting_requests{{model_name="{model}",stage="1"}}') == 8.0
    assert sample(text, f'vllm_omni:stage_waiting_requests{{model_name="{model}",stage="2"}}') == 0.0
    kv = f'vllm_omni:kv_wait_s_count{{connector_type="%s",model_name="{model}"}}'
    assert sample(text, kv % "unknown") == 1.0
    assert sample(text, kv % "SharedMemoryConnector") == 1.0
    assert sample(text, f'vllm_omni:request_queue_wait_s_count{{model_name="{model}"}}') == 1.0
    assert sample(text, f'vllm_omni:request_queue_wait_s_sum{{model_name="{model}"}}') == 0.0


def test_two_objects_of_one_model_share_children(model):
    a, b = OmniPrometheusMetrics(model), OmniPrometheusMetrics(model)
    a.request_succeeded(1.0)
    b.request_succeeded(1.0)
    text = exposition()
    series = f'vllm_omni:requests_success_total{{finished_reason="stop",model_name="{model}"}}'
    assert sample(text, series) == 2.0


def test_request_counter():
    c = OmniRequestCounter()
    assert c.value == 0
    c.increment()
    c.increment()
    c.decrement()
    assert c.value == 1
    c.decrement()
    c.decrement()  # floors at 0
    assert c.value == 0


def test_gauge_race_regressions(model):
    # 0 -> 1 -> 0 with one request finished: running and waiting read 0 after cleanup.
    m = OmniPrometheusMetrics(model)
    counter = OmniRequestCounter()
    counter.increment()
    m.set_running(counter.value)
    counter.decrement()
    m.set_running(counter.value)
    m.set_waiting(0)
    text = exposition()
    assert sample(text, f'vllm_omni:num_requests_running{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:num_requests_waiting{{model_name="{model}"}}') == 0.0


def test_bad_input_raises_type_error_and_keeps_what_was_recorded(model):
    m = OmniPrometheusMetrics(model)
    m.request_succeeded(1.0)
    for call in (lambda: m.request_succeeded(None), lambda: m.set_running("x"),
                 lambda: m.observe_queue_wait([1]), lambda: m.observe_tokens(None, 1),
                 lambda: m.inc_image_count("2"), lambda: m.set_running(),
                 lambda: m.set_running(1, 2), lambda: m.set_running(m=1)):
        with pytest.raises(TypeError):
            call()
    m.observe_queue_wait(float("nan"))  # dropped, never poisons _sum
    m.set_running(float("nan"))
    m.request_succeeded(float("nan"))  # the counter counts, the histogram skips NaN
    text = exposition()
    assert sample(text, f'vllm_omni:e2e_request_latency_s_count{{model_name="{model}"}}') == 1.0
    assert sample(text, f'vllm_omni:request_queue_wait_s_count{{model_name="{model}"}}') == 0.0
    ok = f'vllm_omni:requests_success_total{{finished_reason="stop",model_name="{model}"}}'
    assert sample(text, ok) == 2.0
    assert not math.isnan(sample(text, f'vllm_omni:e2e_request_latency_s_sum{{model_name="{model}"}}'))


def test_label_values_are_str_of_the_argument(model):
    m = OmniPrometheusMetrics(model)
    m.observe_stage_gen_time("3", "llm", 1.0)  # str and int ids name the same child
    m.observe_stage_gen_time(3, "llm", 1.0)
    m.request_succeeded(1.0, None)  # str(None), as prometheus_client's labels() does
    m.set_peak_memory(True, 1.0)
    text = exposition()
    assert sample(text, f'vllm_omni:stage_gen_time_s_count{{model_name="{model}",stage="3",stage_type="llm"}}') == 2.0
    assert sample(text, f'vllm_omni:requests_success_total{{finished_reason="None",model_name="{model}"}}') == 1.0
    assert sample(text, f'vllm_omni:peak_memory_mb{{model_name="{model}",stage="True"}}') == 1.0


def test_signatures_match_upstream():
    import inspect

    assert str(inspect.signature(OmniPrometheusMetrics)) == "(model_name, log_stats=True)"
    assert str(inspect.signature(OmniPrometheusMetrics.request_succeeded)) == \
        "(self, /, e2e_seconds, finished_reason='stop')"
    assert str(inspect.signature(OmniPrometheusMetrics.inc_image_count)) == "(self, /, n_images=1)"
    assert OmniPrometheusMetrics.__module__ == "modelmetrics.vllm_omni.metrics.prometheus"


@pytest.mark.parametrize(
    "stage_type,unit,steps,pixels",
    [("diffusion", "image", True, True), ("diffusion", "video", True, False),
     ("llm", "text", False, False), ("llm", "image", False, True)],
)
def test_workload_scope(model, stage_type, unit, steps, pixels):
    # test_emit_calls: diffusion+image -> steps, pixels, count; diffusion+video -> steps only;
    # llm+text -> nothing; llm+image -> pixels and count.
    from types import SimpleNamespace

    from modelmetrics.vllm_omni.metrics.utils import observe_stage_workload_metrics

    m = OmniPrometheusMetrics(model)
    observe_stage_workload_metrics(
        m, stage_type=stage_type,
        stage_metrics=SimpleNamespace(num_inference_steps=50, image_pixels=1024 * 1024,
                                      output_unit_type=unit, output_unit_count=2))
    text = exposition()
    count = lambda yes: 1.0 if yes else 0.0  # noqa: E731
    assert sample(text, f'vllm_omni:num_inference_steps_count{{model_name="{model}"}}') == count(steps)
    assert sample(text, f'vllm_omni:image_pixels_count{{model_name="{model}"}}') == count(pixels)
    assert sample(text, f'vllm_omni:image_count_total{{model_name="{model}"}}') == (2.0 if pixels else 0.0)
    if steps:
        assert sample(text, f'vllm_omni:num_inference_steps_sum{{model_name="{model}"}}') == 50.0


# ---- Duplex (upstream-changes-2026-09 §1.1): the methods upstream added to this class ----

def test_duplex_eager_children_exist_from_construction_even_with_stats_off(model):
    OmniPrometheusMetrics(model, log_stats=False)
    text = exposition()
    for state in ("active", "closing"):
        assert sample(text, f'vllm_omni:duplex_sessions{{model_name="{model}",state="{state}"}}') == 0.0
    for series in ("duplex_context_tokens", "duplex_context_limit_tokens",
                   "duplex_context_utilization", "duplex_append_receipts",
                   "duplex_replica_affinity_loss_total", "duplex_replay_journal_tokens",
                   "duplex_replay_journal_bytes", "duplex_resource_generation"):
        assert sample(text, f'vllm_omni:{series}{{model_name="{model}"}}') == 0.0, series
    mine = "\n".join(lines_with(text, f'model_name="{model}"'))
    for lazy in ("duplex_append_requests_total{", "duplex_append_latency_s", "duplex_kv_rebuilds",
                 "duplex_control_queue_wait_s"):
        assert lazy not in mine, lazy


def test_duplex_label_values_are_bounded_as_upstream_bounds_them(model):
    m = OmniPrometheusMetrics(model)
    m.observe_duplex_append(None, 0.1)          # not a str: not in upstream's set -> error
    m.observe_duplex_append(outcome="replica_lost", latency_s=0.2)
    m.observe_duplex_append("x" * 10000, -5)    # -> error, latency clamped to 0
    m.observe_duplex_control_queue_wait(7, 0.5)  # -> unknown
    m.inc_duplex_kv_recovery(reason="replica_loss", outcome="success")
    m.inc_duplex_kv_recovery("replica_loss", "success", count=3)
    m.inc_duplex_kv_recovery("replica_loss", "success", 0)
    m.inc_duplex_kv_recovery(b"replica_loss", "failure")  # bytes are not str -> other
    text = exposition()
    append = f'vllm_omni:duplex_append_requests_total{{model_name="{model}",outcome="%s"}}'
    assert sample(text, append % "error") == 2.0
    assert sample(text, append % "replica_lost") == 1.0
    assert sample(text, f'vllm_omni:duplex_append_latency_s_sum{{model_name="{model}",outcome="error"}}') \
        == pytest.approx(0.1)
    assert sample(text, f'vllm_omni:duplex_control_queue_wait_s_count{{model_name="{model}",'
                        f'operation="unknown"}}') == 1.0
    rebuilds = f'vllm_omni:duplex_kv_rebuilds_total{{model_name="{model}",outcome="%s",reason="%s"}}'
    assert sample(text, rebuilds % ("success", "replica_loss")) == 4.0
    assert sample(text, rebuilds % ("failure", "other")) == 1.0
    assert "x" * 100 not in text


def test_duplex_gauges_clamp_and_bad_input_raises_type_error(model):
    m = OmniPrometheusMetrics(model)
    m.set_duplex_sessions(active=4, closing=-1)
    m.set_duplex_context(2048, 4096, 0.5, 3)
    m.set_duplex_recovery_state(max_journal_tokens=-7, max_journal_bytes=1 << 20,
                                max_resource_generation=2)
    with pytest.raises(TypeError):
        m.set_duplex_context("many", 1, 1, 1)
    with pytest.raises(TypeError):
        m.set_duplex_sessions(1)
    text = exposition()
    assert sample(text, f'vllm_omni:duplex_sessions{{model_name="{model}",state="active"}}') == 4.0
    assert sample(text, f'vllm_omni:duplex_sessions{{model_name="{model}",state="closing"}}') == 0.0
    assert sample(text, f'vllm_omni:duplex_context_tokens{{model_name="{model}"}}') == 2048.0
    assert sample(text, f'vllm_omni:duplex_context_utilization{{model_name="{model}"}}') == 0.5
    assert sample(text, f'vllm_omni:duplex_replay_journal_tokens{{model_name="{model}"}}') == 0.0
    assert sample(text, f'vllm_omni:duplex_replay_journal_bytes{{model_name="{model}"}}') == 1048576.0


def test_duplex_signatures_match_upstream():
    import inspect

    expected = {
        "set_duplex_sessions": "(self, /, active, closing)",
        "observe_duplex_append": "(self, /, outcome, latency_s)",
        "observe_duplex_control_queue_wait": "(self, /, operation, queue_wait_s)",
        "set_duplex_context": "(self, /, max_tokens, max_limit_tokens, max_utilization, max_receipts)",
        "inc_duplex_replica_affinity_loss": "(self, /, count=1)",
        "set_duplex_recovery_state":
            "(self, /, max_journal_tokens, max_journal_bytes, max_resource_generation)",
        "inc_duplex_kv_recovery": "(self, /, reason, outcome, count=1)",
    }
    for name, signature in expected.items():
        assert str(inspect.signature(getattr(OmniPrometheusMetrics, name))) == signature, name
