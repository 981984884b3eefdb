"""The per-engine vllm:* families (stat_logger.py): upstream's label-rewrite and engine-lookup
cases (tests/metrics/test_stat_logger.py @ 8ad4f506, §7), record() with stand-ins for vLLM's
SchedulerStats / IterationStats (no vLLM installed), the 1 Hz throttle, gating off, and the
scoped unregister (a new logger replaces vllm:* and keeps vllm_omni:*)."""

from types import SimpleNamespace as NS

import pytest
from conftest import exposition, lines_with, sample

from modelmetrics.vllm_omni.metrics import stat_logger
from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
from modelmetrics.vllm_omni.metrics.stat_logger import (
    OmniPrometheusStatLogger,
    OmniSchedulerStatsMixin,
    SchedulerStatsThrottle,
    build_stage_replica_map,
)


def test_rewrite_labelnames():
    rw = stat_logger._rewrite_labelnames
    assert rw(["model_name", "engine"]) == ["model_name", "stage", "replica"]
    assert rw(["model_name", "engine", "reason"]) == ["model_name", "stage", "replica", "reason"]
    assert rw(["model_name"]) == ["model_name"]
    assert rw(("model_name", "engine")) == ("model_name", "stage", "replica")
    assert rw(None) is None


def test_engine_lookup_and_flat_numbering():
    assert build_stage_replica_map([1, 2, 1]) == {0: ("0", "0"), 1: ("1", "0"), 2: ("1", "1"),
                                                  3: ("2", "0")}
    OmniPrometheusStatLogger(None, {7: ("talker", "1"), 2: ("thinker", "0")}, model_name="m")
    assert stat_logger._engine_to_stage_replica(7) == ("talker", "1")
    assert stat_logger._engine_to_stage_replica("2") == ("thinker", "0")
    with pytest.raises(KeyError):
        stat_logger._engine_to_stage_replica(5)


def test_per_engine_labelvalues_setter_rewrites_two_tuples():
    mapping = {0: ("thinker", "0"), 1: ("talker", "0"), 2: ("talker", "1")}
    logger = OmniPrometheusStatLogger(None, mapping, model_name="my-model")
    logger.per_engine_labelvalues = {0: ["my-model", "0"], 1: ["my-model", "1"], 2: ["my-model", "2"]}
    assert logger.per_engine_labelvalues == {0: ["my-model", "thinker", "0"],
                                             1: ["my-model", "talker", "0"],
                                             2: ["my-model", "talker", "1"]}
    assert logger.stage_replica_map == mapping


def finished(**kw):
    base = dict(finish_reason="stop", e2e_latency=1.5, num_prompt_tokens=50,
                num_generation_tokens=10, max_tokens_param=256, queued_time=0.1, prefill_time=0.2,
                inference_time=1.3, decode_time=1.1, mean_time_per_output_token=0.1,
                num_cached_tokens=-1)
    base.update(kw)
    return NS(**base)


def test_record_reads_vllm_shaped_objects():
    model = "stat-logger-record"
    config = NS(model_config=NS(served_model_name=model, max_model_len=100000),
                kv_transfer_config=NS(kv_connector="NixlConnector"))
    logger = OmniPrometheusStatLogger(config, build_stage_replica_map([2, 1]))
    sched = NS(num_running_reqs=3, num_waiting_reqs=1, num_skipped_waiting_reqs=2,
               kv_cache_usage=0.5,
               prefix_cache_stats=NS(queries=100, hits=40),
               kv_connector_stats=NS(data={"transfer_duration": [0.01, 0.02],
                                           "post_duration": [0.001], "bytes_transferred": [4096],
                                           "num_descriptors": [12], "num_failed_transfers": [1]}))
    it = NS(num_generation_tokens=10, num_prompt_tokens=50, num_preempted_reqs=1,
            prompt_token_stats=NS(computed=30, local_cache_hit=20, external_kv_transfer=0,
                                  cached_tokens=20),
            finished_requests=[finished(), finished(finish_reason="length", num_preemptions=3)],
            max_num_generation_tokens_iter=[128], n_params_iter=[1],
            time_to_first_tokens_iter=[0.2], inter_token_latencies_iter=[0.01, 0.02])
    logger.record(sched, it, NS(queries=5, hits=2), engine_idx=2)
    logger.record(None, it, engine_idx=2)  # iteration stats alone are recorded too
    text = exposition()
    lab = f'model_name="{model}",replica="0",stage="1"'
    assert sample(text, f"vllm:num_requests_running{{{lab}}}") == 3.0
    assert sample(text, f"vllm:num_requests_waiting{{{lab}}}") == 3.0  # waiting + deferred
    deferred = f'model_name="{model}",reason="deferred",replica="0",stage="1"'
    assert sample(text, f"vllm:num_requests_waiting_by_reason{{{deferred}}}") == 2.0
    assert sample(text, f"vllm:iteration_tokens_total_sum{{{lab}}}") == 80.0  # computed + generated
    assert sample(text, f'vllm:request_prompt_tokens_bucket{{le="100000.0",{lab}}}') == 4.0
    assert "vllm:prompt_tokens_recomputed" not in text
    assert sample(text, f"vllm:kv_cache_usage_perc{{{lab}}}") == 0.5
    assert sample(text, f"vllm:prefix_cache_queries_total{{{lab}}}") == 100.0
    assert sample(text, f"vllm:prefix_cache_hits_total{{{lab}}}") == 40.0
    assert sample(text, f"vllm:mm_cache_hits_total{{{lab}}}") == 2.0
    assert sample(text, f"vllm:nixl_xfer_time_seconds_count{{{lab}}}") == 2.0
    assert sample(text, f"vllm:nixl_num_failed_transfers_total{{{lab}}}") == 1.0
    assert sample(text, f"vllm:generation_tokens_total{{{lab}}}") == 20.0
    assert sample(text, f"vllm:num_preemptions_total{{{lab}}}") == 2.0
    assert sample(text, f'vllm:request_success_total{{finished_reason="stop",{lab}}}') == 2.0
    assert sample(text, f'vllm:request_success_total{{finished_reason="length",{lab}}}') == 2.0
    assert sample(text, f"vllm:e2e_request_latency_seconds_count{{{lab}}}") == 4.0
    # Once per finished request, 0 included (vLLM #49984); a record without the field counts 0.
    assert sample(text, f'vllm:request_num_preemptions_bucket{{le="1.0",{lab}}}') == 2.0
    assert sample(text, f'vllm:request_num_preemptions_bucket{{le="3.0",{lab}}}') == 4.0
    assert sample(text, f"vllm:request_num_preemptions_sum{{{lab}}}") == 6.0
    assert sample(text, f"vllm:inter_token_latency_seconds_count{{{lab}}}") == 4.0
    # Every engine's children exist at once (eager), with zeros.
    other = f'model_name="{model}",replica="1",stage="0"'
    assert sample(text, f"vllm:num_requests_running{{{other}}}") == 0.0
    assert 'engine="' not in "\n".join(lines_with(text, "vllm:"))
    with pytest.raises(KeyError):
        logger.record(sched, None, engine_idx=9)
    with pytest.raises(TypeError):
        logger.record(NS(num_running_reqs="three"), None, engine_idx=0)


def test_every_record_is_recorded_and_no_connector_means_no_connector_families():
    # vLLM main's logger has no throttle (the scheduler's make_stats() gates stats), and builds
    # connector families only for the configured connector.
    model = "stat-logger-no-throttle"
    logger = OmniPrometheusStatLogger(None, build_stage_replica_map([2]), model_name=model)
    for running in (1, 2, 3):
        logger.record(NS(num_running_reqs=running, prefix_cache_stats=NS(queries=10, hits=1),
                         kv_connector_stats=NS(data={"num_failed_transfers": 1})), None,
                      engine_idx=0)
    logger.record(NS(num_running_reqs=7), None, engine_idx=1)
    text = exposition()
    lab0 = f'model_name="{model}",replica="0",stage="0"'
    lab1 = f'model_name="{model}",replica="1",stage="0"'
    assert sample(text, f"vllm:num_requests_running{{{lab0}}}") == 3.0  # the latest
    assert sample(text, f"vllm:prefix_cache_queries_total{{{lab0}}}") == 30.0
    assert sample(text, f"vllm:num_requests_running{{{lab1}}}") == 7.0
    assert "vllm:nixl_" not in text


def test_cache_config_info_takes_whatever_keys_the_config_has():
    model = "stat-logger-cache-info"

    class CacheConfig:
        def metrics_info(self):
            return {"block_size": "16", "kv_cache_size_tokens": "438960",
                    "user_specified_mamba_block_size": "None"}

    logger = OmniPrometheusStatLogger(NS(cache_config=CacheConfig()), build_stage_replica_map([1]),
                                      model_name=model)
    logger.log_engine_initialized()
    rows = lines_with(exposition(), "vllm:cache_config_info{")
    assert rows == ['vllm:cache_config_info{block_size="16",kv_cache_size_tokens="438960",'
                    'replica="0",stage="0",user_specified_mamba_block_size="None"} 1.0']


def test_throttle_helper_and_mixin():
    throttle = SchedulerStatsThrottle()
    assert throttle.admit(now=5.0)
    assert not throttle.admit(now=5.5)
    assert throttle.admit(now=6.0)
    assert not throttle.admit(now=6.999)

    class Base:
        def make_stats(self):
            return "stats"

    class Scheduler(OmniSchedulerStatsMixin, Base):
        pass

    a, b = Scheduler(), Scheduler()
    assert a.make_stats() == "stats"
    assert a.make_stats() is None  # within the second
    assert b.make_stats() == "stats"  # per scheduler, no global throttle


def test_gating_off_registers_no_vllm_families(model, tmp_path):
    import subprocess, sys, textwrap, os
    import modelmetrics

    root = os.path.dirname(os.path.dirname(os.path.abspath(modelmetrics.__file__)))
    code = textwrap.dedent("""
        from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
        from modelmetrics.vllm_omni.metrics.stat_logger import OmniPrometheusStatLogger
        from prometheus_client import REGISTRY, generate_latest
        p = OmniPrometheusMetrics("m", log_stats=False)
        logger = OmniPrometheusStatLogger(None, {0: ("0", "0")}, model_name="m", log_stats=False)
        logger.record(object(), None, engine_idx=0)
        p.set_running(3)
        text = generate_latest(REGISTRY).decode()
        assert "vllm:" not in text, text
        assert 'vllm_omni:num_requests_running{model_name="m"} 0.0' in text
        assert 'vllm_omni:e2e_request_latency_s_count{model_name="m"} 0.0' in text
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=root)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_new_logger_replaces_vllm_families_and_keeps_omni(model):
    OmniPrometheusMetrics(model).set_running(4)
    first = OmniPrometheusStatLogger(None, {0: ("0", "0")}, model_name=model + "-a")
    first.record(NS(num_running_reqs=1), None, engine_idx=0)
    OmniPrometheusStatLogger(None, {0: ("0", "0")}, model_name=model + "-b")
    text = exposition()
    assert f'model_name="{model}-a"' not in text  # the old logger's families were dropped
    assert sample(text, f'vllm:num_requests_running{{model_name="{model}-b",replica="0",stage="0"}}') == 0.0
    assert sample(text, f'vllm_omni:num_requests_running{{model_name="{model}"}}') == 4.0
    assert text.count("# TYPE vllm:num_requests_running gauge") == 1


def test_unregister_vllm_metrics_is_scoped(model):
    from modelmetrics.vllm_omni.metrics import unregister_vllm_metrics

    OmniPrometheusMetrics(model).set_running(2)
    OmniPrometheusStatLogger(None, {0: ("0", "0")}, model_name=model + "-engine")
    unregister_vllm_metrics()
    text = exposition()
    assert "# TYPE vllm:" not in text
    assert sample(text, f'vllm_omni:num_requests_running{{model_name="{model}"}}') == 2.0
