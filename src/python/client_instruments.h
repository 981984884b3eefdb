// The native cores of modelmetrics.prometheus_client's Counter, Gauge and Histogram: the
// prometheus_client-compatible instruments. Private to src/python.
//
// Contract. `_native.CounterCore`, `GaugeCore` and `HistogramCore` derive from
// `_native.InstrumentCore` and are subclassed by the Python classes in
// python/modelmetrics/prometheus_client/metrics.py, which hold prometheus_client's constructor,
// validation and attributes; these types hold only what must be fast or native:
// - a parent (labelled, no label values) owns one native family (`_native_family`), a
//   standalone `Family<T>` outside every Registry, so two instruments of one name in two
//   prometheus_client registries never share values;
// - an observable object (a child, or an unlabelled metric) holds one handle of it
//   (`_native_bind`), with `_created` taken from the caller (Python's `time.time()`);
// - the hot methods (`inc`, `dec`, `set`, `set_to_current_time`, `observe`) are C entry points
//   with prometheus_client's parameters, exceptions and float semantics (NaN and +Inf kept, NaN
//   observations in `_sum` only);
// - `labels(*values)` finds an existing child in `_metrics` (a dict keyed by the tuple of
//   `str(value)`) without Python code; anything else (keywords, a new child, misuse) goes to the
//   Python class's `_labels_slow`, which has prometheus_client's full semantics;
// - `_native_detach()` removes a child from its family (`remove`, `clear`); its memory is freed
//   when the child object is.
// Module function `render_instruments(cores, openmetrics, created) -> bytes` renders the
// families of the given parents/unlabelled metrics, in order, with the GIL released.
// `rebind_methods(cls)` gives a subclass its own descriptors of the hot methods it inherits
// unchanged: CPython 3.11 runs a C method through its specialised fast call only when the
// instance's type is exactly the descriptor's (a subclass instance takes the generic path,
// about 2 ns slower per call); a method overridden in Python is left alone.
//
// Thread-safety: every method runs with the GIL held, except the render (fork-gated, see
// fork_gate.h); observations are lock-free writes to the calling thread's shard.
#ifndef MODELMETRICS_PYTHON_CLIENT_INSTRUMENTS_H_
#define MODELMETRICS_PYTHON_CLIENT_INSTRUMENTS_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace modelmetrics::python {

// Adds InstrumentCore, CounterCore, GaugeCore and HistogramCore to `module`; false with a
// Python exception set on failure.
bool AddClientInstruments(PyObject* module);

// render_instruments(cores, openmetrics=False, created=True) -> bytes.
PyObject* RenderInstruments(PyObject* module, PyObject* args, PyObject* kwargs);

// rebind_methods(cls) -> None.
PyObject* RebindMethods(PyObject* module, PyObject* cls);

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_CLIENT_INSTRUMENTS_H_
