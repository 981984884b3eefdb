"""The stat-logger wrap and the plain-vLLM switch through the vLLM stand-in (vllm_standin/):
each scenario runs in a fresh interpreter where `vllm` is importable, so
``vllm_omni.metrics.stat_logger`` takes its vLLM branch."""

import os

import pytest
from conftest import run_isolated

HERE = os.path.dirname(os.path.abspath(__file__))

PRELUDE = f"""
import sys
sys.path[:0] = [{os.path.join(HERE, 'vllm_standin')!r}, {HERE!r}]
import unittest.mock as mock
import prometheus_client as pc
import modelmetrics.prometheus_client as mpc
import omni_wrap_reference as ref
import vllm_workload as w
from vllm.config import (KVTransferConfig, LoRAConfig, ObservabilityConfig, SpeculativeConfig,
                         VllmConfig)
from vllm.v1.metrics.loggers import PrometheusStatLogger

CONFIG = VllmConfig(observability_config=ObservabilityConfig(kv_cache_metrics=True),
                    speculative_config=SpeculativeConfig(), lora_config=LoRAConfig(),
                    kv_transfer_config=KVTransferConfig())
FEATURES = dict(spec=True, kv_connector=True, lora=True)

def vllm_text(generate):
    view = pc.CollectorRegistry(auto_describe=True)
    for c in list(pc.REGISTRY._collector_to_names):
        if getattr(c, "_name", "").startswith("vllm:"):
            view.register(c)
    return generate(view).decode()

def run(make, engines):
    with mock.patch("time.time", return_value=1733280000.5):
        logger = make()
        logger.log_engine_initialized()
        logger.record_sleep_state(1, 2)
        w.drive(logger, engines, steps=5, **FEATURES)
    return logger, vllm_text(mpc.generate_latest), vllm_text(pc.generate_latest)
"""


def check(code):
    result = run_isolated(PRELUDE + code)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_wrap_is_vllms_logger_and_prints_what_upstreams_wrap_prints():
    out = check("""
import modelmetrics.vllm_omni; modelmetrics.vllm_omni.install()
from vllm_omni.metrics import stat_logger as sl
assert sl.VLLM_AVAILABLE
srm = sl.build_stage_replica_map([1, 2, 1])
ours, native, through_pc = run(lambda: sl.OmniPrometheusStatLogger(CONFIG, srm), srm)
assert isinstance(ours, PrometheusStatLogger)
assert type(ours.gauge_scheduler_running[2]) is sl._RelabelGauge
_, theirs, _ = run(lambda: ref.OmniLogger(CONFIG, srm), srm)
assert native == theirs, "native text differs from the reference wrap"
assert through_pc == theirs, "prometheus_client's writer over our instruments differs"
print(native)
""")
    families = [line.split()[2] for line in out.splitlines() if line.startswith("# TYPE")]
    assert len(families) >= 60  # plain 35 + connector, spec decode, LoRA, kv-block, created
    samples = [line for line in out.splitlines() if line and not line.startswith("#")]
    assert all('engine="' not in line for line in samples)
    for name in ("vllm:num_requests_running", "vllm:cache_config_info",
                 "vllm:nixl_xfer_time_seconds_bucket", "vllm:spec_decode_num_drafts_total",
                 "vllm:estimated_flops_per_gpu_total", "vllm:kv_block_lifetime_seconds_count",
                 "vllm:num_requests_waiting_by_reason"):
        rows = [line for line in samples if line.startswith(name + "{")]
        assert rows, name
        assert all('stage="' in r and 'replica="' in r for r in rows), name
    info = [line for line in samples if line.startswith("vllm:cache_config_info{")]
    assert len(info) == 4  # one per engine: stages [1, 2, 1]
    assert 'kv_cache_size_tokens="438960"' in info[0]
    assert 'user_specified_mamba_block_size="None"' in info[0]
    assert any('replica="1"' in line and 'stage="1"' in line for line in info)
    lora = [line for line in samples if line.startswith("vllm:lora_requests_info{")]
    assert lora and "running_lora_adapters=\"sql-lora\"" in lora[0] and "stage=" not in lora[0]


def test_plain_vllm_switch_puts_native_instruments_in_every_slot():
    out = check("""
import modelmetrics.vllm
assert modelmetrics.vllm.install()
from vllm.v1.metrics.perf import PerfMetricsProm
from vllm.v1.spec_decode.metrics import SpecDecodingProm
from vllm.distributed.kv_transfer.kv_connector.v1.metrics import KVConnectorProm
assert PrometheusStatLogger._gauge_cls is mpc.Gauge
assert PrometheusStatLogger._histogram_cls is mpc.Histogram
assert PerfMetricsProm._counter_cls is mpc.Counter and SpecDecodingProm._counter_cls is mpc.Counter
assert KVConnectorProm._histogram_cls is mpc.Histogram
ours, native, through_pc = run(lambda: PrometheusStatLogger(CONFIG, [0, 1]), [0, 1])
assert type(ours.histogram_inter_token_latency[1]) is mpc.Histogram
_, theirs, _ = run(lambda: ref.PlainLogger(CONFIG, [0, 1]), [0, 1])
assert native == theirs and through_pc == theirs
print(native)
""")
    assert 'vllm:inter_token_latency_seconds_count{engine="1",model_name=' in out


def test_switch_applies_to_modules_imported_before_it_and_spares_custom_slots():
    check("""
class Mine(pc.Counter):
    pass
PrometheusStatLogger._counter_cls = Mine
import modelmetrics.vllm
modelmetrics.vllm.install()
assert PrometheusStatLogger._gauge_cls is mpc.Gauge
assert PrometheusStatLogger._counter_cls is Mine
""")


@pytest.mark.parametrize("with_vllm", [True, False])
def test_rewrite_labelnames_fixes_upstreams_dict_keys_error(with_vllm):
    code = """
from vllm_omni.metrics.stat_logger import _rewrite_labelnames
names = {"block_size": "16", "engine": ""}.keys()
assert _rewrite_labelnames(names) == ["block_size", "stage", "replica"]
assert _rewrite_labelnames(("engine",)) == ("stage", "replica")
import prometheus_client as pc
from vllm_omni.metrics.stat_logger import _ENGINE_INDEX_MAP, _RelabelGauge
_ENGINE_INDEX_MAP[0] = ("0", "0")
g = _RelabelGauge(name="it_names", documentation="d", labelnames=iter(["model_name", "engine"]),
                  registry=pc.CollectorRegistry())
assert g._labelnames == ("model_name", "stage", "replica")  # a one-shot iterator, read once
"""
    prelude = "import modelmetrics.vllm_omni; modelmetrics.vllm_omni.install()\n"
    if with_vllm:
        check(prelude + code)
    else:
        result = run_isolated(prelude + code)
        assert result.returncode == 0, result.stderr[-2000:]
