// _observe_toy: a test-only CPython module whose one type, ToyMetrics, is built from the toy row
// (toy_observe_row.h) by the same code that builds vLLM-Omni's classes (src/python/observe_type.h),
// plus `record_in_cpp`, which carries the same row out through ObserveRecorder into a registry of
// its own and returns that registry's text, and `render`, the process registry's text.
#include <string>

#include "modelmetrics/metrics.h"
#include "observe_type.h"
#include "pipeline/observe_recorder.h"
#include "process_registry.h"
#include "toy_observe_row.h"

namespace modelmetrics::python {
namespace {

constexpr pipeline::Group kToyGroups[] = {pipeline::Group::kAudio};
constexpr observe_type::ClassDef kToyClass{
    "toy", "_observe_toy.ToyMetrics",
    "ToyMetrics(model_name, log_stats=True)\n--\n\nThe toy row as a method.", kToyGroups};

bool IsAudio(const pipeline::FamilySpec& spec) { return spec.group == pipeline::Group::kAudio; }

PyObject* Text(const std::string& text) {
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

// record_in_cpp(model, stage, replica, n_frames, reason=None): the row through the C++ recorder.
PyObject* RecordInCpp(PyObject*, PyObject* args) {
  const char* model = nullptr;
  int stage = 0, replica = 0;
  long long frames = 0;
  const char* reason = nullptr;
  if (!PyArg_ParseTuple(args, "siiL|z", &model, &stage, &replica, &frames, &reason)) {
    return nullptr;
  }
  Registry registry;
  pipeline::FamilySet<pipeline::OmniFamily> families(registry, IsAudio);
  const pipeline::ObserveRecorder recorder(families.table(), model, true);
  if (reason == nullptr) {
    recorder.Call<pipeline::toy::kToyRecordFrames>(stage, replica, frames);
  } else {
    recorder.Call<pipeline::toy::kToyRecordFrames>(stage, replica, frames,
                                                   std::string_view(reason));
  }
  std::string out;
  registry.Render(Format::kText, &out, RenderOptions{.created_series = false});
  return Text(out);
}

PyObject* Render(PyObject*, PyObject*) {
  std::string out;
  ProcessRegistry().Render(Format::kText, &out, RenderOptions{.created_series = false});
  return Text(out);
}

PyMethodDef kFunctions[] = {
    {"record_in_cpp", RecordInCpp, METH_VARARGS, "The toy row through ObserveRecorder."},
    {"render", Render, METH_NOARGS, "The process registry's text."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "_observe_toy",
                       nullptr,
                       -1,
                       kFunctions,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

}  // namespace
}  // namespace modelmetrics::python

PyMODINIT_FUNC PyInit__observe_toy() {
  using namespace modelmetrics::python;
  PyObject* module = PyModule_Create(&kModule);
  if (module == nullptr) return nullptr;
  if (!observe_type::AddType(
          module, kToyClass,
          observe_type::BuildMethods<modelmetrics::pipeline::toy::kToyMethods>())) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
