// The process's shared segment and the module functions over it. See process_segment.h.
#include "process_segment.h"

#include <map>
#include <string>
#include <vector>

#include "fork_gate.h"
#include "py_args.h"

namespace modelmetrics::python {
namespace {

std::shared_ptr<SharedSegment>& Segment() {
  static auto* segment = new std::shared_ptr<SharedSegment>();  // never destroyed
  return *segment;
}

// Read-only views of other segments (a collector given another directory), by name; GIL-held.
std::map<std::string, std::shared_ptr<SharedSegment>>& Views() {
  static auto* views = new std::map<std::string, std::shared_ptr<SharedSegment>>();
  return *views;
}

void LeaveAtExit() {
  if (Segment()) Segment()->Leave();
}

// The segment called `name`: ours, or a read-only view (no slot, never created by reading it),
// opened again once the service it showed has ended. Null with an exception set.
std::shared_ptr<SharedSegment> Named(PyObject* name_obj) {
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name_obj, &size);
  if (text == nullptr) return nullptr;
  const std::string name(text, static_cast<size_t>(size));
  if (Segment() && Segment()->name() == name) return Segment();
  auto it = Views().find(name);
  if (it != Views().end() && !it->second->Removed()) return it->second;
  if (it != Views().end()) Views().erase(it);
  std::string error;
  std::shared_ptr<SharedSegment> view =
      SharedSegment::Attach({.name = name, .observe_only = true}, &error);
  if (view == nullptr) {
    PyErr_Format(PyExc_ValueError, "multiprocess segment '%s': %s", name.c_str(), error.c_str());
    return nullptr;
  }
  Views().emplace(name, view);
  return view;
}

PyObject* SegmentName(PyObject*, PyObject* args) {
  PyObject* directory = Py_None;
  if (!PyArg_ParseTuple(args, "|O:multiprocess_segment", &directory)) return nullptr;
  if (directory != Py_None) {
    PyRef path(PyOS_FSPath(directory));
    if (!path) return nullptr;
    const char* text = PyUnicode_Check(path.get()) ? PyUnicode_AsUTF8(path.get()) : nullptr;
    if (text == nullptr) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "directory must be a str path");
      return nullptr;
    }
    std::string error;
    const std::optional<std::string> name = RecordedSegmentName(text, false, &error);
    if (!name) {
      PyErr_Format(PyExc_ValueError, "multiprocess directory %s: %s", text, error.c_str());
      return nullptr;
    }
    return PyUnicode_FromStringAndSize(name->data(), static_cast<Py_ssize_t>(name->size()));
  }
  if (!Segment()) Py_RETURN_NONE;
  return PyUnicode_FromString(Segment()->name().c_str());
}

PyObject* RenderSegment(PyObject*, PyObject* args) {
  PyObject* name;
  int openmetrics = 0;
  if (!PyArg_ParseTuple(args, "U|p:multiprocess_render", &name, &openmetrics)) return nullptr;
  std::shared_ptr<SharedSegment> segment = Named(name);
  if (!segment) return nullptr;
  std::string out;
  bool failed = false;
  {
    WithoutGil released;
    try {
      out = segment->Render(openmetrics ? Format::kOpenMetrics : Format::kText);
    } catch (...) {  // memory: raised below, with the GIL
      failed = true;
    }
  }
  if (failed) return PyErr_NoMemory();
  return PyBytes_FromStringAndSize(out.data(), static_cast<Py_ssize_t>(out.size()));
}

PyObject* Floats(const std::vector<double>& values) {
  PyRef t(PyTuple_New(static_cast<Py_ssize_t>(values.size())));
  if (!t) return nullptr;
  for (size_t i = 0; i < values.size(); ++i) {
    PyObject* f = PyFloat_FromDouble(values[i]);
    if (f == nullptr) return nullptr;
    PyTuple_SET_ITEM(t.get(), static_cast<Py_ssize_t>(i), f);
  }
  return t.release();
}

PyObject* Child(const MergedFamily& family, const MergedChild& c) {
  if (family.type != MetricType::kHistogram) {
    return Py_BuildValue("(Nid)", StrTuple(c.label_values), c.pid, c.value);
  }
  std::vector<double> cumulative(c.buckets.size());
  double acc = 0;
  for (size_t b = 0; b < c.buckets.size(); ++b)
    cumulative[b] = acc += static_cast<double>(c.buckets[b]);
  return Py_BuildValue("(NNdd)", StrTuple(c.label_values), Floats(cumulative),
                       static_cast<double>(c.count), c.sum);
}

PyObject* TypeName(MetricType type) {
  return PyUnicode_FromString(type == MetricType::kCounter ? "counter"
                              : type == MetricType::kGauge ? "gauge"
                                                           : "histogram");
}

// [(name, type, help, labelnames, buckets, mode, children)]; children as
//   counters/gauges: (labelvalues, pid, value)   pid 0 unless the gauge's mode is all/liveall
//   histograms:      (labelvalues, cumulative_bucket_counts, count, sum)
PyObject* CollectSegment(PyObject*, PyObject* name) {
  std::shared_ptr<SharedSegment> segment = Named(name);
  if (!segment) return nullptr;
  std::vector<MergedFamily> families;
  bool failed = false;
  {
    WithoutGil released;
    try {
      families = segment->Collect();
    } catch (...) {
      failed = true;
    }
  }
  if (failed) return PyErr_NoMemory();
  PyRef out(PyList_New(0));
  if (!out) return nullptr;
  for (const MergedFamily& f : families) {
    if (f.children.empty()) continue;  // as MultiProcessCollector: no sample, no family
    PyRef children(PyList_New(static_cast<Py_ssize_t>(f.children.size())));
    if (!children) return nullptr;
    for (size_t i = 0; i < f.children.size(); ++i) {
      PyObject* child = Child(f, f.children[i]);
      if (child == nullptr) return nullptr;
      PyList_SET_ITEM(children.get(), static_cast<Py_ssize_t>(i), child);
    }
    const std::string_view mode = MultiprocessModeName(f.options.multiprocess_mode);
    PyRef row(Py_BuildValue("(s#Ns#NNs#N)", f.options.name.data(),
                            static_cast<Py_ssize_t>(f.options.name.size()), TypeName(f.type),
                            f.options.help.data(), static_cast<Py_ssize_t>(f.options.help.size()),
                            StrTuple(f.options.labels), Floats(f.options.buckets), mode.data(),
                            static_cast<Py_ssize_t>(mode.size()), children.release()));
    if (!row || PyList_Append(out.get(), row.get()) < 0) return nullptr;
  }
  return out.release();
}

PyObject* MarkDead(PyObject*, PyObject* args) {
  PyObject* name;
  int pid = 0;
  if (!PyArg_ParseTuple(args, "Ui:multiprocess_mark_dead", &name, &pid)) return nullptr;
  std::shared_ptr<SharedSegment> segment = Named(name);
  if (!segment) return nullptr;
  return PyLong_FromSize_t(segment->MarkProcessDead(pid));
}

PyObject* Stats(PyObject*, PyObject* name) {
  std::shared_ptr<SharedSegment> segment = Named(name);
  if (!segment) return nullptr;
  const SegmentStats s = segment->Stats();
  return Py_BuildValue("{s:I,s:I,s:I,s:I,s:K,s:K,s:i}", "slots_used", s.slots_used, "live", s.live,
                       "families", s.families, "series", s.series, "cell_words_used",
                       static_cast<unsigned long long>(s.cell_words_used), "cell_words_per_slot",
                       static_cast<unsigned long long>(s.cell_words_per_slot), "slot",
                       segment->slot());
}

}  // namespace

PyMethodDef kMultiprocessFunctions[] = {
    {"multiprocess_segment", SegmentName, METH_VARARGS,
     "multiprocess_segment(directory=None): the segment name for a directory, or this "
     "process's (None when it runs alone)."},
    {"multiprocess_render", RenderSegment, METH_VARARGS,
     "multiprocess_render(name, openmetrics=False) -> bytes: every process's values, merged."},
    {"multiprocess_collect", CollectSegment, METH_O,
     "multiprocess_collect(name) -> list: every process's values, merged, as rows."},
    {"multiprocess_mark_dead", MarkDead, METH_VARARGS,
     "multiprocess_mark_dead(name, pid) -> int: prometheus_client's mark_process_dead."},
    {"multiprocess_stats", Stats, METH_O, "multiprocess_stats(name) -> dict."},
    {nullptr, nullptr, 0, nullptr}};

bool AttachFromEnvironment() {
  std::string error;
  const std::optional<SegmentOptions> options = SegmentOptionsFromEnvironment(&error);
  if (!options) {
    if (error.empty()) return true;  // one process: nothing to attach
    PyErr_Format(PyExc_RuntimeError, "modelmetrics multiprocess mode: %s", error.c_str());
    return false;
  }
  if (Segment()) return true;
  Segment() = SharedSegment::Attach(*options, &error);
  if (!Segment()) {
    PyErr_Format(PyExc_RuntimeError,
                 "modelmetrics multiprocess mode: cannot attach the shared segment '%s' (named by "
                 "MODELMETRICS_MULTIPROC or PROMETHEUS_MULTIPROC_DIR): %s",
                 options->name.c_str(), error.c_str());
    return false;
  }
  Py_AtExit(LeaveAtExit);
  return true;
}

const std::shared_ptr<SharedSegment>& ProcessSegment() { return Segment(); }

}  // namespace modelmetrics::python
