// Row tables as CPython types. See observe_type.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "observe_type.h"

#include <structmember.h>

#include <deque>
#include <memory>
#include <variant>
#include <vector>

namespace modelmetrics::python::observe_type {
namespace {

AnyHandle MakeHandle(size_t index, std::span<const std::string_view> values, bool eager) {
  AnyHandle h;  // inert while the family's group is not registered
  const pipeline::AnyFamily& family = RegisteredFamily(static_cast<OF>(index));
  // A new child of a shared family may wait for the segment's directory lock: without the GIL.
  const auto bind = [&](auto* f) {
    return WithoutGilIf(f->shared(), [&] { return eager ? f->Bind(values) : f->Labels(values); });
  };
  if (auto* const* f = std::get_if<Family<Counter>*>(&family)) h.counter = bind(*f);
  if (auto* const* f = std::get_if<Family<Gauge>*>(&family)) h.gauge = bind(*f);
  if (auto* const* f = std::get_if<Family<Histogram>*>(&family)) h.histogram = bind(*f);
  return h;
}

}  // namespace

// The handle of the child with label values (model, extra...): the object's cache, else
// Family::Labels (Family::Bind when `eager`: the child exists even while the registry is off).
const AnyHandle* MakeLazyHandle(MetricsObject* self, size_t index, std::string_view key,
                                std::span<const std::string_view> extra, bool eager) {
  // The child is made, perhaps without the GIL (MakeHandle), so nothing of this object is held
  // across it (a copy of the model; the cache slot read again after).
  const std::string model = *self->model;
  std::array<std::string_view, 5> values;
  values[0] = model;
  for (size_t i = 0; i < extra.size(); ++i) values[i + 1] = extra[i];
  const AnyHandle made = MakeHandle(index, std::span(values.data(), extra.size() + 1), eager);
  if (!made.live() && !eager) {
    // Refused (a label value over its bound, a full shared segment): this call records
    // nothing, and the next one tries again rather than a cached refusal.
    static const AnyHandle kInert;
    return &kInert;
  }
  HandleCache*& cache = (*self->caches)[index];
  if (cache == nullptr) cache = new HandleCache();
  return &cache->Insert(key, made);
}

PyObject* NotInitialised() {
  PyErr_SetString(PyExc_RuntimeError, "metrics object used before __init__(model_name, log_stats)");
  return nullptr;
}

namespace {

// A left-out parameter's default as Python would print it: the label text a row gives it, the
// value default for a value, else None.
std::string DefaultText(const ObserveMethod& m, size_t param) {
  bool value = false;
  for (size_t e = 0; e < m.effect_count(); ++e) {
    value = value || m.effects[e].value == static_cast<int>(param);
    for (const ObserveLabel& label : m.effects[e].labels) {
      if (label.from == LabelFrom::kArg && label.arg == param && !label.text.empty()) {
        return "'" + std::string(label.text) + "'";
      }
    }
  }
  return value ? std::to_string(static_cast<long long>(m.value_default)) : "None";
}

}  // namespace

const char* SignatureDoc(const ObserveMethod& m) {
  static auto* docs = new std::deque<std::string>();
  std::string doc = std::string(m.name) + "($self, /";
  for (size_t i = 0; i < m.param_count(); ++i) {
    doc += std::string(", ") + m.params[i];
    if (i >= m.required()) doc += "=" + DefaultText(m, i);
  }
  doc += std::string(")\n--\n\n") + m.doc;
  return docs->emplace_back(std::move(doc)).c_str();
}

namespace {

// "OmniPrometheusMetrics" of "modelmetrics.vllm_omni.metrics.prometheus.OmniPrometheusMetrics".
const char* ShortName(const ClassDef& cls) {
  const std::string_view full(cls.type_name);
  return cls.type_name + full.rfind('.') + 1;
}

// The type objects AddType made, with their classes (identity, not names: a type's name can be
// reassigned from Python). Written at module init only.
std::vector<std::pair<PyTypeObject*, const ClassDef*>>& Types() {
  static auto* types = new std::vector<std::pair<PyTypeObject*, const ClassDef*>>();
  return *types;
}

// The class a (sub)type was built from: walk to the _native base, which owns the layout.
const ClassDef* ClassOf(PyTypeObject* type) {
  for (PyTypeObject* t = type; t != nullptr; t = t->tp_base) {
    for (const auto& [made, cls] : Types()) {
      if (t == made) return cls;
    }
  }
  return nullptr;
}

PyObject* New(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<MetricsObject*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->log_stats = false;
  self->model_name = nullptr;
  self->model = new std::string();
  self->eager = new std::array<AnyHandle, kFamilies>();
  self->caches = new std::array<HandleCache*, kFamilies>();
  self->caches->fill(nullptr);
  self->weakrefs = nullptr;
  return reinterpret_cast<PyObject*>(self);
}

int InitBody(PyObject* obj, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  static const char* kKeywords[] = {"model_name", "log_stats", nullptr};
  PyObject* model = nullptr;
  int log_stats = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:__init__", const_cast<char**>(kKeywords),
                                   &model, &log_stats)) {
    return -1;
  }
  const ClassDef* cls = ClassOf(Py_TYPE(obj));
  if (cls == nullptr) {
    PyErr_SetString(PyExc_TypeError, "not a modelmetrics metrics type");
    return -1;
  }
  LabelValue model_text;  // str(model_name), as prometheus_client's labels() does
  if (!model_text.Set(model)) return -1;
  if (!RegisterGroups(cls->groups)) return -1;
  *self->model = std::string(model_text.view());
  Py_INCREF(model);
  Py_XSETREF(self->model_name, model);
  self->log_stats = log_stats != 0;
  // A re-init may change the model: drop handles cached for the old one.
  for (HandleCache*& cache : *self->caches) {
    delete cache;
    cache = nullptr;
  }
  // Eager children (§4.11) exist from construction, also with log_stats off; a row with
  // eager_values has one per value, kept in its cache.
  const auto rows = pipeline::OmniFamilies();
  for (size_t i = 0; i < rows.size(); ++i) {
    bool owned = false;
    for (Group g : cls->groups) owned = owned || rows[i].group == g;
    if (!owned || rows[i].bind != Bind::kEager) continue;
    for (std::string_view value : rows[i].eager_values) LazyHandle(self, i, {&value, 1}, true);
    const std::string_view values[] = {*self->model};
    if (rows[i].eager_values.empty()) (*self->eager)[i] = MakeHandle(i, values, true);
  }
  return 0;
}

int Init(PyObject* obj, PyObject* args, PyObject* kwargs) {
  PyObject* ok = Guarded([&]() -> PyObject* {
    if (InitBody(obj, args, kwargs) != 0) return nullptr;
    Py_RETURN_NONE;
  });
  if (ok == nullptr) return -1;
  Py_DECREF(ok);
  return 0;
}

int Traverse(PyObject* obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  Py_VISIT(self->model_name);
  Py_VISIT(Py_TYPE(obj));
  return 0;
}

int Clear(PyObject* obj) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  Py_CLEAR(self->model_name);
  return 0;
}

void Dealloc(PyObject* obj) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  PyTypeObject* type = Py_TYPE(obj);
  PyObject_GC_UnTrack(obj);
  if (self->weakrefs != nullptr) PyObject_ClearWeakRefs(obj);
  Clear(obj);
  if (self->caches != nullptr) {
    for (HandleCache* cache : *self->caches) delete cache;
  }
  delete self->caches;
  delete self->eager;
  delete self->model;
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* GetModelName(PyObject* obj, void*) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  if (self->model_name == nullptr) Py_RETURN_NONE;
  Py_INCREF(self->model_name);
  return self->model_name;
}

PyObject* GetLogStats(PyObject* obj, void*) {
  return PyBool_FromLong(reinterpret_cast<MetricsObject*>(obj)->log_stats);
}

int SetLogStats(PyObject* obj, PyObject* value, void*) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "log_stats cannot be deleted");
    return -1;
  }
  const int truthy = PyObject_IsTrue(value);
  if (truthy < 0) return -1;
  reinterpret_cast<MetricsObject*>(obj)->log_stats = truthy != 0;
  return 0;
}

PyGetSetDef kGetSet[] = {
    {"model_name", GetModelName, nullptr, "The model_name label value.", nullptr},
    {"log_stats", GetLogStats, SetLogStats, "False: every method returns at once.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef kMembers[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(MetricsObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

}  // namespace

bool AddType(PyObject* module, const ClassDef& cls, PyMethodDef* methods) {
  PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>(cls.doc)},
      {Py_tp_new, reinterpret_cast<void*>(New)},
      {Py_tp_init, reinterpret_cast<void*>(Init)},
      {Py_tp_dealloc, reinterpret_cast<void*>(Dealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(Traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(Clear)},
      {Py_tp_methods, methods},
      {Py_tp_getset, kGetSet},
      {Py_tp_members, kMembers},
      {0, nullptr},
  };
  PyType_Spec spec{cls.type_name, sizeof(MetricsObject), 0,
                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, slots};
  PyObject* type = PyType_FromModuleAndSpec(module, &spec, nullptr);
  if (type == nullptr) return false;
  Types().emplace_back(reinterpret_cast<PyTypeObject*>(type), &cls);  // module-owned
  if (PyModule_AddObject(module, ShortName(cls), type) == 0) return true;
  Py_DECREF(type);
  return false;
}

bool RegisterGroups(std::span<const Group> groups) {
  for (Group g : groups) {
    if (const base::Status registered = RegisterGroup(g); !registered.ok()) {
      PyErr_SetString(PyExc_ValueError, registered.message().c_str());
      return false;
    }
  }
  return true;
}

}  // namespace modelmetrics::python::observe_type
