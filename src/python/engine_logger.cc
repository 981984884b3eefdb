// The engine stats logger type. See engine_logger.h for the contract.
#include "engine_logger.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fork_gate.h"
#include "pipeline/engine_stats.h"
#include "process_registry.h"
#include "process_segment.h"
#include "py_args.h"

namespace modelmetrics::python {
namespace {

using pipeline::EngineStatsLogger;

struct LoggerObject {
  PyObject_HEAD EngineStatsLogger* logger;
};

// A non-negative count (vLLM's int fields); negatives (the -1 "unknown" sentinel) read 0.
bool Count(PyObject* o, uint64_t* out) {
  double v = 0;
  if (!ToDouble(o, &v)) return false;
  *out = SaturatingCount(v);
  return true;
}

template <typename T>
bool List(PyObject* seq, std::vector<T>* out) {
  if (seq == Py_None) return true;
  PyRef fast = AsTuple(seq, "expected a sequence");
  if (!fast) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(fast.get());
  out->reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, double>) {
      double v = 0;
      if (!ToDouble(PyTuple_GET_ITEM(fast.get(), i), &v)) return false;
      out->push_back(v);
    } else {
      uint64_t v = 0;
      if (!Count(PyTuple_GET_ITEM(fast.get(), i), &v)) return false;
      out->push_back(v);
    }
  }
  return true;
}

// (num_running, num_waiting, num_skipped_waiting, kv_cache_usage, prefix_queries, prefix_hits,
//  connector (queries, hits) | None,
//  kv_connector (durations, post_durations, bytes, descriptors, failed_transfers,
//                failed_notifications, expired) | None,
//  perf (flops, read_bytes, write_bytes) | None)
bool Scheduler(PyObject* t, pipeline::SchedulerStats* s) {
  PyObject *running, *waiting, *skipped, *queries, *hits, *connector, *kv, *perf;
  if (!PyArg_ParseTuple(t, "OOOdOOOOO:scheduler", &running, &waiting, &skipped, &s->kv_cache_usage,
                        &queries, &hits, &connector, &kv, &perf)) {
    return false;
  }
  if (!Count(running, &s->num_running_reqs) || !Count(waiting, &s->num_waiting_reqs) ||
      !Count(skipped, &s->num_skipped_waiting_reqs) ||
      !Count(queries, &s->prefix_cache_stats.queries) ||
      !Count(hits, &s->prefix_cache_stats.hits)) {
    return false;
  }
  if (connector != Py_None) {
    PyObject *q, *h;
    if (!PyArg_ParseTuple(connector, "OO:connector", &q, &h)) return false;
    pipeline::PrefixCacheStats c;
    if (!Count(q, &c.queries) || !Count(h, &c.hits)) return false;
    s->connector_prefix_cache_stats = c;
  }
  if (kv != Py_None) {
    PyObject *durations, *posts, *bytes, *descriptors, *failed, *notifications, *expired;
    if (!PyArg_ParseTuple(kv, "OOOOOOO:kv_connector", &durations, &posts, &bytes, &descriptors,
                          &failed, &notifications, &expired)) {
      return false;
    }
    pipeline::KvConnectorStats k;
    if (!List(durations, &k.transfer_duration_s) || !List(posts, &k.post_duration_s) ||
        !List(bytes, &k.bytes_transferred) || !List(descriptors, &k.num_descriptors) ||
        !Count(failed, &k.num_failed_transfers) ||
        !Count(notifications, &k.num_failed_notifications) ||
        !Count(expired, &k.num_kv_expired_reqs)) {
      return false;
    }
    s->kv_connector_stats = std::move(k);
  }
  if (perf != Py_None) {
    pipeline::PerfStats p;
    if (!PyArg_ParseTuple(perf, "ddd:perf", &p.num_flops_per_gpu, &p.num_read_bytes_per_gpu,
                          &p.num_write_bytes_per_gpu)) {
      return false;
    }
    s->perf_stats = p;
  }
  return true;
}

pipeline::FinishReason ReasonOf(std::string_view name) {
  using pipeline::FinishReason;
  for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort,
                         FinishReason::kError, FinishReason::kRepetition}) {
    if (pipeline::FinishReasonName(r) == name) return r;
  }
  return FinishReason::kError;  // a reason this vLLM version does not have: counted as error
}

// (reason, e2e, prompt, generation, max_tokens | None, queued, prefill, inference, decode,
//  mean_tpot, num_cached[, num_preemptions])
bool Finished(PyObject* t, pipeline::FinishedRequestStats* f) {
  PyObject *reason, *prompt, *generation, *max_tokens, *cached, *preemptions = nullptr;
  if (!PyArg_ParseTuple(t, "OdOOOdddddO|O:finished", &reason, &f->e2e_latency, &prompt, &generation,
                        &max_tokens, &f->queued_time, &f->prefill_time, &f->inference_time,
                        &f->decode_time, &f->mean_time_per_output_token, &cached, &preemptions)) {
    return false;
  }
  if (preemptions != nullptr && !Count(preemptions, &f->num_preemptions)) return false;
  LabelValue r;
  if (!r.Set(reason)) return false;
  f->finish_reason = ReasonOf(r.view());
  if (!Count(prompt, &f->num_prompt_tokens) || !Count(generation, &f->num_generation_tokens)) {
    return false;
  }
  if (max_tokens != Py_None) {
    uint64_t m = 0;
    if (!Count(max_tokens, &m)) return false;
    f->max_tokens_param = m;
  }
  double c = 0;
  if (!ToDouble(cached, &c)) return false;
  f->num_cached_tokens = SaturatingInt(c);
  return true;
}

// (generation_tokens, prompt_tokens, preempted, prompt_token_stats (computed, local_cache_hit,
//  external_kv_transfer, cached) | None, finished [tuple], max_generation_tokens
//  [int], n_params [int], ttfts [s], inter_token_latencies [s])
bool Iteration(PyObject* t, pipeline::IterationStats* it) {
  PyObject *generation, *prompt, *preempted, *sources, *finished, *max_gen, *n_params, *ttft, *itl;
  if (!PyArg_ParseTuple(t, "OOOOOOOOO:iteration", &generation, &prompt, &preempted, &sources,
                        &finished, &max_gen, &n_params, &ttft, &itl)) {
    return false;
  }
  if (!Count(generation, &it->num_generation_tokens) || !Count(prompt, &it->num_prompt_tokens) ||
      !Count(preempted, &it->num_preempted_reqs)) {
    return false;
  }
  if (sources != Py_None) {
    PyObject *computed, *local, *external, *cached;
    if (!PyArg_ParseTuple(sources, "OOOO:prompt_token_stats", &computed, &local, &external,
                          &cached)) {
      return false;
    }
    pipeline::PromptTokenStats& p = it->prompt_token_stats;
    if (!Count(computed, &p.computed) || !Count(local, &p.local_cache_hit) ||
        !Count(external, &p.external_kv_transfer) || !Count(cached, &p.cached_tokens)) {
      return false;
    }
  }
  if (finished != Py_None) {
    PyRef fast = AsTuple(finished, "finished_requests must be a sequence");
    if (!fast) return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fast.get()); ++i) {
      pipeline::FinishedRequestStats f;
      if (!Finished(PyTuple_GET_ITEM(fast.get(), i), &f)) return false;
      it->finished_requests.push_back(f);
    }
  }
  return List(max_gen, &it->max_num_generation_tokens_iter) && List(n_params, &it->n_params_iter) &&
         List(ttft, &it->time_to_first_tokens_iter) && List(itl, &it->inter_token_latencies_iter);
}

PyObject* New(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<LoggerObject*>(type->tp_alloc(type, 0));
  if (self != nullptr) self->logger = nullptr;
  return reinterpret_cast<PyObject*>(self);
}

int Init(PyObject* obj, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<LoggerObject*>(obj);
  static const char* kKeywords[] = {"model_name", "engine_labels", "max_model_len", "kv_connector",
                                    nullptr};
  PyObject *model, *labels, *max_model_len = Py_None;
  const char* connector = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|Oz:EngineStatsLogger",
                                   const_cast<char**>(kKeywords), &model, &labels, &max_model_len,
                                   &connector)) {
    return -1;
  }
  LabelValue model_text;
  if (!model_text.Set(model)) return -1;
  PyRef fast = AsTuple(labels, "engine_labels must be a sequence of (stage, replica)");
  if (!fast) return -1;
  pipeline::EngineStatsOptions options;
  options.model_name = std::string(model_text.view());
  if (max_model_len != Py_None) {
    uint64_t n = 0;
    if (!Count(max_model_len, &n)) return -1;
    if (n > 0) options.max_model_len = n;
  }
  // vLLM builds connector families only for the configured connector; this table knows NIXL's.
  if (connector != nullptr && std::string_view(connector) == "NixlConnector") {
    options.kv_connector = pipeline::KvConnector::kNixl;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fast.get()); ++i) {
    PyObject *stage, *replica;
    if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fast.get(), i), "OO:engine_labels", &stage, &replica)) {
      return -1;
    }
    LabelValue s, r;
    if (!s.Set(stage) || !r.Set(replica)) return -1;
    options.engine_labels.emplace_back(std::string(s.view()), std::string(r.view()));
  }
  // One stage with N replicas gives N flat indexes; the labels above name them.
  const uint32_t n = static_cast<uint32_t>(options.engine_labels.size());
  options.engines = pipeline::EngineMap{n};
  // Registering in the shared segment may wait for its directory lock: without the GIL.
  std::unique_ptr<EngineStatsLogger> logger;
  const base::Status created = WithoutGilIf(ProcessSegment() != nullptr, [&] {
    return EngineStatsLogger::Create(ProcessRegistry(), std::move(options), &logger);
  });
  if (!created.ok()) {
    PyErr_SetString(PyExc_ValueError, created.message().c_str());
    return -1;
  }
  delete self->logger;
  self->logger = logger.release();
  return 0;
}

void Dealloc(PyObject* obj) {
  auto* self = reinterpret_cast<LoggerObject*>(obj);
  PyTypeObject* type = Py_TYPE(obj);
  delete self->logger;  // its families stay registered (a later logger replaces them)
  type->tp_free(obj);
  Py_DECREF(type);
}

EngineStatsLogger* Logger(PyObject* obj) {
  EngineStatsLogger* logger = reinterpret_cast<LoggerObject*>(obj)->logger;
  if (logger == nullptr) PyErr_SetString(PyExc_RuntimeError, "EngineStatsLogger not initialised");
  return logger;
}

PyObject* Record(PyObject* obj, PyObject* args) {
  EngineStatsLogger* logger = Logger(obj);
  if (logger == nullptr) return nullptr;
  Py_ssize_t engine;
  PyObject *sched_obj, *iter_obj, *mm_obj;
  if (!PyArg_ParseTuple(args, "nOOO:record", &engine, &sched_obj, &iter_obj, &mm_obj)) {
    return nullptr;
  }
  pipeline::SchedulerStats sched;
  pipeline::IterationStats iter;
  pipeline::MultiModalCacheStats mm;
  if (sched_obj != Py_None && !Scheduler(sched_obj, &sched)) return nullptr;
  if (iter_obj != Py_None && !Iteration(iter_obj, &iter)) return nullptr;
  if (mm_obj != Py_None) {
    PyObject *q, *h;
    if (!PyArg_ParseTuple(mm_obj, "OO:mm_cache", &q, &h) || !Count(q, &mm.queries) ||
        !Count(h, &mm.hits)) {
      return nullptr;
    }
  }
  if (engine < 0 ||
      !logger
           ->Record(static_cast<size_t>(engine), sched_obj == Py_None ? nullptr : &sched,
                    iter_obj == Py_None ? nullptr : &iter, mm_obj == Py_None ? nullptr : &mm)
           .ok()) {
    PyErr_Format(PyExc_KeyError, "engine %zd is not in the stage/replica map", engine);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* RecordSleepState(PyObject* obj, PyObject* args) {
  EngineStatsLogger* logger = Logger(obj);
  if (logger == nullptr) return nullptr;
  int sleep = 0, level = 0;
  PyObject* engine = Py_None;
  if (!PyArg_ParseTuple(args, "ii|O:record_sleep_state", &sleep, &level, &engine)) return nullptr;
  std::optional<size_t> index;
  if (engine != Py_None) {
    const Py_ssize_t e = PyLong_AsSsize_t(engine);
    if (e == -1 && PyErr_Occurred()) return nullptr;
    index = static_cast<size_t>(e);
  }
  if (!logger->SetSleepState(sleep, level, index)) {
    PyErr_SetString(PyExc_KeyError, "engine is not in the stage/replica map");
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* LogEngineInitialized(PyObject* obj, PyObject* arg) {
  EngineStatsLogger* logger = Logger(obj);
  if (logger == nullptr) return nullptr;
  PyRef fast = AsTuple(arg, "info must be a sequence of (key, value)");
  if (!fast) return nullptr;
  std::vector<std::pair<std::string, std::string>> owned;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fast.get()); ++i) {
    PyObject *k, *v;
    if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fast.get(), i), "OO:info", &k, &v)) {
      return nullptr;
    }
    LabelValue key, value;
    if (!key.Set(k) || !value.Set(v)) return nullptr;
    owned.emplace_back(std::string(key.view()), std::string(value.view()));
  }
  std::vector<std::pair<std::string_view, std::string_view>> info(owned.begin(), owned.end());
  if (const base::Status logged = logger->LogEngineInitialized(info); !logged.ok()) {
    PyErr_SetString(PyExc_ValueError, logged.message().c_str());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"record", Record, METH_VARARGS, "record(engine, scheduler, iteration, mm_cache)"},
    {"record_sleep_state", RecordSleepState, METH_VARARGS,
     "record_sleep_state(sleep, level, engine=None)"},
    {"log_engine_initialized", LogEngineInitialized, METH_O,
     "log_engine_initialized([(key, value), ...]): cache_config_info"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool AddEngineLogger(PyObject* module) {
  PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>("EngineStatsLogger(model_name, engine_labels)\n--\n\n"
                                    "The per-engine vllm:* families by stage and replica.")},
      {Py_tp_new, reinterpret_cast<void*>(New)},
      {Py_tp_init, reinterpret_cast<void*>(Init)},
      {Py_tp_dealloc, reinterpret_cast<void*>(Dealloc)},
      {Py_tp_methods, kMethods},
      {0, nullptr},
  };
  PyType_Spec spec{"modelmetrics._native.EngineStatsLogger", sizeof(LoggerObject), 0,
                   Py_TPFLAGS_DEFAULT, slots};
  PyObject* type = PyType_FromModuleAndSpec(module, &spec, nullptr);
  if (type == nullptr) return false;
  if (PyModule_AddObject(module, "EngineStatsLogger", type) == 0) return true;
  Py_DECREF(type);
  return false;
}

}  // namespace modelmetrics::python
