// Argument handling for the extension's METH_FASTCALL | METH_KEYWORDS methods: positional and
// keyword arguments by upstream's parameter names, numbers as Python converts them, and label
// values as prometheus_client makes them (`str(value)`). Private to src/python.
//
// Contract. Every function here is called with the GIL held. On failure it returns false with a
// Python exception set (TypeError for a wrong argument count, an unknown keyword or a value
// float() rejects), so the caller returns nullptr and Python raises; nothing is recorded.
#ifndef MODELMETRICS_PYTHON_PY_ARGS_H_
#define MODELMETRICS_PYTHON_PY_ARGS_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <array>
#include <charconv>
#include <cstdint>
#include <exception>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "modelmetrics/metrics.h"

namespace modelmetrics::python {

// A strong reference, released on scope exit.
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(PyObject* o) : o_(o) {}
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyRef(PyRef&& other) noexcept : o_(other.o_) { other.o_ = nullptr; }
  PyRef& operator=(PyRef&& other) noexcept {
    Py_XDECREF(o_);
    o_ = other.o_;
    other.o_ = nullptr;
    return *this;
  }
  ~PyRef() { Py_XDECREF(o_); }
  PyObject* get() const { return o_; }
  PyObject* release() {
    PyObject* o = o_;
    o_ = nullptr;
    return o;
  }
  explicit operator bool() const { return o_ != nullptr; }

 private:
  PyObject* o_ = nullptr;
};

inline constexpr size_t kMaxParams = 6;

// A METH_FASTCALL / METH_KEYWORDS entry point as PyMethodDef stores it (through void(*)(), the
// cast GCC's -Wcast-function-type allows; CPython calls it with its real signature).
template <typename F>
PyCFunction AsCFunction(F* f) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

// Binds (args, nargs, kwnames) to `names` in order; out[i] is nullptr for an absent optional
// parameter. The first `required` parameters must be given.
inline bool BindArgs(const char* method, std::span<const char* const> names, size_t required,
                     PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                     std::array<PyObject*, kMaxParams>& out) {
  out.fill(nullptr);
  const size_t n = names.size();
  if (static_cast<size_t>(nargs) > n) {
    PyErr_Format(PyExc_TypeError, "%s() takes %zu positional arguments but %zd were given", method,
                 n, nargs);
    return false;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) out[static_cast<size_t>(i)] = args[i];
  if (kwnames != nullptr) {
    const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; ++k) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, k);
      size_t slot = n;
      for (size_t i = 0; i < n; ++i) {
        if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) {
          slot = i;
          break;
        }
      }
      if (slot == n) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", method, key);
        return false;
      }
      if (out[slot] != nullptr) {
        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", method,
                     names[slot]);
        return false;
      }
      out[slot] = args[nargs + k];
    }
  }
  for (size_t i = 0; i < required; ++i) {
    if (out[i] == nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", method, names[i]);
      return false;
    }
  }
  return true;
}

// float(value): exact floats and ints on the fast path; anything with __float__/__index__
// through PyFloat_AsDouble; otherwise TypeError (None, str, ...).
inline bool ToDouble(PyObject* o, double* out) {
  if (PyFloat_CheckExact(o)) {
    *out = PyFloat_AS_DOUBLE(o);
    return true;
  }
  if (PyLong_CheckExact(o)) {
    *out = PyLong_AsDouble(o);  // OverflowError beyond double's range
    return !(*out == -1.0 && PyErr_Occurred());
  }
  *out = PyFloat_AsDouble(o);
  return !(*out == -1.0 && PyErr_Occurred());
}

// A non-negative integer count from a double: NaN and negatives are 0, values beyond uint64's
// range saturate (a cast of those would be undefined behaviour).
inline uint64_t SaturatingCount(double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709551615.0) return UINT64_MAX;
  return static_cast<uint64_t>(v);
}

// The same for signed counts (num_cached_tokens may carry vLLM's -1 sentinel).
inline int64_t SaturatingInt(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// A label value as prometheus_client makes it: `str(value)`. Exact str is used in place, exact
// int is formatted here; anything else goes through PyObject_Str (kept alive by `holder`).
class LabelValue {
 public:
  bool Set(PyObject* o) {
    if (PyUnicode_CheckExact(o)) return FromStr(o);
    if (PyLong_CheckExact(o)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow == 0 && !(v == -1 && PyErr_Occurred())) {
        const auto r = std::to_chars(buf_, buf_ + sizeof(buf_), v);
        view_ = std::string_view(buf_, static_cast<size_t>(r.ptr - buf_));
        return true;
      }
      PyErr_Clear();
    }
    holder_ = PyRef(PyObject_Str(o));
    if (!holder_) return false;
    if (!PyUnicode_Check(holder_.get())) {  // a __str__ returning a non-str raises in str() too
      PyErr_SetString(PyExc_TypeError, "__str__ returned non-string");
      return false;
    }
    return FromStr(holder_.get());
  }
  // `value or "unknown"`: falsy values (None, "", 0, ...) become `fallback`.
  bool SetOr(PyObject* o, std::string_view fallback) {
    const int truthy = o == nullptr ? 0 : PyObject_IsTrue(o);
    if (truthy < 0) return false;
    if (truthy == 0) {
      view_ = fallback;
      return true;
    }
    return Set(o);
  }
  void SetView(std::string_view v) { view_ = v; }
  std::string_view view() const { return view_; }

 private:
  bool FromStr(PyObject* s) {
    // Refused before encoding: a 200 MiB str must not cost its UTF-8 copy first.
    if (static_cast<size_t>(PyUnicode_GET_LENGTH(s)) > kMaxLabelValueBytes) return TooLong(s);
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(s, &size);
    if (data == nullptr) {
      // Lone surrogates (a request-derived reason, say) have no UTF-8 form: write them as
      // \udxxx rather than raise into the caller's request path (prometheus_client would
      // accept them here and then fail every scrape).
      if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return false;
      PyErr_Clear();
      encoded_ = PyRef(PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace"));
      if (!encoded_) return false;
      view_ = std::string_view(PyBytes_AS_STRING(encoded_.get()),
                               static_cast<size_t>(PyBytes_GET_SIZE(encoded_.get())));
      return true;
    }
    if (static_cast<size_t>(size) > kMaxLabelValueBytes) return TooLong(s);
    view_ = std::string_view(data, static_cast<size_t>(size));
    return true;
  }
  // Sets ValueError for a label value over the bound (modelmetrics/metrics.h); returns false.
  static bool TooLong(PyObject* s) {
    PyErr_Format(PyExc_ValueError,
                 "a label value of %zd characters is over modelmetrics' %zu-byte bound on label "
                 "values",
                 PyUnicode_GET_LENGTH(s), kMaxLabelValueBytes);
    return false;
  }
  char buf_[24];
  std::string_view view_;
  PyRef holder_;   // str(o) of a non-str argument
  PyRef encoded_;  // the backslash-escaped UTF-8 of a string with lone surrogates
};

// An owned tuple copy of a sequence, so no Python code run while converting its items (a
// __float__ or __str__) can free them under us; nullptr with TypeError(`what`) otherwise.
inline PyRef AsTuple(PyObject* seq, const char* what) {
  PyRef t(PySequence_Tuple(seq));
  if (!t && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, what);
  }
  return t;
}

// Runs `body` (returning PyObject*), turning a C++ exception into a Python one: no C++ exception
// may unwind through CPython (it would abort the host process).
template <typename Body>
PyObject* Guarded(Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// A tuple of str from C++ strings (bytes that are not UTF-8, which the shared segment's records
// could hold, become U+FFFD); null with an exception set.
inline PyObject* StrTuple(const std::vector<std::string>& values) {
  PyRef t(PyTuple_New(static_cast<Py_ssize_t>(values.size())));
  if (!t) return nullptr;
  for (size_t i = 0; i < values.size(); ++i) {
    PyObject* s = PyUnicode_DecodeUTF8(values[i].data(), static_cast<Py_ssize_t>(values[i].size()),
                                       "replace");
    if (s == nullptr) return nullptr;
    PyTuple_SET_ITEM(t.get(), static_cast<Py_ssize_t>(i), s);
  }
  return t.release();
}

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_PY_ARGS_H_
