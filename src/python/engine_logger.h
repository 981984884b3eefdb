// modelmetrics._native.EngineStatsLogger: the per-engine `vllm:*` families by stage and replica
// (pipeline::EngineStatsLogger, engine_stats.h) for Python. Private to src/python; the public
// face is modelmetrics.vllm_omni.metrics.stat_logger.OmniPrometheusStatLogger, which reads
// vLLM's SchedulerStats / IterationStats objects and hands this type plain tuples.
//
// Contract.
//   EngineStatsLogger(model_name, engine_labels, max_model_len=None, kv_connector=None)
//       engine_labels[flat] = (stage, replica) label values; max_model_len sets the token-count
//       buckets; kv_connector "NixlConnector" adds NIXL's families (vLLM's
//       kv_transfer_config.kv_connector). Building one drops every `vllm:*` family of the process
//       registry first
//       (upstream's scoped unregister, §4.10: `vllm_omni:*` stays), then registers and binds the
//       engine families for every engine (zeros at once).
//   record(engine, scheduler, iteration, mm_cache)  scheduler, iteration, mm_cache: the tuples
//       stat_logger.py builds, or None. KeyError for an engine index outside the map (labels are
//       never guessed); TypeError for a malformed tuple; nothing is recorded then.
//   record_sleep_state(sleep, level, engine=None), log_engine_initialized(info_pairs).
//
// Thread-safety: as pipeline::EngineStatsLogger (any thread); the GIL is held throughout.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PYTHON_ENGINE_LOGGER_H_
#define MODELMETRICS_PYTHON_ENGINE_LOGGER_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace modelmetrics::python {

bool AddEngineLogger(PyObject* module);

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_ENGINE_LOGGER_H_
