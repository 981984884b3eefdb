// The four observe classes of vLLM-Omni's metrics package as CPython types, the hot path of the
// Python drop-in: OmniPrometheusMetrics, OmniModalityMetrics, OmniTransferMetrics and
// RealtimeVADMetrics, defined in modelmetrics._native and re-exported (the same objects) by
// modelmetrics.vllm_omni.metrics.{prometheus,modality,transfer,realtime}. Python code may
// subclass them. Instances take no new attributes (no __dict__); a subclass has one. Private to
// src/python.
//
// Contract (docs/python.md).
// - Constructor `(model_name: str, log_stats: bool = True)`: registers the class's catalog groups
//   (process_registry.h) and binds the eager children for model_name (zeros from the start, also
//   with log_stats off). Every method returns None; with log_stats off it returns at once, after
//   checking only the argument count (a Python function would check that too).
// - Each method is one row of pipeline/observe_table.h (the C++ observe classes carry out the same
//   rows): upstream's name and parameter names (positional or keyword), the families it records
//   into, its label values (`str(arg)` as
//   prometheus_client makes them, `arg or "unknown"` where upstream does so, `str(int(arg))` for
//   threshold_ms), and the value (float(arg), ms / 1000 for the realtime latencies). The family's
//   catalog Guard is applied before a lazy child is created, so a dropped value leaves no series;
//   NaN is always dropped. A value float() rejects raises TypeError and records nothing.
// - Objects with the same model_name share children (one registry), as upstream's do.
//
// Thread-safety: methods run with the GIL held (Python serialises the per-object caches); the
// observation itself is a lock-free write to the calling thread's shard, so the asyncio loop
// thread, the orchestrator thread and any other threads can record at once without lost counts.
#ifndef MODELMETRICS_PYTHON_OBSERVE_TYPES_H_
#define MODELMETRICS_PYTHON_OBSERVE_TYPES_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace modelmetrics::python {

// Adds the four types to `module`; false with a Python exception set on failure.
bool AddObserveTypes(PyObject* module);

// Registers the catalog groups a class owns ("prometheus", "modality", "transfer", "realtime");
// false with a Python exception set on an unknown name or a registry collision.
bool RegisterClassGroups(const char* class_key);

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_OBSERVE_TYPES_H_
