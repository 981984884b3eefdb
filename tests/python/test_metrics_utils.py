"""Ports tests/metrics/test_metrics_utils.py (upstream vllm-omni @ ec80c0bf) and the utils parts
of test_emit_calls.py / test_modality.py (workload scope, audio and diffusion finalize) to
modelmetrics, plus byte-equality of ``_format_table`` with PrettyTable (§5.3). numpy is not
available: shaped values are tiny fakes with a ``.shape`` attribute."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from prettytable import PrettyTable

from modelmetrics.vllm_omni.metrics import utils
from modelmetrics.vllm_omni.metrics.utils import (
    _build_field_defs,
    _build_row,
    _format_table,
    _get_field_names,
    coerce_bool,
    coerce_positive_float_scalar,
    count_audio_chunk_frames,
    count_audio_frames,
    count_image_pixels,
    count_tokens_from_outputs,
    count_video_frames,
    diffusion_exception_metrics,
    diffusion_scheduler_waiting_metrics,
    extract_diffusion_denoise_ms,
    extract_diffusion_vae_decode_ms,
    extract_mm_output,
    iter_mm_outputs,
    observe_audio_finalize,
    observe_diffusion_finalize,
    observe_stage_workload_metrics,
    resolve_int_by_sequential_keys,
    sum_diffusion_stage_durations_ms,
)


def shaped(*dims: int) -> SimpleNamespace:
    return SimpleNamespace(shape=dims)


class Recorder:
    """Records every method call as ``(name, *args)``; stands in for the metrics objects."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def record(*args, **kwargs):
            self.calls.append((name, *args, *sorted(kwargs.items())))

        return record

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    def args(self, name: str) -> list[tuple]:
        return [c[1:] for c in self.calls if c[0] == name]


# ---- counting (upstream) ----
@pytest.mark.parametrize(
    ("shape", "expected_frames"),
    [
        ((1, 64, 64, 3), 1),
        ((3, 64, 64, 3), 3),
        ((4, 64, 64, 3), 4),
        ((8, 64, 64, 3), 8),
        ((3, 8, 64, 64), 8),
        ((1, 1, 64, 64, 3), 1),
        ((1, 3, 64, 64, 3), 3),
        ((1, 4, 64, 64, 3), 4),
        ((1, 3, 8, 64, 64), 8),
    ],
)
def test_count_video_frames_handles_short_channel_last_outputs(shape, expected_frames) -> None:
    assert count_video_frames(shaped(*shape)) == expected_frames


@pytest.mark.parametrize(
    ("video", "expected"),
    [
        ({"frames": shaped(16, 64, 64, 3)}, 16),
        ({"video": [object()] * 5}, 5),
        ({"other": 1}, None),
        ([1, 2], 2),
        (shaped(64, 64, 3), None),  # 3-D is an image, not a video
        (shaped(10, 64, 64, 32), 10),  # no channel axis recognised: first axis
        (object(), None),
        (None, None),
        (SimpleNamespace(shape=("a", 2, 3, 4)), None),
    ],
)
def test_count_video_frames_other_layouts(video, expected) -> None:
    assert count_video_frames(video) == expected


@pytest.mark.parametrize(
    ("audio_chunk", "expected"),
    [
        (shaped(2, 320), 320),
        ([0.0, 0.0, 0.0], 3),
        (1.0, 1),
        (shaped(480), 480),
        (shaped(), 1),  # 0-d tensor-like: no length either
    ],
)
def test_count_audio_chunk_frames(audio_chunk: object, expected: int) -> None:
    assert count_audio_chunk_frames(audio_chunk) == expected


def test_count_audio_frames_sums_audio_chunks() -> None:
    assert count_audio_frames({"audio": [shaped(1, 120), shaped(2, 80)]}) == 200


def test_count_audio_frames_supports_model_outputs() -> None:
    assert count_audio_frames({"model_outputs": [shaped(1, 120), shaped(2, 80)]}) == 200


def test_count_audio_frames_single_chunk_and_precedence() -> None:
    assert count_audio_frames({"audio": shaped(1, 240)}) == 240
    assert count_audio_frames({"audio": [shaped(10)], "model_outputs": [shaped(99)]}) == 10


@pytest.mark.parametrize("mm_out", [{}, {"audio": None}, {"model_outputs": None}, None, [shaped(5)]])
def test_count_audio_frames_returns_zero_without_audio(mm_out) -> None:
    assert count_audio_frames(mm_out) == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 0),
        (object(), 0),
        (SimpleNamespace(size=(10, 20)), 200),
        (shaped(2, 3, 4, 5), 40),
        (shaped(3, 4, 5), 20),
        (shaped(6, 7, 3), 42),
        (shaped(6, 7), 42),
        (shaped(7), 0),
        (SimpleNamespace(size=("w", 2)), 0),
    ],
)
def test_count_image_pixels(value: object, expected: int) -> None:
    assert count_image_pixels(value) == expected


def test_count_image_pixels_sums_nested_values() -> None:
    images = [SimpleNamespace(size=(10, 20)), (shaped(3, 4, 5), shaped(6, 7, 3))]
    assert count_image_pixels(images) == 262


def test_count_tokens_from_outputs() -> None:
    engine_outputs = [
        SimpleNamespace(
            outputs=[
                SimpleNamespace(cumulative_token_ids=[1, 2, 3], token_ids=[3]),
                SimpleNamespace(cumulative_token_ids=None, token_ids=[4, 5]),
                SimpleNamespace(cumulative_token_ids=None, token_ids=None),
            ]
        ),
        SimpleNamespace(outputs=None),
        SimpleNamespace(outputs=[SimpleNamespace(cumulative_token_ids=[6], token_ids=[6])]),
    ]
    assert count_tokens_from_outputs(engine_outputs) == 6


def test_count_tokens_from_outputs_is_best_effort() -> None:
    engine_outputs = [SimpleNamespace(outputs=[SimpleNamespace(token_ids=5)]), SimpleNamespace(outputs=[
        SimpleNamespace(token_ids=[1, 2])])]  # fmt: skip
    assert count_tokens_from_outputs(engine_outputs) == 2
    assert count_tokens_from_outputs(None) == 0  # type: ignore[arg-type]
    assert count_tokens_from_outputs(3) == 0  # type: ignore[arg-type]


# ---- multimodal output lookup ----
def test_extract_mm_output_prefers_top_level_then_first_output() -> None:
    top = {"audio": shaped(10)}
    nested = {"audio": shaped(20)}
    assert extract_mm_output(SimpleNamespace(multimodal_output=top)) is top
    src = SimpleNamespace(multimodal_output={}, outputs=[SimpleNamespace(multimodal_output=nested)])
    assert extract_mm_output(src) is nested
    assert extract_mm_output(SimpleNamespace(outputs=[])) == {}
    assert extract_mm_output(None) == {}
    assert extract_mm_output(SimpleNamespace(multimodal_output=[1], outputs=5)) == {}


def test_iter_mm_outputs_collects_every_mapping() -> None:
    a, b, c = {"x": 1}, {"y": 2}, {"z": 3}
    src = SimpleNamespace(
        multimodal_output=a,
        outputs=[SimpleNamespace(multimodal_output=b), SimpleNamespace(multimodal_output={}),
                 SimpleNamespace(multimodal_output=c)],  # fmt: skip
    )
    assert iter_mm_outputs(src) == [a, b, c]
    assert iter_mm_outputs(SimpleNamespace()) == []
    assert iter_mm_outputs(SimpleNamespace(outputs=7)) == []


# ---- coercion ----
def test_resolve_int_by_sequential_keys() -> None:
    assert resolve_int_by_sequential_keys({"a": 0, "b": "7"}, ("a", "b")) == 7
    assert resolve_int_by_sequential_keys(SimpleNamespace(b=3), ("a", "b")) == 3
    assert resolve_int_by_sequential_keys({"a": 5}, "a") == 5
    assert resolve_int_by_sequential_keys({}, ("a",)) is None
    assert resolve_int_by_sequential_keys(None, ("a",)) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        (True, True),
        (0, False),
        (2, True),
        ("true", True),
        (" Yes ", True),
        ("on", True),
        ("0", False),
        ("off", False),
        ("maybe", False),
        (SimpleNamespace(item=lambda: 1), True),
        (math.nan, False),
        (object(), False),
    ],
)
def test_coerce_bool(value, expected) -> None:
    assert coerce_bool(value) is expected


def test_coerce_bool_default() -> None:
    assert coerce_bool(None, default=True) is True
    assert coerce_bool("maybe", default=True) is True
    assert coerce_bool("no", default=True) is False


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.5, 1.5),
        ("2.5", 2.5),
        ([None, 0, 3], 3.0),
        (SimpleNamespace(item=lambda: 0.25), 0.25),
        (0.0, None),
        (-1, None),
        (math.nan, None),
        (math.inf, None),
        ("x", None),
        (None, None),
    ],
)
def test_coerce_positive_float_scalar(value, expected) -> None:
    assert coerce_positive_float_scalar(value) == expected


# ---- diffusion helpers ----
def test_diffusion_scheduler_waiting_metrics() -> None:
    assert diffusion_scheduler_waiting_metrics(3) == {"scheduler_num_waiting_reqs": 3}
    assert diffusion_scheduler_waiting_metrics(-2) == {"scheduler_num_waiting_reqs": 0}
    assert diffusion_scheduler_waiting_metrics(2.9) == {"scheduler_num_waiting_reqs": 2}
    assert diffusion_scheduler_waiting_metrics(None) == {"scheduler_num_waiting_reqs": 0}  # type: ignore[arg-type]


def test_diffusion_exception_metrics() -> None:
    exc = RuntimeError("boom")
    assert diffusion_exception_metrics(exc) == {}
    exc.diffusion_metrics = {"preprocess_time_ms": 5.0}  # type: ignore[attr-defined]
    copied = diffusion_exception_metrics(exc)
    assert copied == {"preprocess_time_ms": 5.0}
    assert copied is not exc.diffusion_metrics  # type: ignore[attr-defined]


def test_stage_duration_sums() -> None:
    out = SimpleNamespace(stage_durations={"pipe.vae.decode": 0.5, "x.vae.decode": "0.25", "pipe.diffuse": 2.0,
                                           "bad.diffuse": "n/a", 7: 1.0})  # fmt: skip
    assert extract_diffusion_vae_decode_ms(out) == pytest.approx(750.0)
    assert extract_diffusion_denoise_ms(out) == pytest.approx(2000.0)
    assert sum_diffusion_stage_durations_ms(out, ".none") is None
    assert sum_diffusion_stage_durations_ms(SimpleNamespace(), ".diffuse") is None


# ---- workload scope (test_emit_calls.py) ----
def _observe_workload(stage_type: str, output_unit_type: str) -> Recorder:
    prom = Recorder()
    stage_metrics = SimpleNamespace(num_inference_steps=50, output_unit_type=output_unit_type,
                                    image_pixels=1024 * 1024, output_unit_count=2)  # fmt: skip
    observe_stage_workload_metrics(prom, stage_type=stage_type, stage_metrics=stage_metrics)
    return prom


def test_diffusion_image_observes_steps_and_image_workload() -> None:
    prom = _observe_workload("diffusion", "image")
    assert prom.calls == [("observe_num_inference_steps", 50), ("observe_image_pixels", 1024 * 1024),
                          ("inc_image_count", 2)]  # fmt: skip


def test_diffusion_video_observes_steps_only() -> None:
    assert _observe_workload("diffusion", "video").calls == [("observe_num_inference_steps", 50)]


def test_llm_text_observes_no_workload_metrics() -> None:
    assert _observe_workload("llm", "text").calls == []


def test_non_diffusion_image_observes_image_workload_only() -> None:
    assert _observe_workload("llm", "image").calls == [("observe_image_pixels", 1024 * 1024), ("inc_image_count", 2)]


# ---- audio finalize (test_modality.py, §4.3) ----
def _audio_finalize(stage_metrics, engine_outputs) -> Recorder:
    mod = Recorder()
    observe_audio_finalize(mod, stage_id=2, replica_id=1, stage_metrics=stage_metrics, engine_outputs=engine_outputs)
    return mod


def test_audio_finalize_frames_duration_rtf() -> None:
    mod = _audio_finalize(
        SimpleNamespace(stage_gen_time_ms=500.0, audio_generated_frames=24000),
        SimpleNamespace(multimodal_output={"audio_sample_rate": 24000}),
    )
    assert mod.calls == [("inc_audio_frames", "2", "1", 24000), ("observe_audio_duration", "2", "1", 1.0),
                         ("observe_audio_rtf", "2", "1", 0.5)]  # fmt: skip


def test_audio_finalize_counts_frames_from_output_and_uses_its_rate() -> None:
    mod = _audio_finalize(
        SimpleNamespace(stage_gen_time_ms=250.0, audio_generated_frames=0),
        SimpleNamespace(outputs=[SimpleNamespace(multimodal_output={"sample_rate": 16000,
                                                                    "audio": [shaped(1, 8000), shaped(8000)]})]),
    )  # fmt: skip
    assert mod.calls == [("inc_audio_frames", "2", "1", 16000), ("observe_audio_duration", "2", "1", 1.0),
                         ("observe_audio_rtf", "2", "1", 0.25)]  # fmt: skip


def test_audio_finalize_without_audio_is_skipped_no_audio_data() -> None:
    mod = _audio_finalize(SimpleNamespace(stage_gen_time_ms=10.0, audio_generated_frames=0),
                          SimpleNamespace(multimodal_output={}))  # fmt: skip
    assert mod.calls == [("inc_audio_frames", "2", "1", 0), ("inc_audio_skipped", "2", "1", "no_audio_data")]


def test_audio_finalize_tolerates_missing_or_bad_fields() -> None:
    mod = _audio_finalize(SimpleNamespace(stage_gen_time_ms=None, audio_generated_frames=math.nan), None)
    assert mod.calls == [("inc_audio_frames", "2", "1", 0), ("inc_audio_skipped", "2", "1", "no_audio_data")]
    mod = _audio_finalize(SimpleNamespace(audio_generated_frames=12000), SimpleNamespace(multimodal_output={}))
    assert mod.args("observe_audio_duration") == [("2", "1", 0.5)]
    assert mod.args("observe_audio_rtf") == [("2", "1", 0.0)]


# ---- diffusion finalize (test_modality.py, §4.17) ----
def test_diffusion_finalize_observes_breakdown_and_per_step() -> None:
    mod = Recorder()
    stage_metrics = SimpleNamespace(
        num_inference_steps=0,
        output_unit_type="image",
        diffusion_metrics={"preprocess_time_s": 0.05, "diffusion_engine_exec_time_s": 1.2,
                           "postprocess_time_s": 0.3, "num_inference_steps": 50, "vae_decode_time_s": 0.1,
                           "forward_time_s": 1.0, "kv_recv_time_s": 0.0},
    )  # fmt: skip
    observe_diffusion_finalize(mod, stage_id=1, replica_id=0, stage_metrics=stage_metrics)
    assert mod.args("observe_diffusion_exec") == [("1", "0", 1.2)]
    assert mod.args("observe_diffusion_exec_per_step")[0][:2] == ("1", "0")
    assert mod.args("observe_diffusion_exec_per_step")[0][2] == pytest.approx(0.024)
    assert mod.args("observe_diffusion_preprocess") == [("1", "0", 0.05)]
    assert mod.args("observe_diffusion_postprocess") == [("1", "0", 0.3)]
    assert mod.args("observe_vae_decode") == [("1", "0", 0.1)]
    assert mod.args("observe_diffusion_forward") == [("1", "0", 1.0)]
    assert mod.args("observe_denoise_step_latency") == [("1", "0", 0.02)]
    assert mod.args("observe_diffusion_kv_load") == [("1", "0", 0.0)]  # a measured zero is observed


def test_diffusion_finalize_without_steps_has_no_per_step() -> None:
    mod = Recorder()
    stage_metrics = SimpleNamespace(output_unit_type="video",
                                    diffusion_metrics={"diffusion_engine_exec_time_s": 0.0, "forward_time_s": 2.0})
    observe_diffusion_finalize(mod, stage_id=1, replica_id=0, stage_metrics=stage_metrics)  # fmt: skip
    assert mod.calls == [("observe_diffusion_exec", "1", "0", 0.0), ("observe_diffusion_forward", "1", "0", 2.0)]


@pytest.mark.parametrize("dm", [None, {}, "x", [1]])
def test_diffusion_finalize_without_metrics_does_nothing(dm) -> None:
    mod = Recorder()
    observe_diffusion_finalize(mod, stage_id=1, replica_id=0, stage_metrics=SimpleNamespace(diffusion_metrics=dm))
    assert mod.calls == []


def test_diffusion_finalize_skips_non_numeric_values() -> None:
    mod = Recorder()
    stage_metrics = SimpleNamespace(diffusion_metrics={"preprocess_time_s": "n/a", "postprocess_time_s": math.nan,
                                                       "vae_decode_time_s": 0.2})  # fmt: skip
    observe_diffusion_finalize(mod, stage_id=0, replica_id=3, stage_metrics=stage_metrics)
    assert mod.calls == [("observe_vae_decode", "0", "3", 0.2)]


# ---- field definitions ----
def test_field_defs_rows_and_names() -> None:
    from modelmetrics.vllm_omni.metrics.stats import TransferEdgeStats

    defs = _build_field_defs(TransferEdgeStats, {"request_id", "used_shm"}, {"size_bytes": ("size_kbytes", lambda v: v / 1024.0)})
    assert _get_field_names(defs) == ["from_stage", "to_stage", "size_kbytes", "tx_time_ms", "rx_decode_time_ms",
                                      "in_flight_time_ms"]  # fmt: skip
    row = _build_row(TransferEdgeStats(0, 1, "r", 2048, 1.5), defs)
    assert row == {"from_stage": 0, "to_stage": 1, "size_kbytes": 2.0, "tx_time_ms": 1.5, "rx_decode_time_ms": 0.0,
                   "in_flight_time_ms": 0.0}  # fmt: skip
    with pytest.raises(TypeError):
        _build_field_defs(dict, set())


# ---- table formatting vs PrettyTable (upstream) ----
def _single(value, field="metric") -> str:
    table = PrettyTable()
    table.field_names = ["Field", "Value"]
    table.align["Field"] = "l"
    table.align["Value"] = "r"
    table.add_row([field, value])
    return table.get_string()


TABLE_VALUES = ["", "x", "hello world", "中文", "a\nb", "a\rb", "a\tb", "\x1b[31mred\x1b[0m"]
EXTRA_VALUES = ["混合 mixed テキスト", "e\u0301", "emoji 😀", "zero\u200bwidth", "\x1b(Bplain", "\x1b]0;t\x07",
                "ｆｕｌｌ", "x\n中文\nlonger line", "a\x00b", "tab\tand 中"]  # fmt: skip


@pytest.mark.parametrize("value", TABLE_VALUES)
def test_statistics_table_preserves_prettytable_layout(value) -> None:
    assert _format_table("stats", {"metric": value}, ["metric"]) == "[stats]\n" + _single(value)


@pytest.mark.parametrize("value", TABLE_VALUES + EXTRA_VALUES)
def test_wide_and_control_cells_in_field_column_too(value) -> None:
    assert _format_table("t", {value: 1}, [value]) == "[t]\n" + _single("1", field=value)


@pytest.mark.parametrize("value", TABLE_VALUES + EXTRA_VALUES)
def test_unicode_width_fallback_matches_prettytable(monkeypatch, value) -> None:
    # Without the wcwidth module the Unicode-database rule must give the same layout.
    monkeypatch.setattr(utils, "_wcswidth", None)
    assert _format_table("stats", {"metric": value}, ["metric"]) == "[stats]\n" + _single(value)


@pytest.mark.parametrize("num_rows", [0, 1, 25])
def test_statistics_stage_table_keeps_duplicate_headers_and_empty_rows(num_rows) -> None:
    fields = [f"metric_{i}" for i in range(num_rows)]
    data = [{"stage_id": 0, **{f: i * 1234 for i, f in enumerate(fields)}} for _ in range(2)]
    table = PrettyTable()
    table.field_names = ["Field", "0", "0_2"]
    table.align["Field"] = "l"
    table.align["0"] = table.align["0_2"] = "r"
    for i, field in enumerate(fields):
        table.add_row([field, f"{i * 1234:,}", f"{i * 1234:,}"])
    assert _format_table("stages", data, fields, "stage_id") == "[stages]\n" + table.get_string()


def test_multi_column_values_and_missing_cells_match_prettytable() -> None:
    data = [
        {"edge": "0->1", "size_kbytes": 1.0, "tx_time_ms": 1234567.891, "flag": True, "itl": [1, 2, 4]},
        {"edge": "1->2", "size_kbytes": 0.5, "flag": False, "itl": [], "name": "中文"},
        {"size_kbytes": -3, "itl": ["a", "b"]},
    ]
    fields = ["flag", "itl", "name", "size_kbytes", "tx_time_ms"]
    table = PrettyTable()
    table.field_names = ["Field", "e0->1", "e1->2", "e?"]
    table.align["Field"] = "l"
    for col in ("e0->1", "e1->2", "e?"):
        table.align[col] = "r"
    table.add_row(["flag", "True", "False", ""])
    table.add_row(["itl", "2.333 (n=3)", "", "a, b"])
    table.add_row(["name", "", "中文", ""])
    table.add_row(["size_kbytes", "1.000", "0.500", "-3"])
    table.add_row(["tx_time_ms", "1,234,567.891", "", ""])
    assert _format_table("T", data, fields, column_key="edge", column_prefix="e") == "[T]\n" + table.get_string()


def test_single_column_nested_dict_expands_and_missing_fields_skip() -> None:
    data = {"a": 1, "nested": {"x": 2.5, "y": -1234567}, "b": math.nan}
    table = PrettyTable()
    table.field_names = ["Field", "Value"]
    table.align["Field"] = "l"
    table.align["Value"] = "r"
    for row in (["a", "1"], ["x", "2.500"], ["y", "-1,234,567"], ["b", "nan"]):
        table.add_row(row)
    assert _format_table("N", data, ["a", "nested", "missing", "b"]) == "[N]\n" + table.get_string()


def test_no_matching_field_renders_header_only_table() -> None:
    table = PrettyTable()
    table.field_names = ["Field", "Value"]
    table.align["Field"] = "l"
    table.align["Value"] = "r"
    assert _format_table("E", {"a": 1}, ["zzz"]) == "[E]\n" + table.get_string()


@pytest.mark.parametrize("data", [{}, [], None])
def test_empty_data(data) -> None:
    assert _format_table("Title", data, ["x"]) == "[Title] <empty>"


def test_colliding_duplicate_headers_stay_unique() -> None:
    data = [{"k": "0"}, {"k": "0"}, {"k": "0_2"}, {"k": "Field"}]
    out = _format_table("D", data, [], column_key="k")
    header = out.splitlines()[2]
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells == ["Field", "0", "0_2", "0_2_2", "Field_2"]


def test_multi_column_errors() -> None:
    with pytest.raises(ValueError, match="column_key"):
        _format_table("x", [{"a": 1}], ["a"])
    with pytest.raises(TypeError, match="mappings"):
        _format_table("x", [{"a": 1}, 5], ["a"], column_key="a")


def test_cell_formatting_rules() -> None:
    fmt = utils._format_value
    assert fmt(True) == "True"
    assert fmt(1234567) == "1,234,567"
    assert fmt(-1234.5678) == "-1,234.568"
    assert fmt(0.0005) == "0.001"
    assert fmt([1.0, 2.0]) == "1.500 (n=2)"
    assert fmt([]) == ""
    assert fmt(None) == "None"
    assert fmt(math.inf) == "inf"
