"""One row of the observe table works from C++ and from Python alike.

tests/pipeline/toy_observe_row.h writes a toy method once; build/tests/python_toy/_observe_toy
makes it a method of a Python type with the code that builds vLLM-Omni's classes
(src/python/observe_type.h) and also carries it out through the C++ ObserveRecorder. Both must
record the same series with the same values, and Python's argument handling (keywords, the
optional parameter, a bad value) must follow the row.
"""

import glob
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_toy():
    found = glob.glob(os.path.join(ROOT, "build", "tests", "python_toy", "_observe_toy*.so"))
    assert found, "build/tests/python_toy/_observe_toy is built with the tests (ninja -C build)"
    spec = importlib.util.spec_from_file_location("_observe_toy", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


toy = load_toy()


def series(text, model):
    """The sample lines of `model` (the toy module's process registry holds every test's)."""
    return sorted(line for line in text.splitlines()
                  if not line.startswith("#") and f'model_name="{model}"' in line)


@pytest.mark.parametrize("calls", [
    [(0, 1, 3, None)],
    [(0, 1, 3, "cut"), (2, 0, 5, "")],
    [(1, 1, 0, None), (1, 1, -4, "x"), (1, 1, 7, None)],  # frames <= 0 are dropped, not counted
])
def test_the_row_records_the_same_from_python_and_cpp(calls):
    model = f"toy-{len(calls)}-{calls[0][2]}"
    metrics = toy.ToyMetrics(model)
    for stage, replica, frames, reason in calls:
        if reason is None:
            metrics.toy_record_frames(str(stage), str(replica), frames)
        else:
            metrics.toy_record_frames(str(stage), str(replica), frames, reason)
    # The C++ side records each call into a fresh registry; their samples add up.
    cpp_lines = {}
    for stage, replica, frames, reason in calls:
        for line in series(toy.record_in_cpp(model, stage, replica, frames, reason), model):
            key, value = line.rsplit(" ", 1)
            cpp_lines[key] = cpp_lines.get(key, 0.0) + float(value)
    python_lines = {}
    for line in series(toy.render(), model):
        key, value = line.rsplit(" ", 1)
        python_lines[key] = float(value)
    assert python_lines == cpp_lines
    assert python_lines  # the toy row recorded something


def test_python_takes_the_rows_parameter_names_and_optional_one():
    metrics = toy.ToyMetrics("toy-keywords")
    metrics.toy_record_frames(stage="0", replica="0", n_frames=2, reason="late")
    metrics.toy_record_frames("0", "0", n_frames=1)
    lines = dict(line.rsplit(" ", 1) for line in series(toy.render(), "toy-keywords"))
    assert lines['vllm_omni:audio_frames_total{model_name="toy-keywords",replica="0",stage="0"}'] == "3.0"
    skipped = 'vllm_omni:audio_skipped_requests_total{model_name="toy-keywords",reason="%s",replica="0",stage="0"}'
    assert lines[skipped % "late"] == "1.0"
    assert lines[skipped % "unknown"] == "1.0"  # the left-out reason: None or "unknown"
    assert toy.ToyMetrics.toy_record_frames.__text_signature__ == (
        "($self, /, stage, replica, n_frames, reason=None)")


def test_a_value_that_is_not_a_number_records_nothing():
    metrics = toy.ToyMetrics("toy-bad")
    with pytest.raises(TypeError):
        metrics.toy_record_frames("0", "0", "three")
    with pytest.raises(TypeError):
        metrics.toy_record_frames("0", "0")  # n_frames is required
    assert series(toy.render(), "toy-bad") == []
