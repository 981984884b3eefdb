"""duplex_frame_timing (upstream-changes-2026-09 §1.2): off = silent and clock-free; on = one line
per event in N (counted per event name), fields formatted as upstream's; chunk stamps ride on the
metadata; the pacer's jitter and drift."""

import logging
from types import SimpleNamespace

import pytest

from modelmetrics.vllm_omni.metrics import duplex_frame_timing as ft


@pytest.fixture
def timing(monkeypatch, caplog):
    monkeypatch.setattr(ft, "_DUPLEX_FRAME_TIMING_ENABLED", True)
    monkeypatch.setattr(ft, "_LOG_EVERY", 1)
    monkeypatch.setattr(ft, "_event_counts", {})
    monkeypatch.setattr(ft, "_tick_pacers", ft.OrderedDict())
    caplog.set_level(logging.INFO, logger=ft.logger.name)
    return caplog


def lines(caplog):
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("DUPLEX_FRAME_TIMING")]


@pytest.mark.parametrize("raw,on", [("1", True), ("TRUE", True), ("on", True), ("0", False),
                                    ("", False), (None, False), ("off", False)])
def test_flag_parsing(raw, on):
    assert ft._parse_flag(raw) is on


@pytest.mark.parametrize("raw,n", [("5", 5), ("0", 1), ("-3", 1), ("", 1), (None, 1), ("n/a", 1)])
def test_log_every_parsing(raw, n):
    assert ft._parse_log_every(raw) == n


def test_off_is_silent_and_reads_no_clock(monkeypatch, caplog):
    monkeypatch.setattr(ft, "_DUPLEX_FRAME_TIMING_ENABLED", False)
    caplog.set_level(logging.INFO, logger=ft.logger.name)
    meta = SimpleNamespace(put_t_ns=None)
    ft.stamp_chunk_put(meta)
    ft.log_append_event("s", 1, 100, None)
    ft.log_connector_get_event("k", 1, 10, 0.0)
    ft.frame_timing_synchronize()  # would import engine code when on
    assert ft.frame_timing_clock() == 0.0 and meta.put_t_ns is None and lines(caplog) == []


def test_fields_are_formatted_as_upstream(timing):
    ft.log_frame_timing("x", a=None, b=True, c=1.5, d=7, e="s")
    (line,) = lines(timing)
    head, rest = line.split(" t_ns=", 1)
    assert head == "DUPLEX_FRAME_TIMING event=x"
    assert rest.split(" ", 1)[1] == "a=na b=true c=1.500 d=7 e=s"


def test_throttle_counts_each_event_name(timing, monkeypatch):
    monkeypatch.setattr(ft, "_LOG_EVERY", 3)
    for _ in range(7):
        ft.log_frame_timing("put")
    for _ in range(2):
        ft.log_frame_timing("get")
    got = [line.split()[1] for line in lines(timing)]
    assert got == ["event=put", "event=put", "event=put", "event=get"]


def test_hooks(timing):
    ft.log_append_event("s1", 2, 0, None)  # empty append: nothing
    ft.log_append_event("s1", 2, 7680, None)
    ft.log_audio_emit_event("s1", 1, "req-1", {"audio_duration_ms": 240}, 80, sent_ms=160)
    for not_audio in (None, "text-delta", {}, {"audio_duration_ms": 0}, {"audio_duration_ms": "n/a"}):
        ft.log_audio_emit_event("s1", 1, "req-1", not_audio, 80)
    meta = SimpleNamespace(put_t_ns=None)
    ft.stamp_chunk_put(meta)
    assert isinstance(meta.put_t_ns, int)
    ft.log_connector_put_event("r1_1_0", 1, 1, None, ft.frame_timing_clock())
    ft.log_connector_get_event("r1_1_0", 1, 128, ft.frame_timing_clock(), put_t_ns=meta.put_t_ns)
    ft.log_connector_get_event("r1_1_1", 1, 128, ft.frame_timing_clock())
    ft.log_stage1_decode_event(None, 5, ft.frame_timing_clock(), num_req=3)
    got = lines(timing)
    assert len(got) == 6
    assert "session=s1 epoch=2 bytes=7680 tick_period_ms=80.000 jitter_ms=na drift_ms=0.000" in got[0]
    assert "request_id=req-1 frames=3 audio_duration_ms=240.000 sent_ms=160 jitter_ms=na" in got[1]
    assert "key=r1_1_0 stage=1 ok=true bytes=0 wrap_ms=" in got[2]
    assert "chunk_age_ms=" in got[3] and "chunk_age_ms=na" not in got[3]
    assert got[4].endswith("chunk_age_ms=na")
    assert "request_id=unknown frames=5 num_req=3 decode_ms=" in got[5]


def test_pacer_jitter_drift_and_reanchor():
    pacer = ft.DuplexTickPacer(0.08)
    ms = 1_000_000
    assert pacer.observe(0) == (None, 0.0)
    jitter, drift = pacer.observe(85 * ms)
    assert jitter == pytest.approx(0.005) and drift == pytest.approx(0.005)
    jitter, drift = pacer.observe(485 * ms, ticks=5)
    assert jitter == pytest.approx(0.0) and drift == pytest.approx(0.005)
    assert pacer.observe(5000 * ms)[1] == 0.0  # a pause beyond 2 s re-anchors


def test_pacers_are_kept_per_stream_bounded_and_renewed_on_a_new_period(monkeypatch):
    monkeypatch.setattr(ft, "_tick_pacers", ft.OrderedDict())
    monkeypatch.setattr(ft, "_MAX_TRACKED_STREAMS", 2)
    a = ft.get_tick_pacer("append", "a", 0.08)
    assert ft.get_tick_pacer("append", "a", 0.08) is a
    assert ft.get_tick_pacer("append", "a", 0.04) is not a
    ft.get_tick_pacer("append", "b", 0.08)
    ft.get_tick_pacer("emit", "a", 0.08)
    assert list(ft._tick_pacers) == [("append", "b"), ("emit", "a")]
