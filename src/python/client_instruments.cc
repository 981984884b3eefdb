// The prometheus_client-compatible instrument cores. See client_instruments.h for the contract.
#include "client_instruments.h"

#include <array>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "fork_gate.h"
#include "modelmetrics/metrics.h"
#include "process_segment.h"
#include "py_args.h"

namespace modelmetrics::python {
namespace {

using FamilyPtr = std::shared_ptr<metrics_internal::FamilyBase>;

enum class Kind : uint8_t { kCounter, kGauge, kHistogram };

struct CoreObject {
  PyObject_HEAD FamilyPtr* family;  // owned; null until _native_family / _native_bind
  Counter counter;                  // this object's series, by kind (inert otherwise)
  Gauge gauge;
  Histogram histogram;
  PyObject* metrics;     // a parent's children: {labelvalues tuple: child}
  PyObject* labelnames;  // a parent's label names, a tuple of str (the labels() fast path)
  Kind kind;
  bool observable;  // a child, or an unlabelled metric, once bound
  bool detached;    // removed from its family (the family keeps the series: another object
                    // bound to the same label values may still write to it)
};

PyTypeObject* g_core_type = nullptr;  // InstrumentCore, for render_instruments' type check
PyObject* g_slow_name = nullptr;      // "_labels_slow"
PyObject* g_exemplar_name = nullptr;  // "_set_exemplar"

CoreObject* Core(PyObject* o) { return reinterpret_cast<CoreObject*>(o); }

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kCounter:
      return "counter";
    case Kind::kGauge:
      return "gauge";
    default:
      return "histogram";
  }
}

MetricType TypeOf(Kind kind) {
  switch (kind) {
    case Kind::kCounter:
      return MetricType::kCounter;
    case Kind::kGauge:
      return MetricType::kGauge;
    default:
      return MetricType::kHistogram;
  }
}

// prometheus_client's _raise_if_not_observable().
PyObject* NotObservable(CoreObject* self) {
  PyErr_Format(PyExc_ValueError, "%s metric is missing label values", KindName(self->kind));
  return nullptr;
}

template <Kind K>
PyObject* New(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (obj == nullptr) return nullptr;
  CoreObject* self = Core(obj);
  new (&self->counter) Counter();
  new (&self->gauge) Gauge();
  new (&self->histogram) Histogram();
  self->kind = K;
  return obj;
}

int Traverse(PyObject* obj, visitproc visit, void* arg) {
  Py_VISIT(Core(obj)->metrics);
  Py_VISIT(Core(obj)->labelnames);
  Py_VISIT(Py_TYPE(obj));
  return 0;
}

int Clear(PyObject* obj) {
  Py_CLEAR(Core(obj)->metrics);
  Py_CLEAR(Core(obj)->labelnames);
  return 0;
}

void Dealloc(PyObject* obj) {
  CoreObject* self = Core(obj);
  PyTypeObject* type = Py_TYPE(obj);
  PyObject_GC_UnTrack(obj);
  Clear(obj);
  delete self->family;
  type->tp_free(obj);
  Py_DECREF(type);
}

// ---- native set-up, called by the Python classes -------------------------------------------

bool Strings(PyObject* seq, const char* what, std::vector<std::string>* out) {
  PyRef fast = AsTuple(seq, what);
  if (!fast) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fast.get()); ++i) {
    LabelValue v;
    if (!v.Set(PyTuple_GET_ITEM(fast.get(), i))) return false;
    out->emplace_back(v.view());
  }
  return true;
}

// _native_family(name, documentation, labelnames, bounds, mode="all"): this object's own family.
// `bounds` are the finite upper bounds of a histogram (+Inf implicit); `documentation` a str;
// `mode` a gauge's multiprocess_mode. In a shared segment the family is registered there.
PyObject* NativeFamily(PyObject* obj, PyObject* args) {
  CoreObject* self = Core(obj);
  PyObject *name, *doc, *labelnames, *bounds;
  const char* mode_name = "all";
  if (!PyArg_ParseTuple(args, "UUOO|s:_native_family", &name, &doc, &labelnames, &bounds,
                        &mode_name)) {
    return nullptr;
  }
  const std::optional<MultiprocessMode> mode = ParseMultiprocessMode(mode_name);
  if (!mode) {
    PyErr_Format(PyExc_ValueError, "Invalid multiprocess mode: %s", mode_name);
    return nullptr;
  }
  return Guarded([&]() -> PyObject* {
    FamilyOptions options;
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(name, &size);
    if (text == nullptr) return nullptr;
    options.name.assign(text, static_cast<size_t>(size));
    text = PyUnicode_AsUTF8AndSize(doc, &size);
    if (text == nullptr) return nullptr;
    options.help.assign(text, static_cast<size_t>(size));
    if (!Strings(labelnames, "labelnames must be a sequence", &options.labels)) return nullptr;
    if (!options.labels.empty()) {
      PyRef names = AsTuple(labelnames, "labelnames must be a sequence");
      if (!names) return nullptr;
      Py_XSETREF(self->labelnames, names.release());
    }
    if (bounds != Py_None) {
      PyRef fast = AsTuple(bounds, "buckets must be a sequence");
      if (!fast) return nullptr;
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fast.get()); ++i) {
        double b = 0;
        if (!ToDouble(PyTuple_GET_ITEM(fast.get(), i), &b)) return nullptr;
        options.buckets.push_back(b);
      }
    }
    options.multiprocess_mode = *mode;
    const bool parent = !options.labels.empty();
    const MetricType type = TypeOf(self->kind);
    FamilyPtr family;
    switch (self->kind) {
      case Kind::kCounter:
        family = std::make_shared<Family<Counter>>(std::move(options), type, true);
        break;
      case Kind::kGauge:
        family = std::make_shared<Family<Gauge>>(std::move(options), type, true);
        break;
      default:
        family = std::make_shared<Family<Histogram>>(std::move(options), type, true);
        break;
    }
    std::string error;
    const bool shared = ProcessSegment() != nullptr;
    // While a stopped process holds the segment's directory, Share() lets the family record in
    // this process and join later (a metric must never stop a server from starting).
    if (shared && !WithoutGilIf(true, [&] { return family->Share(ProcessSegment(), &error); })) {
      PyErr_Format(PyExc_ValueError, "%s: %s", family->options().name.c_str(), error.c_str());
      return nullptr;
    }
    PyObject* metrics = nullptr;
    if (parent && (metrics = PyDict_New()) == nullptr) return nullptr;
    delete self->family;
    self->family = new FamilyPtr(std::move(family));
    Py_XSETREF(self->metrics, metrics);
    Py_RETURN_NONE;
  });
}

// _native_bind(source, labelvalues, created): makes this object the child `labelvalues` of
// `source`'s family (source is the parent, or this object for an unlabelled metric).
PyObject* NativeBind(PyObject* obj, PyObject* args) {
  CoreObject* self = Core(obj);
  PyObject *source, *labelvalues;
  double created = 0;
  if (!PyArg_ParseTuple(args, "O!Od:_native_bind", g_core_type, &source, &labelvalues, &created)) {
    return nullptr;
  }
  CoreObject* from = Core(source);
  if (from->family == nullptr || from->kind != self->kind) {
    PyErr_SetString(PyExc_TypeError, "_native_bind: the source has no family of this kind");
    return nullptr;
  }
  PyRef fast = AsTuple(labelvalues, "labelvalues must be a sequence");
  if (!fast) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(fast.get());
  return Guarded([&]() -> PyObject* {
    std::vector<LabelValue> values(static_cast<size_t>(n));
    std::vector<std::string_view> views;
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!values[static_cast<size_t>(i)].Set(PyTuple_GET_ITEM(fast.get(), i))) return nullptr;
      views.push_back(values[static_cast<size_t>(i)].view());
    }
    FamilyPtr family = *from->family;  // a copy: `from` may be `self`
    metrics_internal::FamilyBase* base = family.get();
    // A new child of a shared family may wait for the segment's directory lock: without the GIL,
    // into locals (this object is assigned below, with it).
    const bool wait = base->shared();
    std::string why;  // a refusal's reason
    switch (self->kind) {
      case Kind::kCounter: {
        Counter made = WithoutGilIf(wait, [&] {
          return static_cast<Family<Counter>*>(base)->Labels(views, created, &why);
        });
        self->counter = made;
        break;
      }
      case Kind::kGauge: {
        Gauge made = WithoutGilIf(
            wait, [&] { return static_cast<Family<Gauge>*>(base)->Labels(views, created, &why); });
        self->gauge = made;
        break;
      }
      default: {
        Histogram made = WithoutGilIf(wait, [&] {
          return static_cast<Family<Histogram>*>(base)->Labels(views, created, &why);
        });
        self->histogram = made;
        break;
      }
    }
    const bool live = self->kind == Kind::kCounter ? self->counter.live()
                      : self->kind == Kind::kGauge ? self->gauge.live()
                                                   : self->histogram.live();
    if (!live) {  // a bounded label value, or a full shared segment
      PyErr_Format(
          PyExc_ValueError, "%s: %s", base->options().name.c_str(),
          why.empty() ? "label value over 4096 bytes or too many label sets" : why.c_str());
      return nullptr;
    }
    if (self->family != from->family) {
      delete self->family;
      self->family = new FamilyPtr(std::move(family));
    }
    self->observable = true;
    Py_RETURN_NONE;
  });
}

// _native_detach(labelvalues): removes this child from its family (remove(), clear()).
PyObject* NativeDetach(PyObject* obj, PyObject* labelvalues) {
  CoreObject* self = Core(obj);
  if (!self->observable || self->detached || self->family == nullptr) Py_RETURN_NONE;
  return Guarded([&]() -> PyObject* {
    std::vector<std::string> owned;
    if (!Strings(labelvalues, "labelvalues must be a sequence", &owned)) return nullptr;
    std::vector<std::string_view> views(owned.begin(), owned.end());
    metrics_internal::FamilyBase* family = self->family->get();
    switch (self->kind) {
      case Kind::kCounter:
        static_cast<Family<Counter>*>(family)->Remove(std::span<const std::string_view>(views));
        break;
      case Kind::kGauge:
        static_cast<Family<Gauge>*>(family)->Remove(std::span<const std::string_view>(views));
        break;
      default:
        static_cast<Family<Histogram>*>(family)->Remove(std::span<const std::string_view>(views));
        break;
    }
    self->detached = true;
    Py_RETURN_NONE;
  });
}

// _native_value(): counter/gauge -> float; histogram -> (per-bucket counts, sum).
PyObject* NativeValue(PyObject* obj, PyObject*) {
  CoreObject* self = Core(obj);
  if (!self->observable) return NotObservable(self);
  switch (self->kind) {
    case Kind::kCounter:
      return PyFloat_FromDouble(self->counter.Value());
    case Kind::kGauge:
      return PyFloat_FromDouble(self->gauge.Value());
    default:
      break;
  }
  return Guarded([&]() -> PyObject* {
    const Histogram::Snapshot snap = self->histogram.Read();
    PyRef buckets(PyList_New(static_cast<Py_ssize_t>(snap.buckets.size())));
    if (!buckets) return nullptr;
    for (size_t i = 0; i < snap.buckets.size(); ++i) {
      PyObject* f = PyFloat_FromDouble(static_cast<double>(snap.buckets[i]));
      if (f == nullptr) return nullptr;
      PyList_SET_ITEM(buckets.get(), static_cast<Py_ssize_t>(i), f);
    }
    return Py_BuildValue("(Nd)", buckets.release(), snap.sum);
  });
}

// ---- labels(): the cached-child fast path ----------------------------------------------------

PyObject* CallSlow(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return Guarded([&]() -> PyObject* {
    const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    std::vector<PyObject*> call(static_cast<size_t>(1 + nargs + nkw));
    call[0] = obj;
    for (Py_ssize_t i = 0; i < nargs + nkw; ++i) call[static_cast<size_t>(1 + i)] = args[i];
    return PyObject_VectorcallMethod(
        g_slow_name, call.data(), static_cast<size_t>(1 + nargs) | PY_VECTORCALL_ARGUMENTS_OFFSET,
        kwnames);
  });
}

// A label value as prometheus_client's labels() keys it: a str as is, an int or a float as its
// str() (what prometheus_client stores); null for any other type (the slow path then converts it,
// or raises) -- with an error set only when str() failed.
PyObject* KeyPart(PyObject* value) {
  if (PyUnicode_CheckExact(value)) return Py_NewRef(value);
  if (PyLong_CheckExact(value) || PyFloat_CheckExact(value)) return PyObject_Str(value);
  return nullptr;
}

// The argument passed for label `name` by keyword, or null.
PyObject* Keyword(PyObject* name, PyObject* const* values, PyObject* kwnames) {
  for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(kwnames); ++j) {
    PyObject* given = PyTuple_GET_ITEM(kwnames, j);
    if (given == name || PyUnicode_Compare(given, name) == 0) return values[j];
  }
  return nullptr;
}

// The existing child for labels() called with every label value, positionally or by keyword in
// any order, each a str, int or float; null (no error set) when this call is not such a one or the
// child does not exist yet: the slow path then decides, or raises prometheus_client's error.
PyObject* CachedChild(CoreObject* self, PyObject* const* args, Py_ssize_t nargs,
                      PyObject* kwnames) {
  if (self->metrics == nullptr || self->labelnames == nullptr) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(self->labelnames);
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  if ((nargs > 0 && nkw > 0) || nargs + nkw != n || n == 0) return nullptr;
  PyRef key(PyTuple_New(n));
  if (!key) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* value =
        nargs > 0 ? args[i] : Keyword(PyTuple_GET_ITEM(self->labelnames, i), args, kwnames);
    PyObject* part = value == nullptr ? nullptr : KeyPart(value);
    if (part == nullptr) return nullptr;
    PyTuple_SET_ITEM(key.get(), i, part);
  }
  PyObject* child = PyDict_GetItemWithError(self->metrics, key.get());
  return child == nullptr ? nullptr : Py_NewRef(child);
}

PyObject* Labels(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (PyObject* child = CachedChild(Core(obj), args, nargs, kwnames)) return child;
  if (PyErr_Occurred()) return nullptr;
  return CallSlow(obj, args, nargs, kwnames);
}

PyObject* GetMetrics(PyObject* obj, void*) {
  CoreObject* self = Core(obj);
  if (self->metrics == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "_metrics");
    return nullptr;
  }
  return Py_NewRef(self->metrics);
}

int SetMetrics(PyObject* obj, PyObject* value, void*) {
  if (value != nullptr && !PyDict_CheckExact(value)) {
    PyErr_SetString(PyExc_TypeError, "_metrics must be a dict");
    return -1;
  }
  Py_XSETREF(Core(obj)->metrics, Py_XNewRef(value));
  return 0;
}

// ---- hot methods -----------------------------------------------------------------------------

// Hands an exemplar to the Python class (validation and storage, prometheus_client's rules).
PyObject* Exemplar(PyObject* obj, PyObject* exemplar, PyObject* amount) {
  if (exemplar == nullptr || exemplar == Py_None) Py_RETURN_NONE;
  PyObject* call[] = {obj, exemplar, amount};
  return PyObject_VectorcallMethod(g_exemplar_name, call, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                   nullptr);
}

// Binds (amount[, exemplar]) with `amount` defaulting to 1.
bool Amount(const char* method, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
            size_t params, double* amount, std::array<PyObject*, kMaxParams>& bound) {
  static const char* const kNames[] = {"amount", "exemplar"};
  bound.fill(nullptr);
  if (nargs == 0 && kwnames == nullptr) return true;
  if (!BindArgs(method, std::span(kNames, params), 0, args, nargs, kwnames, bound)) return false;
  return bound[0] == nullptr || ToDouble(bound[0], amount);
}

PyObject* CounterInc(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  CoreObject* self = Core(obj);
  if (!self->observable) return NotObservable(self);
  if (nargs == 0 && kwnames == nullptr) {  // inc(): the common call
    self->counter.AddFloat(1.0);
    Py_RETURN_NONE;
  }
  double amount = 1;
  std::array<PyObject*, kMaxParams> bound;
  if (!Amount("inc", args, nargs, kwnames, 2, &amount, bound)) return nullptr;
  if (amount < 0) {
    PyErr_SetString(PyExc_ValueError, "Counters can only be incremented by non-negative amounts.");
    return nullptr;
  }
  self->counter.AddFloat(amount);
  if (bound[1] == nullptr) Py_RETURN_NONE;
  if (bound[0] != nullptr) return Exemplar(obj, bound[1], bound[0]);
  PyRef one(PyLong_FromLong(1));  // the default amount, as prometheus_client records it
  return one ? Exemplar(obj, bound[1], one.get()) : nullptr;
}

PyObject* GaugeAdd(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                   const char* method, double sign) {
  CoreObject* self = Core(obj);
  if (!self->observable) return NotObservable(self);
  double amount = 1;
  std::array<PyObject*, kMaxParams> bound;
  if (!Amount(method, args, nargs, kwnames, 1, &amount, bound)) return nullptr;
  self->gauge.Add(sign * amount);
  Py_RETURN_NONE;
}

PyObject* GaugeInc(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return GaugeAdd(obj, args, nargs, kwnames, "inc", 1);
}

PyObject* GaugeDec(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return GaugeAdd(obj, args, nargs, kwnames, "dec", -1);
}

// float(value), strings included, as Gauge.set converts.
bool AsFloatSlow(PyObject* o, double* out) {
  if (PyLong_CheckExact(o)) return ToDouble(o, out);
  PyRef f(PyNumber_Float(o));
  if (!f) return false;
  *out = PyFloat_AS_DOUBLE(f.get());
  return true;
}

inline bool AsFloat(PyObject* o, double* out) {
  if (PyFloat_CheckExact(o)) {
    *out = PyFloat_AS_DOUBLE(o);
    return true;
  }
  return AsFloatSlow(o, out);
}

PyObject* GaugeSet(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  CoreObject* self = Core(obj);
  if (!self->observable) return NotObservable(self);
  double value = 0;
  if (nargs == 1 && kwnames == nullptr) {
    if (!AsFloat(args[0], &value)) return nullptr;
    self->gauge.Set(value);
    Py_RETURN_NONE;
  }
  static const char* const kNames[] = {"value"};
  std::array<PyObject*, kMaxParams> bound;
  if (!BindArgs("set", kNames, 1, args, nargs, kwnames, bound) || !AsFloat(bound[0], &value)) {
    return nullptr;
  }
  self->gauge.Set(value);
  Py_RETURN_NONE;
}

// time.time() looked up at each call, so a test's mock.patch("time.time") applies as it does to
// prometheus_client.
bool WallTime(double* out) {
  PyRef time_module(PyImport_ImportModule("time"));
  if (!time_module) return false;
  PyRef now(PyObject_CallMethod(time_module.get(), "time", nullptr));
  return now && ToDouble(now.get(), out);
}

PyObject* GaugeSetToCurrentTime(PyObject* obj, PyObject*) {
  CoreObject* self = Core(obj);
  if (!self->observable) return NotObservable(self);
  double now = 0;
  if (!WallTime(&now)) return nullptr;
  self->gauge.Set(now);
  Py_RETURN_NONE;
}

PyObject* HistogramObserve(PyObject* obj, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames) {
  CoreObject* self = Core(obj);
  if (!self->observable) return NotObservable(self);
  double amount = 0;
  if (nargs == 1 && kwnames == nullptr) {
    if (!ToDouble(args[0], &amount)) return nullptr;
    self->histogram.ObserveFloat(amount);
    Py_RETURN_NONE;
  }
  static const char* const kNames[] = {"amount", "exemplar"};
  std::array<PyObject*, kMaxParams> bound;
  if (!BindArgs("observe", kNames, 1, args, nargs, kwnames, bound) ||
      !ToDouble(bound[0], &amount)) {
    return nullptr;
  }
  self->histogram.ObserveFloat(amount);
  return Exemplar(obj, bound[1], bound[0]);
}

constexpr int kFast = METH_FASTCALL | METH_KEYWORDS;

PyMethodDef kCoreMethods[] = {
    {"labels", AsCFunction(&Labels), kFast, "labels(*labelvalues, **labelkwargs): the child."},
    {"_native_family", NativeFamily, METH_VARARGS, nullptr},
    {"_native_bind", NativeBind, METH_VARARGS, nullptr},
    {"_native_detach", NativeDetach, METH_O, nullptr},
    {"_native_value", NativeValue, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef kCounterMethods[] = {
    {"inc", AsCFunction(&CounterInc), kFast,
     "inc(amount=1, exemplar=None): increment by a non-negative amount."},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef kGaugeMethods[] = {
    {"inc", AsCFunction(&GaugeInc), kFast, "inc(amount=1): increment."},
    {"dec", AsCFunction(&GaugeDec), kFast, "dec(amount=1): decrement."},
    {"set", AsCFunction(&GaugeSet), kFast, "set(value): set to float(value)."},
    {"set_to_current_time", GaugeSetToCurrentTime, METH_NOARGS,
     "set_to_current_time(): set to time.time()."},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef kHistogramMethods[] = {{"observe", AsCFunction(&HistogramObserve), kFast,
                                    "observe(amount, exemplar=None): one observation."},
                                   {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kGetSet[] = {
    {"_metrics", GetMetrics, SetMetrics, "A parent's children by label values.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

template <Kind K>
PyObject* MakeType(PyObject* module, const char* name, PyMethodDef* methods, PyObject* bases) {
  std::vector<PyType_Slot> slots = {
      {Py_tp_new, reinterpret_cast<void*>(New<K>)},
      {Py_tp_dealloc, reinterpret_cast<void*>(Dealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(Traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(Clear)},
      {Py_tp_methods, methods},
  };
  if (bases == nullptr) {  // the base type carries what the kinds share
    slots.push_back({Py_tp_getset, kGetSet});
  }
  slots.push_back({0, nullptr});
  PyType_Spec spec{name, sizeof(CoreObject), 0,
                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, slots.data()};
  return PyType_FromModuleAndSpec(module, &spec, bases);
}

const PyMethodDef* const kAllTables[] = {kCoreMethods, kCounterMethods, kGaugeMethods,
                                         kHistogramMethods};

bool IsOurs(const PyMethodDef* def) {
  for (const PyMethodDef* table : kAllTables) {
    for (const PyMethodDef* d = table; d->ml_name != nullptr; ++d) {
      if (d == def) return true;
    }
  }
  return false;
}

// A method descriptor of one of the core tables, or null.
const PyMethodDef* OurMethod(PyObject* attr) {
  if (!PyObject_TypeCheck(attr, &PyMethodDescr_Type)) return nullptr;
  const PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(attr)->d_method;
  return IsOurs(def) ? def : nullptr;
}

bool Add(PyObject* module, const char* attr, PyObject* type) {
  if (type == nullptr) return false;
  if (PyModule_AddObject(module, attr, type) == 0) return true;
  Py_DECREF(type);
  return false;
}

}  // namespace

bool AddClientInstruments(PyObject* module) {
  g_slow_name = PyUnicode_InternFromString("_labels_slow");
  g_exemplar_name = PyUnicode_InternFromString("_set_exemplar");
  if (g_slow_name == nullptr || g_exemplar_name == nullptr) return false;
  PyObject* core = MakeType<Kind::kCounter>(module, "modelmetrics._native.InstrumentCore",
                                            kCoreMethods, nullptr);
  if (core == nullptr) return false;
  g_core_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(core));
  if (!Add(module, "InstrumentCore", core)) return false;
  PyRef bases(PyTuple_Pack(1, reinterpret_cast<PyObject*>(g_core_type)));
  if (!bases) return false;
  return Add(module, "CounterCore",
             MakeType<Kind::kCounter>(module, "modelmetrics._native.CounterCore", kCounterMethods,
                                      bases.get())) &&
         Add(module, "GaugeCore",
             MakeType<Kind::kGauge>(module, "modelmetrics._native.GaugeCore", kGaugeMethods,
                                    bases.get())) &&
         Add(module, "HistogramCore",
             MakeType<Kind::kHistogram>(module, "modelmetrics._native.HistogramCore",
                                        kHistogramMethods, bases.get()));
}

PyObject* RebindMethods(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), g_core_type)) {
    PyErr_SetString(PyExc_TypeError, "rebind_methods: not an instrument class");
    return nullptr;
  }
  for (const PyMethodDef* table : kAllTables) {
    for (const PyMethodDef* def = table; def->ml_name != nullptr; ++def) {
      if (def->ml_name[0] == '_') continue;  // the set-up methods are not hot
      PyRef attr(PyObject_GetAttrString(cls, def->ml_name));
      if (!attr) {
        PyErr_Clear();  // not a method of this kind
        continue;
      }
      if (OurMethod(attr.get()) != def) continue;  // overridden in Python, or another kind's
      PyRef descr(
          PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls), const_cast<PyMethodDef*>(def)));
      if (!descr || PyObject_SetAttrString(cls, def->ml_name, descr.get()) < 0) return nullptr;
    }
  }
  Py_RETURN_NONE;
}

PyObject* RenderInstruments(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"cores", "openmetrics", "created", nullptr};
  PyObject* cores;
  int openmetrics = 0, created = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pp:render_instruments",
                                   const_cast<char**>(kKeywords), &cores, &openmetrics, &created)) {
    return nullptr;
  }
  PyRef fast = AsTuple(cores, "cores must be a sequence of instruments");
  if (!fast) return nullptr;
  std::vector<FamilyPtr> families;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fast.get()); ++i) {
    PyObject* o = PyTuple_GET_ITEM(fast.get(), i);
    if (!PyObject_TypeCheck(o, g_core_type) || Core(o)->family == nullptr) {
      PyErr_SetString(PyExc_TypeError, "render_instruments: not an initialised instrument");
      return nullptr;
    }
    try {
      families.push_back(*Core(o)->family);
    } catch (const std::bad_alloc&) {
      return PyErr_NoMemory();
    }
  }
  std::string out;
  bool failed = false;
  {
    WithoutGil released;  // the families are kept alive by `families`
    try {
      ExpositionWriter writer(&out, openmetrics ? Format::kOpenMetrics : Format::kText,
                              FloatStyle::kPython);
      for (const FamilyPtr& f : families) {
        f->Render(writer, RenderOptions{.created_series = created != 0});
      }
    } catch (...) {  // memory: raised below, with the GIL
      failed = true;
    }
  }
  if (failed) return PyErr_NoMemory();
  return PyBytes_FromStringAndSize(out.data(), static_cast<Py_ssize_t>(out.size()));
}

}  // namespace modelmetrics::python
