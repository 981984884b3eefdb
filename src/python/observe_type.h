// How a table of observe rows (pipeline/observe_table.h) becomes a CPython type: one object
// layout (MetricsObject), one C entry point per row instantiated from templates, and the type
// slots. observe_types.cc builds vLLM-Omni's four classes with it; a test module builds a toy
// class the same way (tests/python/toy_observe_module.cc). Private to src/python.
//
// Contract. A class (ClassDef) is a type name, a doc and the catalog groups its constructor
// registers; BuildMethods<Table>() gives the PyMethodDef array of a constexpr row table and
// AddType adds the type to a module. The methods' behaviour is observe_types.h's contract.
//
// Thread-safety: as observe_types.h (methods run with the GIL held).
#ifndef MODELMETRICS_PYTHON_OBSERVE_TYPE_H_
#define MODELMETRICS_PYTHON_OBSERVE_TYPE_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "fork_gate.h"
#include "handle_cache.h"
#include "pipeline/catalog.h"
#include "pipeline/observe_table.h"
#include "process_registry.h"
#include "py_args.h"

namespace modelmetrics::python::observe_type {

using pipeline::Bind;
using pipeline::Group;
using pipeline::Kind;
using OF = pipeline::OmniFamily;

constexpr size_t Index(OF family) { return static_cast<size_t>(family); }

constexpr size_t kFamilies = 64;  // >= OmniFamilies().size(), checked at module init

using pipeline::LabelFrom;
using pipeline::ObserveLabel;
using pipeline::ObserveMethod;
using pipeline::ObserveOp;
static_assert(pipeline::kMaxObserveParams <= kMaxParams);

struct MetricsObject {
  PyObject_HEAD bool log_stats;
  PyObject* model_name;  // the str given
  std::string* model;    // its UTF-8 text
  std::array<AnyHandle, kFamilies>* eager;
  std::array<HandleCache*, kFamilies>* caches;
  PyObject* weakrefs;
};

struct ClassDef {
  const char* key;        // its name for RegisterClassGroups (observe_types.h)
  const char* type_name;  // the module path and name Python shows
  const char* doc;
  std::span<const Group> groups;
};

// LazyHandle's miss: the child made and remembered under `key`.
const AnyHandle* MakeLazyHandle(MetricsObject* self, size_t index, std::string_view key,
                                std::span<const std::string_view> extra, bool eager);

// The handle of the child with label values (model, extra...): the object's cache, else
// Family::Labels (Family::Bind when `eager`: the child exists even while the registry is off).
// Inline: a hit is the hot path of every labelled method.
inline const AnyHandle* LazyHandle(MetricsObject* self, size_t index,
                                   std::span<const std::string_view> extra, bool eager = false) {
  const pipeline::ChildKey child_key({}, extra);
  const std::string_view key = child_key.view();
  if (HandleCache* cache = (*self->caches)[index]) {
    if (const AnyHandle* h = cache->Find(key)) return h;
  }
  return MakeLazyHandle(self, index, key, extra, eager);
}

// An object whose __init__ never ran (cls.__new__(cls), a subclass skipping super().__init__).
PyObject* NotInitialised();

// A label made by its rule, the rule's source a compile-time constant (each row instantiates only
// the branch it uses).
template <LabelFrom kFrom>
[[gnu::always_inline]] inline bool MakeLabel(const ObserveLabel& rule, PyObject* const* a,
                                             LabelValue* out) {
  PyObject* o = a[rule.arg];
  if constexpr (kFrom == LabelFrom::kNone || kFrom == LabelFrom::kConstant) {
    out->SetView(rule.text);
    return true;
  } else if constexpr (kFrom == LabelFrom::kArg) {
    if (o == nullptr) {  // left out: the row's default
      out->SetView(rule.text);
      return true;
    }
    return out->Set(o);
  } else if constexpr (kFrom == LabelFrom::kArgOrUnknown) {
    return out->SetOr(o, pipeline::kUnknownReason);
  } else if constexpr (kFrom == LabelFrom::kArgIntText) {
    PyRef as_int(PyNumber_Long(o));  // int(threshold_ms): truncates floats, parses strings
    return as_int && out->Set(as_int.get());
  } else if constexpr (kFrom == LabelFrom::kAbortReason) {
    if (!out->Set(o)) return false;
    out->SetView(pipeline::Bounded(out->view(), pipeline::kSpeechAbortReasons,
                                   pipeline::kSpeechAbortFallbackReason));
    return true;
  } else {
    static_assert(kFrom == LabelFrom::kBounded);
    // A non-str is never in upstream's set of str (an object whose str() matches included).
    // The str is compared in place, never copied, so any length is fine; one that cannot be
    // UTF-8 (lone surrogates) is in no set either.
    Py_ssize_t size = 0;
    const char* text = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &size) : nullptr;
    if (text == nullptr) PyErr_Clear();
    const std::string_view value =
        text != nullptr ? std::string_view(text, static_cast<size_t>(size)) : std::string_view();
    out->SetView(text != nullptr ? pipeline::Bounded(value, rule.allowed, rule.text) : rule.text);
    return true;
  }
}

// Counter amounts: exact non-negative ints take the integer path (exact past 2^53).
using Amount = pipeline::ObserveAmount;

inline bool ReadAmount(PyObject* o, Amount* out) {
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0 && !(v == -1 && PyErr_Occurred())) {
      out->value = static_cast<double>(v);
      out->integral = v >= 0;
      out->count = v >= 0 ? static_cast<uint64_t>(v) : 0;
      return true;
    }
    PyErr_Clear();
  }
  out->integral = false;
  return ToDouble(o, &out->value);
}

// An effect's value argument: `value_default` when left out; a counter's amount is exact for an
// int.
template <ObserveOp kOp>
[[gnu::always_inline]] inline bool ReadValue(const ObserveMethod& m,
                                             const pipeline::ObserveEffect& e, PyObject* o,
                                             Amount* amount) {
  if (o == nullptr) {
    amount->value = m.value_default;
    amount->count = static_cast<uint64_t>(m.value_default);
  } else if constexpr (kOp == ObserveOp::kAdd) {
    if (!ReadAmount(o, amount)) return false;
  } else {
    amount->integral = false;
    if (!ToDouble(o, &amount->value)) return false;
  }
  if (e.divisor != 1.0) {
    amount->value /= e.divisor;
    amount->integral = false;
  }
  return true;
}

// Where effect E's labels start among all the labels a row's effects make (E = effect_count():
// the total), at compile time, so a row without labels keeps none on the stack.
constexpr size_t FirstLabel(const ObserveMethod& m, size_t effect) {
  size_t n = 0;
  for (size_t i = 0; i < effect; ++i) n += m.effects[i].label_count();
  return n;
}

// The index among all a row's labels of an earlier label made by the same rule as effect E's
// label `l` (observe_duplex_append labels both its families by one outcome); -1 when none.
constexpr int SameLabelBefore(const ObserveMethod& m, size_t effect, size_t l) {
  const ObserveLabel& rule = m.effects[effect].labels[l];
  for (size_t e = 0; e < effect; ++e) {
    for (size_t k = 0; k < m.effects[e].label_count(); ++k) {
      const ObserveLabel& other = m.effects[e].labels[k];
      if (other.from == rule.from && other.arg == rule.arg && other.text == rule.text &&
          other.allowed.data() == rule.allowed.data() &&
          other.allowed.size() == rule.allowed.size()) {
        return static_cast<int>(FirstLabel(m, e) + k);
      }
    }
  }
  return -1;
}

// Effect E of row Table[I]: its value and labels read from the arguments into `amount` and
// `all` (every label of the row; E's start at FirstLabel); false with a Python exception when
// one cannot be read.
template <const auto& Table, size_t I, size_t E, size_t... L>
[[gnu::always_inline]] inline bool ReadEffect(PyObject* const* a, Amount* amount, LabelValue* all,
                                              std::index_sequence<L...>) {
  static constexpr const pipeline::ObserveEffect& e = Table[I].effects[E];
  if constexpr (e.value >= 0) {
    if (!ReadValue<e.op>(Table[I], e, a[static_cast<size_t>(e.value)], amount)) return false;
  }
  [[maybe_unused]] const auto one = [&]<size_t K>(std::integral_constant<size_t, K>) {
    LabelValue& out = all[FirstLabel(Table[I], E) + K];
    if constexpr (constexpr int same = SameLabelBefore(Table[I], E, K); same >= 0) {
      out.SetView(all[same].view());
      return true;
    } else {
      return MakeLabel<e.labels[K].from>(e.labels[K], a, &out);
    }
  };
  return (one(std::integral_constant<size_t, L>()) && ...);
}

// Effect E of row Table[I] recorded, unless its family's guard drops the value. The family's
// bind and guard are compile-time constants (catalog.h), so both fold away.
template <const auto& Table, size_t I, size_t E>
[[gnu::always_inline]] inline void RecordEffect(MetricsObject* self, Amount& amount,
                                                const LabelValue* labels) {
  static constexpr const pipeline::ObserveEffect& e = Table[I].effects[E];
  constexpr size_t kLabels = e.label_count();
  constexpr bool kEager = pipeline::FamilyBind(e.family) == Bind::kEager;
  if constexpr (e.value >= 0) {
    if (!pipeline::ApplyGuard(pipeline::FamilyGuard(e.family), amount.value)) return;
  }
  constexpr size_t index = Index(e.family);
  const AnyHandle* h;
  if constexpr (kLabels == 0 && kEager) {
    h = &(*self->eager)[index];
  } else {
    std::array<std::string_view, kLabels> views;
#pragma GCC unroll 4
    for (size_t l = 0; l < kLabels; ++l) views[l] = labels[l].view();
    h = LazyHandle(self, index, views, kEager);
  }
  constexpr Kind kKind = pipeline::FamilyKind(e.family);
  pipeline::RecordAmount(e, kKind, *h, amount);
}

// One entry point per row: the row is a constant, so its counts, ops and label rules fold away
// (a few ns per call). Every argument is read before anything is recorded.
template <const auto& Table, size_t I, size_t... E>
[[gnu::always_inline]] inline PyObject* MethodBody(MetricsObject* self, PyObject* const* args,
                                                   Py_ssize_t nargs, PyObject* kwnames,
                                                   std::index_sequence<E...>) {
  static constexpr const ObserveMethod& m = Table[I];
  constexpr size_t kParams = m.param_count();
  // The common case reads CPython's argument array in place: a copy would be one wide load of
  // pointers the interpreter has just stored one by one (a store-forwarding stall, ~5 ns).
  std::array<PyObject*, kMaxParams> bound;
  PyObject* const* a = args;
  if (static_cast<size_t>(nargs) != kParams || kwnames != nullptr) {
    if (!BindArgs(m.name, std::span(m.params.data(), kParams), m.required(), args, nargs, kwnames,
                  bound)) {
      return nullptr;
    }
    a = bound.data();
  }
  if (!self->log_stats) Py_RETURN_NONE;
  if (self->model_name == nullptr) return NotInitialised();
  std::array<Amount, sizeof...(E)> amounts;
  std::array<LabelValue, FirstLabel(m, sizeof...(E))> labels;
  if (!(ReadEffect<Table, I, E>(a, &amounts[E], labels.data(),
                                std::make_index_sequence<m.effects[E].label_count()>()) &&
        ...)) {
    return nullptr;
  }
  (RecordEffect<Table, I, E>(self, amounts[E], labels.data() + FirstLabel(m, E)), ...);
  Py_RETURN_NONE;
}

// The entry point: one function per row (the body and its exception guard inlined into it; an
// extra call level costs a few ns on the cheapest methods).
template <const auto& Table, size_t I>
PyObject* Method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    return MethodBody<Table, I>(reinterpret_cast<MetricsObject*>(self), args, nargs, kwnames,
                                std::make_index_sequence<Table[I].effect_count()>());
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// "name($self, /, a, b=1)\n--\n\ndoc": the text signature inspect.signature() reads, then the
// row's doc. Kept for the process (PyMethodDef points at it).
const char* SignatureDoc(const ObserveMethod& m);

template <const auto& Table, size_t... I>
auto MethodDefs(std::index_sequence<I...>) {
  return std::array<PyMethodDef, sizeof...(I)>{
      PyMethodDef{Table[I].name, AsCFunction(&Method<Table, I>), METH_FASTCALL | METH_KEYWORDS,
                  SignatureDoc(Table[I])}...};
}

template <const auto& Table>
PyMethodDef* BuildMethods() {
  constexpr size_t n = std::size(Table);
  static std::array<PyMethodDef, n + 1> defs{};
  const auto generated = MethodDefs<Table>(std::make_index_sequence<n>());
  for (size_t i = 0; i < n; ++i) defs[i] = generated[i];
  defs[n] = PyMethodDef{nullptr, nullptr, 0, nullptr};
  return defs.data();
}

// Adds the type `cls` with `methods` to `module`; false with a Python exception set.
bool AddType(PyObject* module, const ClassDef& cls, PyMethodDef* methods);

// Registers the catalog groups a class owns; false with a Python exception set on a registry
// collision.
bool RegisterGroups(std::span<const Group> groups);

}  // namespace modelmetrics::python::observe_type

#endif  // MODELMETRICS_PYTHON_OBSERVE_TYPE_H_
