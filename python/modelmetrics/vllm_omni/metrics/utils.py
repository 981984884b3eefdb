"""Helpers of the vLLM-Omni metrics: failure taxonomy, queue wait, finalize dispatch, coercion,
counting, and the log-table formatter.

Drop-in for upstream ``vllm_omni.metrics.utils`` (vllm-project/vllm-omni, N @ ec80c0bf), with the
two-argument ``extract_queue_wait_s`` that tests/metrics/test_emit_calls.py @ 9cfbfc89 requires.
Behaviour follows docs/pipeline-behaviour.md (§4.3, §4.4, §4.6, §4.17,
§5.3) and docs/python.md (``utils.py``).

The observe helpers call methods on duck-typed objects (an ``OmniPrometheusMetrics`` /
``OmniModalityMetrics`` or any stand-in); stage and replica are passed as ``str(id)``. Nothing here
imports prometheus_client or the native extension.

``_format_table`` renders PrettyTable's default layout itself (no prettytable at run time); the
output is byte-identical to ``PrettyTable.get_string()`` for the same rows, including the width
rules PrettyTable takes from ``wcwidth`` (wide CJK cells, zero-width marks, ANSI colour codes
ignored, and a width of -1 for cells holding control characters such as tab or CR).

Section numbers (§n) cite docs/pipeline-behaviour.md.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any

from . import definitions as metric_defs  # used at call time only (the two modules import each other)

if TYPE_CHECKING:
    from .stats import StageRequestStats

FAILURE_REASONS = frozenset({"client_abort", "client_disconnect", "stage_error", "unknown"})
DIFFUSION_METRICS_ONLY_REQUEST_ID = "__vllm_omni_diffusion_metrics__"

_UNKNOWN_REASON = "unknown"
_NO_AUDIO_DATA = "no_audio_data"


def _finite_float(value: object) -> float | None:
    """``float(value)`` when it is a finite number (numeric strings too, as float() reads them),
    else None (missing)."""
    if value is None:
        return None
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return out if math.isfinite(out) else None


# ---- Queue wait (§4.17) ----
def extract_queue_wait_s(
    pipeline_timings: Mapping[str, float] | None,
    diffusion_metrics: Mapping[str, float] | None = None,
) -> float | None:
    """Request queue wait in seconds: orchestrator wait plus diffusion scheduler admission wait.

    The orchestrator part is ``pipeline_timings["queue_wait_ms"] / 1000`` when the key is present
    (a present None counts as 0); the diffusion part is ``diffusion_metrics["scheduler_queue_wait_s"]``
    when present. None when neither is present, so a missing wait is never a synthetic zero.
    Values that are not finite numbers, and arguments that are not mappings, count as missing.
    """
    total: float | None = None
    if isinstance(pipeline_timings, Mapping) and "queue_wait_ms" in pipeline_timings:
        raw = pipeline_timings["queue_wait_ms"]
        ms = 0.0 if raw is None else _finite_float(raw)
        if ms is not None:
            total = ms / 1000.0
    if isinstance(diffusion_metrics, Mapping) and "scheduler_queue_wait_s" in diffusion_metrics:
        wait_s = _finite_float(diffusion_metrics["scheduler_queue_wait_s"])
        if wait_s is not None:
            total = (total or 0.0) + wait_s
    return total


# ---- Finalize dispatch (§4.3, §4.17) ----
def observe_stage_workload_metrics(
    prom_metrics: Any,
    *,
    stage_type: str,
    stage_metrics: StageRequestStats | Any,
) -> None:
    """Workload scope: diffusion stages observe steps; image outputs observe pixels and count.

    The observe methods apply their own ``<= 0`` guards, so values are passed through as given.
    """
    if stage_type == "diffusion":
        prom_metrics.observe_num_inference_steps(getattr(stage_metrics, "num_inference_steps", 0))
    if getattr(stage_metrics, "output_unit_type", None) == "image":
        prom_metrics.observe_image_pixels(getattr(stage_metrics, "image_pixels", 0))
        prom_metrics.inc_image_count(getattr(stage_metrics, "output_unit_count", 0))


def _int_or_zero(value: object) -> int:
    number = _finite_float(value)
    return int(number) if number is not None else 0


def observe_audio_finalize(
    mod_metrics: Any,
    *,
    stage_id: int,
    replica_id: int,
    stage_metrics: Any,
    engine_outputs: Any,
) -> None:
    """Audio part of the finalize (§4.3): frames, then duration and RTF, or a skipped request.

    Frames are the stage's ``audio_generated_frames``, else counted from the multimodal output;
    the sample rate comes from the §4.4 chain on that output (default 24000). Duration and RTF are
    observed only when the duration is > 0, else ``inc_audio_skipped(..., "no_audio_data")``.
    """
    stage_label = str(stage_id)
    replica_label = str(replica_id)
    gen_ms = _finite_float(getattr(stage_metrics, "stage_gen_time_ms", 0.0)) or 0.0
    mm_out = extract_mm_output(engine_outputs)
    sample_rate = metric_defs.resolve_audio_sample_rate(mm_out)
    n_frames = _int_or_zero(getattr(stage_metrics, "audio_generated_frames", 0))
    if n_frames == 0:
        n_frames = count_audio_frames(mm_out)
    mod_metrics.inc_audio_frames(stage_label, replica_label, n_frames)
    duration_s = n_frames / sample_rate if sample_rate > 0 else 0.0
    if duration_s > 0:
        mod_metrics.observe_audio_duration(stage_label, replica_label, duration_s)
        mod_metrics.observe_audio_rtf(
            stage_label, replica_label, metric_defs.compute_audio_rtf(gen_ms / 1000.0, duration_s)
        )
    else:
        mod_metrics.inc_audio_skipped(stage_label, replica_label, _NO_AUDIO_DATA)


def observe_diffusion_finalize(
    mod_metrics: Any,
    *,
    stage_id: int,
    replica_id: int,
    stage_metrics: Any,
) -> None:
    """Diffusion breakdown at finalize (§4.17), from ``stage_metrics.diffusion_metrics`` (seconds).

    Each present key is observed as given (zero included; the observe methods apply the < 0 /
    <= 0 guards). Per-step exec needs steps > 0; denoise step latency needs steps > 0 and an image
    output. Values that are not finite numbers are skipped.
    """
    diff_metrics = getattr(stage_metrics, "diffusion_metrics", None)
    if not diff_metrics or not isinstance(diff_metrics, Mapping):
        return
    stage_label = str(stage_id)
    replica_label = str(replica_id)
    steps = _int_or_zero(getattr(stage_metrics, "num_inference_steps", 0)) or _int_or_zero(
        diff_metrics.get("num_inference_steps")
    )

    def value(key: str) -> float | None:
        return _finite_float(diff_metrics.get(key)) if key in diff_metrics else None

    exec_s = value("diffusion_engine_exec_time_s")
    if exec_s is not None:
        mod_metrics.observe_diffusion_exec(stage_label, replica_label, exec_s)
        if steps > 0:
            mod_metrics.observe_diffusion_exec_per_step(stage_label, replica_label, exec_s / steps)
    # The breakdown keys observed as they are (each method applies its own guard).
    for key, method in (("preprocess_time_s", "observe_diffusion_preprocess"),
                        ("postprocess_time_s", "observe_diffusion_postprocess"),
                        ("vae_decode_time_s", "observe_vae_decode"),
                        ("kv_recv_time_s", "observe_diffusion_kv_load")):
        seconds = value(key)
        if seconds is not None:
            getattr(mod_metrics, method)(stage_label, replica_label, seconds)
    forward_s = value("forward_time_s")
    if forward_s is not None:
        mod_metrics.observe_diffusion_forward(stage_label, replica_label, forward_s)
        if steps > 0 and getattr(stage_metrics, "output_unit_type", None) == "image":
            mod_metrics.observe_denoise_step_latency(stage_label, replica_label, forward_s / steps)


# ---- Failure taxonomy (§4.6) ----
def normalize_failure_reason(reason: str | None) -> str:
    """``reason`` if it is one of FAILURE_REASONS, else "unknown" (None, "", free text, non-str)."""
    try:
        return reason if reason in FAILURE_REASONS else _UNKNOWN_REASON  # type: ignore[return-value]
    except TypeError:  # unhashable input
        return _UNKNOWN_REASON


# ---- Diffusion helpers ----
def diffusion_scheduler_waiting_metrics(n_waiting: int) -> dict[str, int]:
    """The diffusion scheduler snapshot ``{scheduler_num_waiting_reqs: max(int(n), 0)}``.

    None or a non-finite value counts as 0 waiting.
    """
    number = _finite_float(n_waiting)
    return {metric_defs.DIFFUSION_SCHEDULER_WAITING_KEY: max(int(number), 0) if number is not None else 0}


def diffusion_exception_metrics(exc: BaseException) -> dict[str, Any]:
    """A copy of the ``diffusion_metrics`` mapping attached to a terminal diffusion error, or {}."""
    metrics = getattr(exc, "diffusion_metrics", None)
    return dict(metrics) if isinstance(metrics, Mapping) else {}


def sum_diffusion_stage_durations_ms(output: Any, suffix: str) -> float | None:
    """Sum, in ms, of ``output.stage_durations`` (seconds) whose key ends with ``suffix``.

    None when there is no ``stage_durations`` mapping or no numeric matching entry.
    """
    durations = getattr(output, "stage_durations", None)
    if not isinstance(durations, Mapping):
        return None
    total = 0.0
    found = False
    for key, raw in durations.items():
        if not isinstance(key, str) or not key.endswith(suffix):
            continue
        seconds = _finite_float(raw)
        if seconds is None:
            continue
        total += seconds
        found = True
    return total * 1000.0 if found else None


def extract_diffusion_vae_decode_ms(output: Any) -> float | None:
    return sum_diffusion_stage_durations_ms(output, ".vae.decode")


def extract_diffusion_denoise_ms(output: Any) -> float | None:
    """Denoise-loop time (transformer plus per-step scheduler) in ms."""
    return sum_diffusion_stage_durations_ms(output, ".diffuse")


# ---- Coercion (§4.4) ----
_TRUE_STRINGS = frozenset({"1", "true", "yes", "on", "y", "t"})
_FALSE_STRINGS = frozenset({"0", "false", "no", "off", "n", "f", ""})


def coerce_bool(value: object, *, default: bool = False) -> bool:
    """A bool from a bool, number, tensor-like scalar or string ("true"/"1"/"yes"/"on" ...).

    None, unknown strings and values that cannot be read give ``default``.
    """
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, bytes)):
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        text = text.strip().lower()
        if text in _TRUE_STRINGS:
            return True
        if text in _FALSE_STRINGS:
            return False
        return default
    item = getattr(value, "item", None)
    if callable(item):
        try:
            value = item()
        except Exception:
            return default
        if isinstance(value, bool):
            return value
    if isinstance(value, (int, float)):
        return default if isinstance(value, float) and math.isnan(value) else bool(value)
    return default


def _scalar_item(value: object) -> tuple[bool, object]:
    """(ok, value) after unwrapping a tensor/numpy scalar's ``.item()``; ok False if it raised."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (str, bytes, bytearray)):
        try:
            return True, item()
        except Exception:
            return False, None
    return True, value


def coerce_positive_int_scalar(value: object) -> int | None:
    """A positive int from an int, tensor/numpy scalar (``.item()``), numeric string or list wrap.

    None: value None, item() raising, not int()-convertible (e.g. "24000.0", NaN, inf), or <= 0.
    Floats truncate; a list/tuple yields its first element that coerces.
    """
    return _coerce_positive(value, int, coerce_positive_int_scalar)


def coerce_positive_float_scalar(value: object) -> float | None:
    """A positive finite float from a number, tensor/numpy scalar, numeric string or list wrap."""
    number = _coerce_positive(value, float, coerce_positive_float_scalar)
    return number if number is None or math.isfinite(number) else None


def _coerce_positive(value, convert, recurse):
    """The shared coercion chain: None -> None; a list/tuple -> its first element `recurse`
    accepts; a tensor/numpy scalar -> its item(); then `convert(value)`, kept only when > 0."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        for element in value:
            coerced = recurse(element)
            if coerced is not None:
                return coerced
        return None
    ok, value = _scalar_item(value)
    if not ok:
        return None
    try:
        number = convert(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number > 0 else None


def _is_falsy(source: object) -> bool:
    try:
        return not source
    except Exception:  # e.g. a multi-element array: ambiguous truth value means "has content"
        return False


def resolve_int_by_sequential_keys(
    source: Mapping[str, object] | object | None,
    keys: Sequence[str],
) -> int | None:
    """The first positive int found by trying ``keys`` in order on ``source``.

    Mapping sources use ``source.get(key)``, other objects ``getattr(source, key, None)``; values
    coerce via ``coerce_positive_int_scalar``. None for a falsy source (None, {}) or no usable key.
    """
    if _is_falsy(source):
        return None
    if isinstance(keys, str):
        keys = (keys,)
    is_mapping = isinstance(source, Mapping)
    for key in keys:
        try:
            raw = source.get(key) if is_mapping else getattr(source, key, None)  # type: ignore[union-attr]
        except Exception:
            continue
        number = coerce_positive_int_scalar(raw)
        if number is not None:
            return number
    return None


# ---- Multimodal outputs and counting (§4.3) ----
def _nonempty_mapping(value: object) -> bool:
    return isinstance(value, Mapping) and len(value) > 0


def _first_output(mm_source: object) -> object | None:
    outs = getattr(mm_source, "outputs", None)
    if _is_falsy(outs):
        return None
    try:
        return outs[0]  # type: ignore[index]
    except (TypeError, IndexError, KeyError):
        return None


def extract_mm_output(mm_source: object) -> Mapping[str, Any]:
    """The first non-empty Mapping among ``mm_source.multimodal_output`` and
    ``mm_source.outputs[0].multimodal_output``; ``{}`` when neither is one."""
    mm = getattr(mm_source, "multimodal_output", None)
    if _nonempty_mapping(mm):
        return mm  # type: ignore[return-value]
    nested = getattr(_first_output(mm_source), "multimodal_output", None)
    if _nonempty_mapping(nested):
        return nested  # type: ignore[return-value]
    return {}


def iter_mm_outputs(mm_source: object) -> list[Mapping[str, Any]]:
    """Every non-empty multimodal Mapping: the top-level one, then each ``outputs[i]``'s, in order."""
    found: list[Mapping[str, Any]] = []
    outer = getattr(mm_source, "multimodal_output", None)
    if _nonempty_mapping(outer):
        found.append(outer)  # type: ignore[arg-type]
    outs = getattr(mm_source, "outputs", None)
    if _is_falsy(outs):
        return found
    try:
        iterator = iter(outs)  # type: ignore[call-overload]
    except TypeError:
        return found
    for output in iterator:
        inner = getattr(output, "multimodal_output", None)
        if _nonempty_mapping(inner):
            found.append(inner)
    return found


def _shape_of(value: object) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(int(dim) for dim in shape)
    except (TypeError, ValueError, OverflowError):
        return None


def count_audio_chunk_frames(audio_chunk: object) -> int:
    """Frames in one audio chunk: ``shape[-1]`` (samples are the last axis: (T,), (C, T), (B, C, T)),
    else ``len(chunk)``, else 1 for a scalar."""
    shape = _shape_of(audio_chunk)
    if shape:
        return shape[-1]
    try:
        return len(audio_chunk)  # type: ignore[arg-type]
    except TypeError:
        return 1


def count_audio_frames(mm_out: Mapping[str, Any]) -> int:
    """Total frames of ``mm_out["audio"]``, else ``mm_out["model_outputs"]`` (first non-None); a
    non-list value is one chunk. 0 when neither is present or ``mm_out`` is not a mapping."""
    if not isinstance(mm_out, Mapping):
        return 0
    chunks = None
    for key in ("audio", "model_outputs"):
        chunks = mm_out.get(key)
        if chunks is not None:
            break
    if chunks is None:
        return 0
    if not isinstance(chunks, list):
        chunks = [chunks]
    return sum(count_audio_chunk_frames(chunk) for chunk in chunks)


def count_image_pixels(value: object) -> int:
    """Pixels of one image (PIL-like ``size=(W, H)`` or a ``shape``), summed over nested lists.

    Shapes: ndim >= 4 (e.g. BCHW) -> B*H*W; 3-D CHW (dims[0] in 1, 3, 4) or HWC (dims[-1] in 1, 3,
    4) -> H*W; otherwise dims[-2]*dims[-1]. 0 when the value cannot be read.
    """
    if value is None:
        return 0
    if isinstance(value, (list, tuple)):
        return sum(count_image_pixels(item) for item in value)
    size = getattr(value, "size", None)
    if isinstance(size, tuple) and len(size) >= 2:
        try:
            return int(size[0]) * int(size[1])
        except (TypeError, ValueError, OverflowError):
            return 0
    dims = _shape_of(value)
    if dims is None or len(dims) < 2:
        return 0
    if len(dims) >= 4:
        return dims[0] * dims[-2] * dims[-1]
    if len(dims) == 3 and dims[0] in (1, 3, 4):
        return dims[1] * dims[2]
    if len(dims) == 3 and dims[-1] in (1, 3, 4):
        return dims[0] * dims[1]
    return dims[-2] * dims[-1]


_CHANNEL_SIZES = (1, 3, 4)


def count_video_frames(video: object) -> int | None:
    """Frames of a video value: a mapping's "video"/"frames"/"images" entry, a list's length, or
    a 4-D ([F,H,W,C] / [C,F,H,W]) or 5-D ([B,F,H,W,C] / [B,C,F,H,W]) shape. None when unknown."""
    if isinstance(video, Mapping):
        for key in ("video", "frames", "images"):
            if key in video:
                return count_video_frames(video[key])
        return None
    if isinstance(video, (list, tuple)):
        return len(video)
    dims = _shape_of(video)
    if dims is None:
        return None
    if len(dims) == 5:
        if dims[-1] in _CHANNEL_SIZES:  # channels last: [B, F, H, W, C]
            return dims[1]
        if dims[1] in _CHANNEL_SIZES:  # [B, C, F, H, W]
            return dims[2]
        return dims[1]
    if len(dims) == 4:
        if dims[-1] in _CHANNEL_SIZES:  # [F, H, W, C]
            return dims[0]
        if dims[0] in _CHANNEL_SIZES:  # [C, F, H, W]
            return dims[1]
        return dims[0]
    return None


def count_tokens_from_outputs(engine_outputs: list[Any]) -> int:
    """Total tokens over ``engine_outputs[i].outputs[j]``: the cumulative ids when present (DELTA
    mode leaves only the latest chunk in token_ids), else token_ids. Best effort: unreadable
    entries count 0."""
    if engine_outputs is None:
        return 0
    total = 0
    try:
        iterator = iter(engine_outputs)
    except TypeError:
        return 0
    for request_output in iterator:
        outs = getattr(request_output, "outputs", None)
        if _is_falsy(outs):
            continue
        try:
            for output in outs:
                tokens = getattr(output, "cumulative_token_ids", None)
                if tokens is None:
                    tokens = getattr(output, "token_ids", None)
                if tokens is not None:
                    total += len(tokens)
        except Exception:  # one malformed output must not lose the others' counts
            continue
    return total


# ---- Table helpers (§5.1, §5.3) ----
def _build_field_defs(
    cls: type,
    exclude: set[str],
    transforms: dict[str, tuple[str, Callable[[Any], Any]]] | None = None,
) -> list[tuple[str, Callable[[Any], Any]]]:
    """``(display_name, getter)`` for each dataclass field of ``cls`` not in ``exclude``.

    ``transforms`` maps a field name to ``(display_name, fn)``; its getter returns ``fn(value)``.
    """
    if not is_dataclass(cls):
        raise TypeError(f"_build_field_defs: {cls!r} is not a dataclass")
    transforms = transforms or {}
    defs: list[tuple[str, Callable[[Any], Any]]] = []
    for f in fields(cls):
        if f.name in exclude:
            continue
        if f.name in transforms:
            display, fn = transforms[f.name]
            defs.append((display, lambda evt, _fn=fn, _n=f.name: _fn(getattr(evt, _n))))
        else:
            defs.append((f.name, lambda evt, _n=f.name: getattr(evt, _n)))
    return defs


def _build_row(evt: Any, field_defs: list[tuple[str, Callable[[Any], Any]]]) -> dict[str, Any]:
    """``{display_name: getter(evt)}`` for the field definitions, in order."""
    return {name: getter(evt) for name, getter in field_defs}


def _get_field_names(field_defs: list[tuple[str, Callable[[Any], Any]]]) -> list[str]:
    return [name for name, _ in field_defs]


def _format_value(value: Any) -> str:
    """One table cell (§5.3): bool True/False, int "1,234", float "1,234.568", a list its mean
    to 3 dp plus " (n=N)" ("" when empty, joined text when not numeric), anything else str()."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, list):
        if not value:
            return ""
        try:
            mean = sum(float(v) for v in value) / len(value)
        except (TypeError, ValueError):
            return ", ".join(str(v) for v in value)
        return f"{mean:,.3f} (n={len(value)})"
    return str(value)


# PrettyTable measures cells with wcwidth.wcswidth after removing SGR colour codes and "ESC ( B".
_ANSI_RE = re.compile(r"\033\[[0-9;]*m|\033\(B")

try:  # the width function PrettyTable itself uses, when installed (prettytable depends on it)
    from wcwidth import wcswidth as _wcswidth
except ImportError:  # pragma: no cover - exercised by a test that hides the module
    _wcswidth = None


def _char_width(char: str) -> int:
    """wcwidth's per-character rule from the Unicode database (used when wcwidth is absent)."""
    code = ord(char)
    if (
        code == 0
        or code == 0x034F
        or 0x200B <= code <= 0x200F
        or code in (0x2028, 0x2029)
        or 0x202A <= code <= 0x202E
        or 0x2060 <= code <= 0x2063
    ):
        return 0
    if code < 32 or 0x7F <= code < 0xA0:
        return -1
    if unicodedata.category(char) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _fallback_wcswidth(text: str) -> int:
    width = 0
    for char in text:
        w = _char_width(char)
        if w < 0:
            return -1  # as wcswidth: one non-printable character makes the whole string -1
        width += w
    return width


def _display_width(text: str) -> int:
    """PrettyTable's ``_str_block_width``; printable ASCII (the common case) is just ``len``."""
    if text.isascii() and text.isprintable():
        return len(text)
    text = _ANSI_RE.sub("", text)
    if _wcswidth is not None:
        return _wcswidth(text)
    return _fallback_wcswidth(text)


def _justify(text: str, width: int, align: str) -> str:
    pad = width - _display_width(text)
    if pad <= 0:
        return text
    return text + " " * pad if align == "l" else " " * pad + text


def _render_prettytable(field_names: list[str], rows: list[list[str]], aligns: list[str]) -> str:
    """``PrettyTable.get_string()`` for the default style (borders, header, FRAME hrules, padding
    1, top valign) with the given per-column alignment ("l" or "r"). Cells are strings."""
    widths = [max(_display_width(line) for line in name.split("\n")) for name in field_names]
    for row in rows:
        for index, cell in enumerate(row):
            cell_width = max(_display_width(line) for line in cell.split("\n"))
            if cell_width > widths[index]:
                widths[index] = cell_width
    hrule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    header_cells = []
    for name, width, align in zip(field_names, widths, aligns):
        if _display_width(name) > width:  # PrettyTable truncates an over-wide header
            name = name[:width]
        header_cells.append(" " + _justify(name, width, align) + " ")
    lines = [hrule, "|" + "|".join(header_cells) + "|", hrule]

    for row in rows:
        # A cell's embedded newlines make a multi-line row; shorter cells pad at the bottom.
        split = [cell.split("\n") for cell in row]
        height = max(len(cell_lines) for cell_lines in split)
        for y in range(height):
            parts = []
            for cell_lines, width, align in zip(split, widths, aligns):
                text = cell_lines[y] if y < len(cell_lines) else ""
                parts.append(" " + _justify(text, width, align) + " ")
            lines.append("|" + "|".join(parts) + "|")
    lines.append(hrule)
    return "\n".join(lines)


def _unique_headers(headers: list[str]) -> list[str]:
    """Later duplicates get ``_2``, ``_3``, ... (upstream); a suffix that collides again (or the
    ``Field`` column) gets a further suffix, where PrettyTable would raise on the duplicate."""
    seen: dict[str, int] = {}
    first_pass = []
    for header in headers:
        n = seen.get(header, 0)
        seen[header] = n + 1
        first_pass.append(header if n == 0 else f"{header}_{n + 1}")
    used = {"Field"}
    result = []
    for header in first_pass:
        candidate = header
        k = 2
        while candidate in used:
            candidate = f"{header}_{k}"
            k += 1
        used.add(candidate)
        result.append(candidate)
    return result


def _format_table(
    title: str,
    data: dict[str, Any] | list[dict[str, Any]],
    value_fields: list[str],
    column_key: str | None = None,
    column_prefix: str = "",
) -> str:
    """A titled table in PrettyTable's default layout (§5.3).

    Single-column mode (``data`` a mapping): a "Field | Value" table with one row per name of
    ``value_fields`` present in ``data``; a nested mapping value expands into one row per key.
    Multi-column mode (``data`` a list of mappings): "Field | <col> | ...", column headers
    ``f"{column_prefix}{row.get(column_key, '?')}"`` (duplicates get ``_2``, ``_3``, ...), one row
    per name of ``value_fields`` (a missing value is an empty cell). Field column left-aligned,
    value columns right-aligned. Empty ``data`` gives ``"[<title>] <empty>"``.
    """
    if not data:
        return f"[{title}] <empty>"
    rows: list[list[str]] = []
    if isinstance(data, Mapping):
        headers = ["Field", "Value"]
        for field in value_fields:
            if field not in data:
                continue
            value = data[field]
            if isinstance(value, Mapping):
                for sub_key, sub_value in value.items():
                    rows.append([f"{sub_key}", _format_value(sub_value)])
            else:
                rows.append([str(field), _format_value(value)])
    else:
        if column_key is None:
            raise ValueError("column_key is required for multi-column mode")
        if not isinstance(data, Iterable) or isinstance(data, (str, bytes)):
            raise TypeError(f"_format_table: data must be a mapping or a list of mappings, got {type(data).__name__}")
        data = list(data)
        if not all(isinstance(row, Mapping) for row in data):
            raise TypeError("_format_table: multi-column data rows must be mappings")
        headers = ["Field"] + _unique_headers([f"{column_prefix}{row.get(column_key, '?')}" for row in data])
        for field in value_fields:
            rows.append([str(field)] + [_format_value(row.get(field, "")) for row in data])
    aligns = ["l"] + ["r"] * (len(headers) - 1)
    return f"[{title}]\n" + _render_prettytable(headers, rows, aligns)
