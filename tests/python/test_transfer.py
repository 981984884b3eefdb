"""Ports the family cases of tests/metrics/test_transfer.py (upstream vllm-omni, §7) to the
drop-in (the aggregator cases are in test_stats.py), plus the log_stats gate (PR #3576)."""

import pytest
from conftest import exposition, lines_with, sample

from modelmetrics.vllm_omni.metrics.transfer import OmniTransferMetrics


def edge(family, model, fs, fr, ts, tr, suffix):
    return (f'vllm_omni:{family}_{suffix}{{from_replica="{fr}",from_stage="{fs}",'
            f'model_name="{model}",to_replica="{tr}",to_stage="{ts}"}}')


def test_families_present_and_legacy_names_absent(model):
    t = OmniTransferMetrics(model)
    t.observe_size(0, 0, 1, 0, 1)
    text = exposition()
    for family in ("transfer_size_bytes", "transfer_tx_s", "transfer_rx_s", "transfer_in_flight_s"):
        assert f"# TYPE vllm_omni:{family} histogram" in text
    for legacy in ("omni_transfer_tx_time_ms", "rx_decode_time_ms", "in_flight_time_ms"):
        assert legacy not in text


def test_observed_values_and_separate_edges(model):
    t = OmniTransferMetrics(model_name=model)
    t.observe_size(2, 0, 3, 1, 65536)
    t.observe_tx_time(2, 1, 3, 0, 0.0125)
    t.observe_rx_time(3, 0, 4, 0, 0.0042)
    t.observe_in_flight_time(3, 0, 4, 0, 0.0017)
    t.observe_size(5, 0, 6, 0, 100)
    t.observe_size(5, 0, 6, 1, 200)
    t.observe_size(5, 1, 6, 0, 300)
    t.observe_size(7, 0, 8, 0, 10)
    t.observe_tx_time(7, 0, 8, 0, 0.0005)
    text = exposition()
    assert sample(text, edge("transfer_size_bytes", model, 2, 0, 3, 1, "sum")) == 65536.0
    assert sample(text, edge("transfer_tx_s", model, 2, 1, 3, 0, "sum")) == 0.0125
    assert sample(text, edge("transfer_rx_s", model, 3, 0, 4, 0, "sum")) == 0.0042
    assert sample(text, edge("transfer_in_flight_s", model, 3, 0, 4, 0, "sum")) == 0.0017
    assert sample(text, edge("transfer_size_bytes", model, 5, 0, 6, 0, "sum")) == 100.0
    assert sample(text, edge("transfer_size_bytes", model, 5, 0, 6, 1, "sum")) == 200.0
    assert sample(text, edge("transfer_size_bytes", model, 5, 1, 6, 0, "sum")) == 300.0
    assert 'transfer_size_bytes_bucket{from_replica="0",from_stage="7",le="1024.0"' in text
    assert f'transfer_tx_s_bucket{{from_replica="0",from_stage="7",le="0.001",model_name="{model}"' in text
    assert 'le="1.048576e+06"' in text  # Go-style float spelling of the byte bounds


def test_log_stats_off_records_nothing(model):
    t = OmniTransferMetrics(model, log_stats=False)
    t.observe_size(0, 0, 1, 0, 1024)
    t.observe_tx_time(0, 0, 1, 0, 0.1)
    assert not lines_with(exposition(), f'model_name="{model}"')


def test_bad_input(model):
    t = OmniTransferMetrics(model)
    with pytest.raises(TypeError):
        t.observe_size(0, 0, 1, 0, None)
    with pytest.raises(TypeError):
        t.observe_size(0, 0, 1, 0)
    t.observe_size(0, 0, 1, 0, float("nan"))  # dropped
    t.observe_size(from_stage=0, from_replica=0, to_stage=1, to_replica=0, size_bytes=2048)
    text = exposition()
    assert sample(text, edge("transfer_size_bytes", model, 0, 0, 1, 0, "count")) == 1.0
