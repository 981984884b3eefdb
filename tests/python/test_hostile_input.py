"""Hostile input to the C extension: objects never initialised, renamed types, sequences mutated
while being read, non-finite and huge numbers, __str__ that raises or lies. Each gets a Python
exception or the documented guard, never a crash, and nothing recorded before is lost."""

import importlib

import pytest
from conftest import exposition, run_isolated, sample

import modelmetrics
from modelmetrics import _native
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
from modelmetrics.vllm_omni.metrics.stat_logger import OmniPrometheusStatLogger
from modelmetrics.vllm_omni.metrics.transfer import OmniTransferMetrics


def test_uninitialised_objects_raise_instead_of_crashing():
    for cls, call in ((OmniTransferMetrics, lambda o: o.observe_size(0, 0, 1, 0, 10)),
                      (OmniPrometheusMetrics, lambda o: o.observe_tokens(1, 2)),
                      (OmniPrometheusMetrics, lambda o: o.request_succeeded(1.0)),
                      (OmniModalityMetrics, lambda o: o.observe_audio_rtf("1", "0", 0.5))):
        o = cls.__new__(cls)
        call(o)  # log_stats is off until __init__: a no-op
        o.log_stats = True
        with pytest.raises(RuntimeError):
            call(o)

    class Skips(OmniPrometheusMetrics):
        def __init__(self):  # never calls super().__init__
            self.log_stats = True

    with pytest.raises(RuntimeError):
        Skips().set_running(1)


def test_subclass_with_attributes_works(model):
    class Mine(OmniPrometheusMetrics):
        pass

    m = Mine(model)
    m.extra = 1  # a subclass has a __dict__
    m.set_running(6)
    assert sample(exposition(), f'vllm_omni:num_requests_running{{model_name="{model}"}}') == 6.0


def test_renaming_a_type_does_not_break_construction(model):
    cls = _native.RealtimeVADMetrics
    old = cls.__name__
    try:
        cls.__name__ = "Renamed"
        cls(model).session_started()
    finally:
        cls.__name__ = old
    assert sample(exposition(), f'vllm_omni:realtime_vad_active_sessions{{model_name="{model}"}}') == 1.0


def test_sequences_mutated_while_read_are_safe():
    values = []

    class Shrinks:
        def __float__(self):
            values.clear()
            return 1.0

    values.extend([Shrinks(), 2.0, 3.0])
    # A copy is read: the conversion's side effect cannot free what is being read.
    assert _native.continuity_stats(values, [4800, 4800, 4800], 24000, 2, 1, 0.1)[2] in (True, False)


def test_non_finite_and_huge_numbers(model):
    logger = OmniPrometheusStatLogger(None, {0: ("0", "0")}, model_name=model + "-engine")
    from types import SimpleNamespace as NS

    logger.record(NS(num_running_reqs=float("inf"), num_waiting_reqs=float("nan"),
                     prefix_cache_stats=NS(queries=float("inf"), hits=10 ** 30)), None, engine_idx=0)
    p = OmniPrometheusMetrics(model)
    p.observe_tokens(10 ** 30, 5)  # beyond int64: the float path
    p.inc_image_count(2 ** 70)
    with pytest.raises(OverflowError):
        p.set_running(10 ** 400)  # float() of it overflows, as in Python
    p.observe_queue_wait(float("inf"))  # +Inf bucket, as prometheus_client
    text = exposition()
    assert sample(text, f'vllm_omni:generation_tokens_total{{model_name="{model}"}}') == 5.0
    assert sample(text, f'vllm_omni:prompt_tokens_total{{model_name="{model}"}}') == 1e30
    assert sample(text, f'vllm_omni:request_queue_wait_s_bucket{{le="+Inf",model_name="{model}"}}') == 1.0


def test_label_objects_whose_str_raises_or_lies(model):
    class Raises:
        def __str__(self):
            raise ValueError("no")

    class Lies:
        def __str__(self):
            return 3

    p = OmniPrometheusMetrics(model)
    p.request_succeeded(1.0)
    with pytest.raises(ValueError):
        p.request_succeeded(1.0, Raises())
    with pytest.raises(TypeError):
        p.request_succeeded(1.0, Lies())
    p.observe_stage_gen_time("s" * 4096, "llm", 1.0)  # a long label value is recorded
    with pytest.raises(ValueError, match="4096-byte bound"):
        p.observe_stage_gen_time("s" * 10000, "llm", 1.0)
    text = exposition()
    ok = f'vllm_omni:requests_success_total{{finished_reason="stop",model_name="{model}"}}'
    assert sample(text, ok) == 1.0


def test_invented_label_values_beyond_the_cache_still_count():
    result = run_isolated("""
        import modelmetrics
        from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
        m = OmniModalityMetrics("m")
        for i in range(5000):  # past the per-object cache bound (4096 label sets)
            m.inc_audio_skipped("2", "0", f"reason-{i}")
        m.inc_audio_skipped("2", "0", "reason-4999")
        m.inc_audio_skipped("2", "0", "reason-0")
        text = modelmetrics.render().decode()
        base = 'vllm_omni:audio_skipped_requests_total{model_name="m",reason="%s",replica="0",stage="2"} '
        assert base % "reason-4999" + "2.0" in text
        assert base % "reason-0" + "2.0" in text
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_import_hook_keeps_our_module_identity_and_reload(tmp_path):
    import subprocess, sys, textwrap, os

    root = os.path.dirname(os.path.dirname(os.path.abspath(modelmetrics.__file__)))
    code = textwrap.dedent("""
        import importlib, importlib.util
        import modelmetrics.vllm_omni as v
        v.install()
        import vllm_omni.metrics.utils as u
        assert u.__name__ == "modelmetrics.vllm_omni.metrics.utils", u.__name__
        assert u.__spec__.name == "modelmetrics.vllm_omni.metrics.utils"
        importlib.reload(u)
        assert importlib.util.find_spec("vllm_omni.metrics.does_not_exist") is None
        try:
            import vllm_omni.metrics.does_not_exist
        except ModuleNotFoundError:
            pass
        else:
            raise AssertionError("imported a module that does not exist")
        v.install()  # idempotent
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=root), timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_label_value_over_the_bound_raises_and_records_nothing(model):
    p = OmniPrometheusMetrics(model)
    p.inc_requests_failed("r" * 4096)  # at the bound: recorded
    with pytest.raises(ValueError, match="4096-byte bound"):
        p.inc_requests_failed("r" * 4097)
    with pytest.raises(ValueError, match="4096-byte bound"):
        p.inc_requests_failed("x" * (64 << 20))  # refused before it is encoded
    text = exposition()
    assert sample(text, f'vllm_omni:requests_failed_total{{model_name="{model}",reason="{"r" * 4096}"}}') == 1
    assert "r" * 4097 not in text
