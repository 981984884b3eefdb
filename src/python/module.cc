// modelmetrics._native: the CPython extension behind the `modelmetrics` Python package.
//
// Contents: the four observe types (observe_types.h), the engine stats logger
// (engine_logger.h), and module functions over the process registry:
//   register_classes(*keys)            the catalog groups of upstream modules, at their import
//   render(openmetrics, created) -> bytes   the whole exposition, GIL released while rendering
//   collect() -> list                  every family's children as values (the prometheus_client
//                                      bridge builds its Metric objects from them)
//   catalog() -> tuple                 the vllm_omni catalog rows (definitions.py reads them)
//   remove_prefix(prefix) -> int       scoped unregister of `vllm:` families (§4.10)
//   render_instruments(cores, ...)     the prometheus_client-compatible instruments
//                                      (client_instruments.h)
//   continuity_stats(...)              the player simulation (§4.1), for the streaming finalize
//   multiprocess_*(...)                the service's shared segment (process_segment.h)
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>
#include <vector>

#include "client_instruments.h"
#include "engine_logger.h"
#include "fork_gate.h"
#include "modelmetrics/metrics.h"
#include "observe_types.h"
#include "pipeline/catalog.h"
#include "pipeline/continuity.h"
#include "process_registry.h"
#include "process_segment.h"
#include "py_args.h"

namespace modelmetrics::python {
namespace {

PyObject* RegisterClasses(PyObject*, PyObject* args) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, i));
    if (key == nullptr || !RegisterClassGroups(key)) return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* Render(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"openmetrics", "created", nullptr};
  int openmetrics = 0, created = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pp:render", const_cast<char**>(kKeywords),
                                   &openmetrics, &created)) {
    return nullptr;
  }
  std::string out;
  bool failed = false;
  {
    WithoutGil released;  // the render touches no Python object
    try {
      ProcessRegistry().Render(openmetrics ? Format::kOpenMetrics : Format::kText, &out,
                               RenderOptions{.created_series = created != 0});
    } catch (...) {  // memory: raised below, with the GIL
      failed = true;
    }
  }
  if (failed) return PyErr_NoMemory();
  return PyBytes_FromStringAndSize(out.data(), static_cast<Py_ssize_t>(out.size()));
}

// PyTuple/PyList_SetItem of a new float (the slot is empty, so the steal is clean); false
// (MemoryError set) when it cannot be made.
template <typename SetItem>
bool SetFloat(SetItem set, PyObject* container, size_t i, double v) {
  PyObject* f = PyFloat_FromDouble(v);
  if (f == nullptr) return false;
  set(container, static_cast<Py_ssize_t>(i), f);
  return true;
}

PyObject* Str(std::string_view s) {
  return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
}

// [(name, type, help, labelnames, buckets, children)], children as
//   counters/gauges: (labelvalues, created, value)
//   histograms:      (labelvalues, created, cumulative_bucket_counts, count, sum)
PyObject* Collect(PyObject*, PyObject*) {
  struct Family {
    const FamilyOptions* options;
    MetricType type;
    std::vector<CollectedChild> children;
  };
  std::vector<Family> families;
  bool failed = false;
  {
    WithoutGil released;
    try {
      for (const auto* f : ProcessRegistry().Families()) {
        families.push_back({&f->options(), f->type(), f->Collect()});
      }
    } catch (...) {  // memory: raised below, with the GIL
      failed = true;
    }
  }
  if (failed) return PyErr_NoMemory();
  PyRef out(PyList_New(0));
  if (!out) return nullptr;
  for (const Family& f : families) {
    const char* type = f.type == MetricType::kCounter ? "counter"
                       : f.type == MetricType::kGauge ? "gauge"
                                                      : "histogram";
    PyRef children(PyList_New(0));
    if (!children) return nullptr;
    for (const CollectedChild& c : f.children) {
      PyRef child;
      if (f.type == MetricType::kHistogram) {
        PyRef buckets(PyList_New(static_cast<Py_ssize_t>(c.buckets.size())));
        if (!buckets) return nullptr;
        double cumulative = 0;
        for (size_t b = 0; b < c.buckets.size(); ++b) {
          cumulative += static_cast<double>(c.buckets[b]);
          if (!SetFloat(PyList_SetItem, buckets.get(), b, cumulative)) return nullptr;
        }
        PyRef values(StrTuple(c.label_values));
        if (!values) return nullptr;
        child = PyRef(Py_BuildValue("(NdNdd)", values.release(), c.created, buckets.release(),
                                    static_cast<double>(c.count), c.sum));
      } else {
        PyRef values(StrTuple(c.label_values));
        if (!values) return nullptr;
        child = PyRef(Py_BuildValue("(Ndd)", values.release(), c.created, c.value));
      }
      if (!child || PyList_Append(children.get(), child.get()) < 0) return nullptr;
    }
    PyRef buckets(PyTuple_New(static_cast<Py_ssize_t>(f.options->buckets.size())));
    if (!buckets) return nullptr;
    for (size_t b = 0; b < f.options->buckets.size(); ++b) {
      if (!SetFloat(PyTuple_SetItem, buckets.get(), b, f.options->buckets[b])) return nullptr;
    }
    PyRef name(Str(f.options->name)), help(Str(f.options->help)),
        labels(StrTuple(f.options->labels));
    if (!name || !help || !labels) return nullptr;
    PyRef row(Py_BuildValue("(NsNNNN)", name.release(), type, help.release(), labels.release(),
                            buckets.release(), children.release()));
    if (!row || PyList_Append(out.get(), row.get()) < 0) return nullptr;
  }
  return out.release();
}

// ((name, kind, help, labels, buckets, bind, group, guard), ...) in catalog order.
PyObject* Catalog(PyObject*, PyObject*) {
  const auto rows = pipeline::OmniFamilies();
  PyRef out(PyTuple_New(static_cast<Py_ssize_t>(rows.size())));
  if (!out) return nullptr;
  for (size_t i = 0; i < rows.size(); ++i) {
    const pipeline::FamilySpec& r = rows[i];
    std::vector<std::string> labels(r.labels.begin(), r.labels.end());
    PyRef buckets(PyTuple_New(static_cast<Py_ssize_t>(r.buckets.size())));
    if (!buckets) return nullptr;
    for (size_t b = 0; b < r.buckets.size(); ++b) {
      if (!SetFloat(PyTuple_SetItem, buckets.get(), b, r.buckets[b])) return nullptr;
    }
    PyObject* row =
        Py_BuildValue("(NNNNNNNN)", Str(r.name), Str(pipeline::KindName(r.kind)), Str(r.help),
                      StrTuple(labels), buckets.release(), Str(pipeline::BindName(r.bind)),
                      Str(pipeline::GroupName(r.group)), Str(pipeline::GuardName(r.guard)));
    if (row == nullptr) return nullptr;
    PyTuple_SET_ITEM(out.get(), static_cast<Py_ssize_t>(i), row);
  }
  return out.release();
}

PyObject* RemovePrefix(PyObject*, PyObject* arg) {
  Py_ssize_t size = 0;
  const char* prefix = PyUnicode_AsUTF8AndSize(arg, &size);
  if (prefix == nullptr) return nullptr;
  const std::string_view p(prefix, static_cast<size_t>(size));
  if (p.starts_with(pipeline::kOmniPrefix) || pipeline::kOmniPrefix.starts_with(p)) {
    PyErr_SetString(PyExc_ValueError, "the vllm_omni: families cannot be removed");
    return nullptr;
  }
  return PyLong_FromSize_t(ProcessRegistry().RemovePrefix(p));
}

// Reads a list of numbers into `out`; TypeError on anything float() rejects.
bool Numbers(PyObject* seq, const char* what, std::vector<double>* out) {
  PyRef fast = AsTuple(seq, what);
  if (!fast) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(fast.get());
  out->resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!ToDouble(PyTuple_GET_ITEM(fast.get(), i), &(*out)[static_cast<size_t>(i)])) return false;
  }
  return true;
}

// continuity_stats(arrivals_s, chunk_bytes, sample_rate, sample_width, channels, threshold_s)
//   -> (max_underrun_s, underrun_event_count, is_continuous)
PyObject* ContinuityStats(PyObject*, PyObject* args) {
  PyObject *arrivals_obj, *bytes_obj;
  long long sample_rate, sample_width, channels;
  double threshold;
  if (!PyArg_ParseTuple(args, "OOLLLd:continuity_stats", &arrivals_obj, &bytes_obj, &sample_rate,
                        &sample_width, &channels, &threshold)) {
    return nullptr;
  }
  std::vector<double> arrivals, byte_values;
  if (!Numbers(arrivals_obj, "chunk_arrival_times_s must be a sequence", &arrivals) ||
      !Numbers(bytes_obj, "chunk_bytes must be a sequence", &byte_values)) {
    return nullptr;
  }
  std::vector<uint64_t> bytes(byte_values.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = SaturatingCount(byte_values[i]);
  }
  const pipeline::PcmFormat format{
      .sample_rate = sample_rate, .channels = channels, .sample_width = sample_width};
  const pipeline::ContinuityStats s =
      pipeline::ComputeContinuityStats(arrivals, bytes, format, threshold);
  return Py_BuildValue("(dLO)", s.max_underrun_s, static_cast<long long>(s.underrun_event_count),
                       s.is_continuous ? Py_True : Py_False);
}

PyMethodDef kFunctions[] = {
    {"register_classes", RegisterClasses, METH_VARARGS,
     "Registers the catalog groups of the named classes (prometheus, modality, transfer, "
     "realtime)."},
    {"render", AsCFunction(&Render), METH_VARARGS | METH_KEYWORDS,
     "render(openmetrics=False, created=True) -> bytes: the whole exposition."},
    {"collect", Collect, METH_NOARGS, "Every family's children as values."},
    {"render_instruments", AsCFunction(&RenderInstruments), METH_VARARGS | METH_KEYWORDS,
     "render_instruments(cores, openmetrics=False, created=True) -> bytes: the families of "
     "modelmetrics.prometheus_client instruments."},
    {"rebind_methods", RebindMethods, METH_O,
     "rebind_methods(cls): a subclass's own descriptors of the inherited hot methods."},
    {"catalog", Catalog, METH_NOARGS, "The vllm_omni catalog rows."},
    {"remove_prefix", RemovePrefix, METH_O,
     "Stops rendering families whose name starts with the prefix (not vllm_omni:)."},
    {"continuity_stats", ContinuityStats, METH_VARARGS,
     "The audio continuity player simulation (reference section 4.1)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "modelmetrics._native",
                       "The C++ core of the modelmetrics Python package.", -1, kFunctions};

}  // namespace
}  // namespace modelmetrics::python

PyMODINIT_FUNC PyInit__native() {
  using namespace modelmetrics::python;
  PyObject* module = PyModule_Create(&kModule);
  if (module == nullptr) return nullptr;
  // The segment's fork handlers first, the gate's after: prepare handlers run in reverse, so
  // fork() first waits for the GIL-released sections (a registration waiting for the segment's
  // directory lock among them) and only then takes the segment's registration mutex.
  if (!AttachFromEnvironment()) {
    Py_DECREF(module);
    return nullptr;
  }
  InstallForkGate();
  if (PyModule_AddFunctions(module, kMultiprocessFunctions) < 0 || !AddObserveTypes(module) ||
      !AddEngineLogger(module) || !AddClientInstruments(module)) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
